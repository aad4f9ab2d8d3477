#include "sim/model/transformer.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include <fmt/format.h>

namespace mpsim::model {

std::string_view to_string(Family f) noexcept {
  switch (f) {
    case Family::Gpt: return "gpt";
    case Family::Llama: return "llama";
    case Family::T5: return "t5";
    case Family::Bert: return "bert";
  }
  return "?";
}

std::string_view to_string(Activation a) noexcept {
  switch (a) {
    case Activation::Gelu: return "gelu";
    case Activation::Swiglu: return "swiglu";
    case Activation::SquaredRelu: return "squared-relu";
    case Activation::Relu: return "relu";
  }
  return "?";
}

std::string_view to_string(NormKind n) noexcept {
  switch (n) {
    case NormKind::LayerNorm: return "layernorm";
    case NormKind::RmsNorm: return "rmsnorm";
  }
  return "?";
}

std::string_view to_string(PositionKind p) noexcept {
  switch (p) {
    case PositionKind::Learned: return "learned";
    case PositionKind::Rotary: return "rotary";
    case PositionKind::Relative: return "relative";
  }
  return "?";
}

std::string_view to_string(RopeScalingKind k) noexcept {
  switch (k) {
    case RopeScalingKind::Llama3: return "llama3";
    case RopeScalingKind::Yarn: return "yarn";
  }
  return "?";
}

namespace {

/// A multiply-add is two floating-point operations (Megatron SC21, Appendix).
constexpr double kFlopsPerMac = 2.0;
/// Dropout masks are stored as one byte per element (Korthikanti et al. 2023, Section 4.1).
constexpr std::int64_t kMaskBytes = 1;
/// The cross-entropy loss keeps the logits in 32-bit floats (Korthikanti et al. 2023, Section 4.3).
constexpr std::int64_t kFp32Bytes = 4;
/// T5's relative attention uses 32 position buckets (Raffel et al. 2020, Section 2.1; Hugging Face
/// T5Config.relative_attention_num_buckets).
constexpr int kT5RelativeBuckets = 32;
/// BERT embeds two segments, sentence A and sentence B (Devlin et al. 2019, Section 3).
constexpr std::int64_t kBertTokenTypes = 2;
/// BERT's next-sentence classifier has two classes (Devlin et al. 2019, Section 3.1).
constexpr std::int64_t kNextSentenceClasses = 2;
/// GPT and BERT widen the MLP to four times the hidden size (Vaswani et al. 2017; GPT-3 Section 2.1).
constexpr std::int64_t kDefaultFfnMultiple = 4;
/// Megatron's tensor-parallel block all-reduces its output once after self-attention and once after the
/// MLP in forward (Shoeybi et al. 2019, Figure 3: the `g` operators); cross-attention adds a third.
constexpr int kAllreducesPerSelfAttentionBlock = 2;
/// The vocabulary-parallel embedding all-reduces its output once (Megatron VocabParallelEmbedding).
constexpr int kAllreducesEmbedding = 1;

/// Parameters, forward FLOPs and stashed bytes of a piece of a block, per sample.
struct Part {
  std::int64_t parameters = 0;
  double matmul_flops = 0;  ///< forward FLOPs of the weight matmuls
  double score_flops = 0;   ///< forward FLOPs of QKᵀ and scores·V
  ActivationFootprint stash;
  std::vector<Gemm> gemms;
  std::vector<AttentionCore> cores;
  std::vector<ModuleStash> recomputable;

  Part& operator+=(const Part& o) {
    gemms.insert(gemms.end(), o.gemms.begin(), o.gemms.end());
    recomputable.insert(recomputable.end(), o.recomputable.begin(), o.recomputable.end());
    cores.insert(cores.end(), o.cores.begin(), o.cores.end());
    parameters += o.parameters;
    matmul_flops += o.matmul_flops;
    score_flops += o.score_flops;
    stash.tp_replicated += o.stash.tp_replicated;
    stash.tp_sharded += o.stash.tp_sharded;
    stash.attention_scores += o.stash.attention_scores;
    stash.layer_input += o.stash.layer_input;
    return *this;
  }
};

/// Element sizes used in the footprints.
struct Sizes {
  std::int64_t element;  ///< dtype bytes
  std::int64_t mask;     ///< bytes per dropout-mask element; 0 without dropout
};

Bytes bytes(std::int64_t n) { return Bytes::bytes(n); }

std::int64_t norm_parameters(const TransformerShape& m) {
  return m.norm == NormKind::LayerNorm ? 2 * m.hidden : m.hidden;
}

/// What `layernorm` recomputation drops before a module that reads a pre-norm's output: that output,
/// the input of the module's column-parallel GEMMs (Megatron-Core recomputes the norm instead).
ModuleStash norm_output(const Sizes& z, std::int64_t tokens, std::int64_t hidden) {
  return {RecomputeModule::LayerNorm, bytes(z.element * tokens * hidden), {}, tokens * hidden, true, 0};
}

/// A norm over `tokens` tokens stashes its input.
Part norm(const TransformerShape& m, const Sizes& z, std::int64_t tokens) {
  Part p;
  p.parameters = norm_parameters(m);
  p.stash.tp_replicated = bytes(z.element * tokens * m.hidden);
  return p;
}

/// Attention of `q_tokens` queries over `kv_tokens` keys (self-attention when equal), with its output
/// projection and the dropout after it. Stash (Korthikanti Section 4.1): the projections' input, Q, K, V,
/// the softmax output, its dropout mask and output, the output projection's input, the dropout mask.
Part attention(const TransformerShape& m, const Sizes& z, std::int64_t q_tokens, std::int64_t kv_tokens, bool causal) {
  const std::int64_t h = m.hidden;
  const std::int64_t aw = m.attention_width();
  const std::int64_t kv = m.kv_width();
  Part p;
  if (q_tokens == kv_tokens) {
    p.gemms.push_back({q_tokens, h, aw + 2 * kv, TensorSplit::Columns, 1, 3, kv});  // fused Q, K and V projections
  } else {
    p.gemms.push_back({q_tokens, h, aw, TensorSplit::Columns});
    p.gemms.push_back({kv_tokens, h, 2 * kv, TensorSplit::Columns, 1, 2, kv});
  }
  p.gemms.push_back({q_tokens, aw, h, TensorSplit::Rows});
  p.cores.push_back({q_tokens, kv_tokens, m.heads, m.head_dim, causal, 0, m.kv_heads});
  p.parameters = h * aw + 2 * h * kv + aw * h + (m.biases ? aw + 2 * kv + h : 0);
  if (m.qk_norm) p.parameters += 2 * (m.norm == NormKind::LayerNorm ? 2 : 1) * m.head_dim;
  if (m.attention_sinks) p.parameters += m.heads;
  p.matmul_flops = kFlopsPerMac * (static_cast<double>(q_tokens) * static_cast<double>(h * aw) +
                                   static_cast<double>(kv_tokens) * static_cast<double>(2 * h * kv) +
                                   static_cast<double>(q_tokens) * static_cast<double>(aw * h));
  // QKᵀ and scores·V: q_tokens · kv_tokens · attention width multiply-adds each.
  p.score_flops = kFlopsPerMac * p.cores.back().score_macs_per_head() * static_cast<double>(m.heads);
  // The input of the Q projection (for self-attention also of K and V) and the mask of the output dropout.
  // A cross-attention's K/V input is the encoder output, shared by all decoder blocks and not counted here.
  p.stash.tp_replicated = bytes((z.element + z.mask) * q_tokens * h);
  p.stash.tp_sharded = bytes(z.element * (2 * q_tokens * aw + 2 * kv_tokens * kv));
  // Softmax output; with dropout also its mask and the dropped-out scores that multiply V.
  const std::int64_t per_score = z.mask > 0 ? 2 * z.element + z.mask : z.element;
  p.stash.attention_scores = bytes(per_score * m.heads * q_tokens * kv_tokens);
  if (q_tokens == kv_tokens) p.recomputable.push_back(norm_output(z, q_tokens, h));
  return p;
}

/// DeepSeek's multi-head latent attention over `tokens` tokens (self-attention), with its output
/// projection. The down-projections (to the query and key-value latents, and the shared rotary key)
/// are not split by tensor parallelism, the up-projections by columns, the output projection by rows
/// (Megatron-Core's MLASelfAttention). Stash: the inputs of the down-projections and of the two
/// latent norms (replicated), Q, K, V and the attention output (sharded), the scores.
Part latent_attention(const TransformerShape& m, const Sizes& z, std::int64_t tokens) {
  const MlaShape& a = *m.mla;
  const std::int64_t h = m.hidden;
  const std::int64_t q_width = m.heads * a.qk_head_dim();
  const std::int64_t v_width = m.heads * a.v_head_dim;
  const std::int64_t norm_width = m.norm == NormKind::LayerNorm ? 2 : 1;
  Part p;
  if (a.q_lora_rank > 0) {
    p.gemms.push_back({tokens, h, a.q_lora_rank, TensorSplit::None});
    p.gemms.push_back({tokens, a.q_lora_rank, q_width, TensorSplit::Columns});
    p.parameters += h * a.q_lora_rank + norm_width * a.q_lora_rank + a.q_lora_rank * q_width;
  } else {
    p.gemms.push_back({tokens, h, q_width, TensorSplit::Columns});
    p.parameters += h * q_width;
  }
  p.gemms.push_back({tokens, h, a.kv_lora_rank + a.qk_rope_head_dim, TensorSplit::None});
  p.gemms.push_back({tokens, a.kv_lora_rank, m.heads * (a.qk_nope_head_dim + a.v_head_dim), TensorSplit::Columns});
  p.gemms.push_back({tokens, v_width, h, TensorSplit::Rows});
  p.parameters += h * (a.kv_lora_rank + a.qk_rope_head_dim) + norm_width * a.kv_lora_rank +
                  a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim) + v_width * h;
  double macs = 0;
  for (const Gemm& g : p.gemms) macs += static_cast<double>(g.tokens) * static_cast<double>(g.in * g.out);
  p.matmul_flops = kFlopsPerMac * macs;
  p.cores.push_back({tokens, tokens, m.heads, a.qk_head_dim(), true, a.v_head_dim});
  p.score_flops = kFlopsPerMac * p.cores.back().score_macs_per_head() * static_cast<double>(m.heads);
  p.stash.tp_replicated = bytes(z.element * tokens * (h + a.q_lora_rank + a.kv_lora_rank) + z.mask * tokens * h);
  p.stash.tp_sharded = bytes(z.element * tokens * (2 * q_width + 2 * v_width));
  const std::int64_t per_score = z.mask > 0 ? 2 * z.element + z.mask : z.element;
  p.stash.attention_scores = bytes(per_score * m.heads * tokens * tokens);
  p.recomputable.push_back(norm_output(z, tokens, h));
  // `mla_up_proj`: the up-projected Q, K and V are dropped and the up-projections run again.
  const double up_macs = static_cast<double>(tokens) *
                         static_cast<double>((a.q_lora_rank > 0 ? a.q_lora_rank * q_width : 0) +
                                             a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim));
  p.recomputable.push_back({RecomputeModule::MlaUpProjection, {}, bytes(z.element * tokens * (2 * q_width + v_width)),
                            0, false, kFlopsPerMac * up_macs});
  return p;
}

/// An MLP of width `width` over `tokens` tokens, as `groups` experts when > 1 (the tokens spread
/// over them), with its biases when the model has them. Stash: the activation function's input(s)
/// and the last matmul's input (sharded).
Part mlp_matrices(const TransformerShape& m, const Sizes& z, std::int64_t tokens, std::int64_t width,
                  std::int64_t groups) {
  const std::int64_t h = m.hidden;
  const std::int64_t matrices = m.gated_mlp ? 3 : 2;
  Part p;
  p.parameters = groups * (matrices * h * width + (m.biases ? (matrices - 1) * width + h : 0));
  p.matmul_flops = kFlopsPerMac * static_cast<double>(tokens) * static_cast<double>(matrices * h * width);
  p.gemms.push_back({tokens, h, (matrices - 1) * width, TensorSplit::Columns, groups, matrices - 1, width});  // (gate and) up
  p.gemms.push_back({tokens, width, h, TensorSplit::Rows, groups});                      // down
  // Gated: gate and up projections (inputs of the gating) and the down projection's input.
  p.stash.tp_sharded = bytes(z.element * matrices * tokens * width);
  if (groups > 1) {
    // `moe_act`: the experts' activation output, the down projection's input.
    p.recomputable.push_back({RecomputeModule::MoeActivation, {}, bytes(z.element * tokens * width), tokens * width,
                              false, 0});
  }
  return p;
}

/// The MLP and its dropout. Stash: the first matmul's input and the dropout mask (replicated), the
/// activation function's input(s) and the last matmul's input (sharded).
Part mlp(const TransformerShape& m, const Sizes& z, std::int64_t tokens) {
  Part p = mlp_matrices(m, z, tokens, m.ffn, 1);
  // `mlp`: the intermediates are dropped (the input is the checkpoint's) and the MLP runs again.
  p.recomputable.push_back({RecomputeModule::Mlp, {}, p.stash.tp_sharded, tokens * m.ffn, false, p.matmul_flops});
  p.stash.tp_replicated = bytes((z.element + z.mask) * tokens * m.hidden);
  p.recomputable.push_back(norm_output(z, tokens, m.hidden));
  return p;
}

/// An MoE MLP (Megatron-Core's MoELayer): the router (a linear layer to the experts' logits, not
/// split), the routed experts (each token's top_k copies, one grouped GEMM per matrix) and the
/// shared experts (one MLP as wide as all of them, Megatron's SharedExpertMLP), with the dropout
/// after them. Stash: the router's and shared experts' input and the dropout mask (replicated); the
/// permuted tokens the experts read and their outputs the combine weighs, and each MLP's
/// intermediates (sharded: with tensor parallelism Megatron requires sequence parallelism, so each
/// rank routes its share of the tokens).
Part moe_mlp(const TransformerShape& m, const Sizes& z, std::int64_t tokens, RoutedExperts& routed,
             std::int64_t& expert_parameters) {
  const MoeShape& e = *m.moe;
  const std::int64_t h = m.hidden;
  const std::int64_t copies = tokens * e.top_k;
  Part p;
  p.parameters = h * e.experts + (e.router_bias ? e.experts : 0);
  p.matmul_flops = kFlopsPerMac * static_cast<double>(tokens) * static_cast<double>(h * e.experts);
  p.gemms.push_back({tokens, h, e.experts, TensorSplit::None});
  const Part experts = mlp_matrices(m, z, copies, e.expert_ffn, e.experts);
  expert_parameters = experts.parameters;
  p += experts;
  if (e.shared_experts > 0) {
    const std::int64_t width = e.shared_experts * e.shared_expert_ffn;
    const Part shared = mlp_matrices(m, z, tokens, width, 1);
    p += shared;
    // `shared_experts`: their intermediates are dropped and they run again.
    p.recomputable.push_back({RecomputeModule::SharedExperts, {}, shared.stash.tp_sharded, tokens * width, false,
                              shared.matmul_flops});
  }
  p.stash.tp_replicated = bytes((z.element + z.mask) * tokens * h);
  p.stash.tp_sharded += bytes(2 * z.element * copies * h);
  const Bytes routed_stash = experts.stash.tp_sharded + bytes(2 * z.element * copies * h);
  // `moe`: everything but the layer's input is dropped and the whole MoE layer runs again.
  p.recomputable.push_back({RecomputeModule::Moe, {}, p.stash.tp_sharded, copies * h + copies * e.expert_ffn, false,
                            p.matmul_flops});
  p.recomputable.push_back(norm_output(z, tokens, h));
  routed = {e.experts, e.top_k, tokens, h, routed_stash};
  return p;
}

Layer to_layer(std::string name, const Part& p, Bytes layer_input, Bytes output, int allreduces,
               RoutedExperts routed = {}, std::int64_t expert_parameters = 0) {
  Layer l;
  l.name = std::move(name);
  l.kind = LayerKind::Transformer;
  l.parameters = p.parameters;
  l.forward_flops = Flops::flop(p.matmul_flops + p.score_flops);
  l.backward_input_flops = Flops::flop(p.matmul_flops + 2 * p.score_flops);
  l.backward_weight_flops = Flops::flop(p.matmul_flops);
  l.stashed = p.stash;
  l.stashed.layer_input = layer_input;
  l.output_bytes = output;
  l.tensor_parallel_allreduces_forward = allreduces;
  l.gemms = p.gemms;
  l.attention = p.cores;
  l.routed = routed;
  l.expert_parameters = expert_parameters;
  l.recomputable = p.recomputable;
  return l;
}

/// One multi-token-prediction depth (Megatron-Core's MultiTokenPredictionLayer): enorm over the
/// embeddings of the tokens shifted by d + 1 and hnorm over the previous hidden states, eh_proj
/// (a column-parallel 2h to h linear without bias) over their concatenation, a block built as the
/// model's last one, and the final norm before the shared output head. The lookup reads a copy of the
/// embedding table that Megatron keeps on this layer's stage and trains beside the original.
Layer mtp_layer(const TransformerShape& m, const Sizes& z, int depth, const Part& block, Bytes input, Bytes output,
                RoutedExperts routed, std::int64_t expert_parameters) {
  const std::int64_t h = m.hidden;
  const std::int64_t s = m.seq_len;
  Part p = norm(m, z, s);  // enorm
  p += norm(m, z, s);      // hnorm
  Part projection;
  projection.parameters = 2 * h * h;
  projection.matmul_flops = kFlopsPerMac * static_cast<double>(s) * static_cast<double>(2 * h * h);
  projection.gemms.push_back({s, 2 * h, h, TensorSplit::Columns});
  projection.stash.tp_replicated = bytes(z.element * s * 2 * h);  // the concatenation it reads
  p += projection;
  p += block;
  p += norm(m, z, s);  // final_layernorm
  // The projection's output is gathered over the tensor ranks (and scattered again under sequence
  // parallelism): one collective of the output's size more than a block.
  Layer l = to_layer(fmt::format("mtp{}", depth), p, input, output, kAllreducesPerSelfAttentionBlock + 1, routed,
                     expert_parameters);
  l.tied_copy_parameters = m.vocab * h;
  l.parameters += l.tied_copy_parameters;
  return l;
}

/// A self-attention block (GPT, LLaMA, BERT, T5 encoder): norm, attention, norm, MLP. BERT places the
/// norms after the residual additions instead of before; what they store is the same.
Part self_attention_block(const TransformerShape& m, const Sizes& z, std::int64_t tokens, bool causal) {
  Part p = norm(m, z, tokens);
  p += attention(m, z, tokens, tokens, causal);
  p += norm(m, z, tokens);
  p += mlp(m, z, tokens);
  return p;
}

/// A T5 decoder block: norm, self-attention, norm, cross-attention over the encoder output, norm, MLP.
Part decoder_block(const TransformerShape& m, const Sizes& z) {
  Part p = norm(m, z, m.decoder_seq_len);
  p += attention(m, z, m.decoder_seq_len, m.decoder_seq_len, true);
  p += norm(m, z, m.decoder_seq_len);
  p += attention(m, z, m.decoder_seq_len, m.seq_len, false);
  p += norm(m, z, m.decoder_seq_len);
  p += mlp(m, z, m.decoder_seq_len);
  return p;
}

Layer embedding(const TransformerShape& m, const Sizes& z) {
  const std::int64_t h = m.hidden;
  Layer l;
  l.name = "embedding";
  l.kind = LayerKind::Embedding;
  l.parameters = m.vocab * h + m.max_positions * h + m.token_types * h;
  // A lookup: no matmul FLOPs. Stash: the dropout mask on the embeddings (Korthikanti Section 4.3); T5
  // embeds the decoder's tokens with the same table.
  const std::int64_t tokens = m.seq_len + m.decoder_seq_len;
  l.stashed.tp_replicated = bytes(z.mask * tokens * h);
  if (m.family == Family::Bert) {
    // BERT normalises the summed embeddings (post-LN), which stores the norm's input.
    l.parameters += norm_parameters(m);
    l.stashed.tp_replicated += bytes(z.element * m.seq_len * h);
  }
  l.output_bytes = bytes(z.element * m.seq_len * h);
  l.tensor_parallel_allreduces_forward = kAllreducesEmbedding;
  return l;
}

Layer output_head(const TransformerShape& m, const Sizes& z) {
  const std::int64_t h = m.hidden;
  const std::int64_t tokens = m.family == Family::T5 ? m.decoder_seq_len : m.seq_len;
  // With multi-token prediction the head computes logits and a loss for the main sequence and for
  // each depth's (Megatron-Core's process_mtp_loss reuses the output layer).
  const std::int64_t predicted = tokens * (1 + m.mtp_layers);
  Layer l;
  l.name = "output_head";
  l.kind = LayerKind::OutputHead;
  double flops = kFlopsPerMac * static_cast<double>(predicted) * static_cast<double>(h * m.vocab);  // logits
  l.gemms.push_back({predicted, h, m.vocab, TensorSplit::Columns});
  l.parameters = m.tied_embeddings ? 0 : m.vocab * h;
  // Korthikanti Section 4.3: the logits matmul's input, and the fp32 logits of the cross-entropy loss.
  std::int64_t replicated = z.element * predicted * h;
  if (m.family == Family::Bert) {
    // MLM head (Devlin et al. 2019; Hugging Face BertLMPredictionHead): dense h×h + GELU + LayerNorm,
    // then the tied decoder with its own bias. Its inputs: dense, GELU and norm inputs.
    l.parameters += h * h + h + norm_parameters(m) + m.vocab;
    flops += kFlopsPerMac * static_cast<double>(tokens) * static_cast<double>(h * h);
    l.gemms.push_back({tokens, h, h, TensorSplit::None});
    replicated += 3 * z.element * tokens * h;
    if (m.pooler) {
      // Pooler (dense h×h + tanh on the first token) and the next-sentence classifier.
      l.parameters += h * h + h + h * kNextSentenceClasses + kNextSentenceClasses;
      flops += kFlopsPerMac * static_cast<double>(h * h + h * kNextSentenceClasses);
    }
  } else {
    l.parameters += norm_parameters(m);  // final norm of the pre-LN stack
    replicated += z.element * tokens * h;
  }
  l.forward_flops = Flops::flop(flops);
  l.backward_input_flops = Flops::flop(flops);
  l.backward_weight_flops = Flops::flop(flops);
  l.stashed.tp_replicated = bytes(replicated);
  l.stashed.tp_sharded = bytes(kFp32Bytes * predicted * m.vocab);
  l.output_bytes = Bytes::bytes(0);  // the loss stays on the last stage
  return l;
}

}  // namespace

TransformerShape default_shape(Family family, int layers, std::int64_t hidden, std::int64_t heads,
                               std::int64_t seq_len, std::int64_t vocab) {
  TransformerShape s;
  s.family = family;
  s.layers = layers;
  s.hidden = hidden;
  s.heads = heads;
  s.kv_heads = heads;
  s.head_dim = heads > 0 ? hidden / heads : 0;
  s.ffn = kDefaultFfnMultiple * hidden;
  s.seq_len = seq_len;
  s.vocab = vocab;
  switch (family) {
    case Family::Gpt:
      s.max_positions = seq_len;
      break;
    case Family::Llama:
      s.ffn = 0;  // LLaMA's width is rounded from 8h/3 with per-model multipliers: it must be given
      s.norm = NormKind::RmsNorm;
      s.positions = PositionKind::Rotary;
      s.rotary_base = kDefaultRotaryBase;
      s.activation = Activation::Swiglu;
      s.gated_mlp = true;
      s.biases = false;
      s.tied_embeddings = false;
      s.dropout = false;
      break;
    case Family::T5:
      s.encoder_layers = layers;
      s.decoder_layers = layers;
      s.layers = 2 * layers;
      s.decoder_seq_len = seq_len;
      s.norm = NormKind::RmsNorm;
      s.positions = PositionKind::Relative;
      s.relative_buckets = kT5RelativeBuckets;
      s.activation = Activation::Relu;
      s.biases = false;
      break;
    case Family::Bert:
      s.max_positions = seq_len;
      s.token_types = kBertTokenTypes;
      s.pooler = true;
      break;
  }
  return s;
}

void set_positions(TransformerShape& s, PositionKind positions) {
  s.positions = positions;
  s.rotary_base = positions == PositionKind::Rotary ? (s.rotary_base > 0 ? s.rotary_base : kDefaultRotaryBase) : 0;
  if (positions != PositionKind::Rotary) s.rope_scaling.reset();
  s.max_positions = positions == PositionKind::Learned ? std::max(s.max_positions, s.seq_len) : 0;
  s.relative_buckets = positions == PositionKind::Relative ? kT5RelativeBuckets : 0;
}

std::string shape_error(const TransformerShape& s) {
  if (s.layers < 1) return "needs at least one layer";
  if (s.family == Family::T5) {
    if (s.encoder_layers < 1 || s.decoder_layers < 1) return "t5 needs encoder and decoder layers";
    if (s.encoder_layers + s.decoder_layers != s.layers) return "layers must equal encoder_layers + decoder_layers";
    if (s.decoder_seq_len < 1) return "t5 needs a decoder sequence length";
  } else {
    if (s.encoder_layers != 0 || s.decoder_layers != 0) return "only t5 has separate encoder and decoder layers";
    if (s.decoder_seq_len != 0) return "only t5 has a decoder sequence length";
  }
  if (s.hidden < 1) return "hidden must be positive";
  if (s.heads < 1) return "heads must be positive";
  if (s.head_dim < 1) return "head_dim must be positive";
  if (s.kv_heads < 1 || s.heads % s.kv_heads != 0) {
    return fmt::format("kv_heads ({}) must divide heads ({})", s.kv_heads, s.heads);
  }
  if (s.ffn < 1) return "ffn must be positive";
  if (s.seq_len < 1) return "seq_len must be positive";
  if (s.vocab < 1) return "vocab must be positive";
  if (s.positions == PositionKind::Learned && s.max_positions < s.seq_len) {
    return fmt::format("max_positions ({}) must be at least seq_len ({})", s.max_positions, s.seq_len);
  }
  if (s.positions != PositionKind::Learned && s.max_positions != 0) return "only learned positions have a table";
  if (s.positions == PositionKind::Relative && s.relative_buckets < 1) return "relative positions need buckets";
  if (s.positions != PositionKind::Relative && s.relative_buckets != 0) return "only relative positions have buckets";
  if (s.token_types < 0) return "token_types must not be negative";
  if (s.moe) {
    const MoeShape& e = *s.moe;
    if (s.family == Family::T5 || s.family == Family::Bert) return "moe blocks are for decoder-only families (gpt, llama)";
    if (e.experts < 1) return "moe.experts must be positive";
    if (e.top_k < 1 || e.top_k > e.experts) return fmt::format("moe.top_k ({}) must be 1 to experts ({})", e.top_k, e.experts);
    if (e.expert_ffn < 1) return "moe.expert_ffn must be positive";
    if (e.shared_experts < 0) return "moe.shared_experts must not be negative";
    if (e.shared_experts > 0 && e.shared_expert_ffn < 1) return "moe.shared_expert_ffn must be positive";
    if (e.dense_layers < 0 || e.dense_layers >= s.layers) {
      return fmt::format("moe.dense_layers ({}) must leave at least one of the {} blocks", e.dense_layers, s.layers);
    }
    if (e.frequency < 1) return "moe.frequency must be positive";
  }
  if (s.mtp_layers < 0) return "mtp_layers must not be negative";
  if (s.mtp_layers > 0 && (s.family == Family::T5 || s.family == Family::Bert)) {
    return "multi-token prediction is for decoder-only families (gpt, llama)";
  }
  if (s.mla) {
    const MlaShape& a = *s.mla;
    if (s.family == Family::T5 || s.family == Family::Bert) return "mla attention is for decoder-only families (gpt, llama)";
    if (a.q_lora_rank < 0) return "mla.q_lora_rank must not be negative";
    if (a.kv_lora_rank < 1) return "mla.kv_lora_rank must be positive";
    if (a.qk_nope_head_dim < 0 || a.qk_rope_head_dim < 0 || a.qk_head_dim() < 1) {
      return "mla.qk_nope_head_dim + qk_rope_head_dim must be positive";
    }
    if (a.v_head_dim < 1) return "mla.v_head_dim must be positive";
    if (s.head_dim != a.qk_head_dim()) return "with mla, head_dim is qk_nope_head_dim + qk_rope_head_dim";
  }
  return {};
}

Model make_transformer(const TransformerShape& shape, std::string name, int dtype_bytes) {
  assert(shape_error(shape).empty() && dtype_bytes >= 1);
  const Sizes z{dtype_bytes, shape.dropout ? kMaskBytes : 0};
  const std::int64_t h = shape.hidden;

  Model model;
  model.name = std::move(name);
  model.family = std::string(to_string(shape.family));
  model.shape = shape;
  model.dtype_bytes = dtype_bytes;
  model.layers.reserve(static_cast<std::size_t>(shape.layers + shape.mtp_layers) + 2);
  model.layers.push_back(embedding(shape, z));

  const std::int64_t relative_bias = static_cast<std::int64_t>(shape.relative_buckets) * shape.heads;
  if (shape.family == Family::T5) {
    const Bytes encoder_out = bytes(z.element * shape.seq_len * h);
    const Bytes decoder_out = bytes(z.element * shape.decoder_seq_len * h);
    for (int i = 0; i < shape.encoder_layers; ++i) {
      Part p = self_attention_block(shape, z, shape.seq_len, false);
      if (i == 0) p.parameters += relative_bias;
      if (i + 1 == shape.encoder_layers) p += norm(shape, z, shape.seq_len);  // the encoder's final norm
      model.layers.push_back(
          to_layer(fmt::format("encoder{}", i), p, encoder_out, encoder_out, kAllreducesPerSelfAttentionBlock));
    }
    for (int i = 0; i < shape.decoder_layers; ++i) {
      Part p = decoder_block(shape, z);
      if (i == 0) p.parameters += relative_bias;
      model.layers.push_back(
          to_layer(fmt::format("decoder{}", i), p, decoder_out, decoder_out, kAllreducesPerSelfAttentionBlock + 1));
    }
  } else {
    const Bytes out = bytes(z.element * shape.seq_len * h);
    const std::int64_t s = shape.seq_len;
    // GPT and LLaMA decode left to right (causal masks); BERT attends both ways.
    Part mixer = norm(shape, z, s);
    mixer += shape.mla ? latent_attention(shape, z, s) : attention(shape, z, s, s, shape.family != Family::Bert);
    mixer += norm(shape, z, s);
    Part dense = mixer;
    dense += mlp(shape, z, s);
    RoutedExperts routed;
    std::int64_t expert_parameters = 0;
    Part sparse = mixer;
    if (shape.moe) {
      sparse += moe_mlp(shape, z, s, routed, expert_parameters);
      routed.attention_gemms = static_cast<std::int64_t>(mixer.gemms.size());
    }
    for (int i = 0; i < shape.layers; ++i) {
      const std::string name = fmt::format("block{}", i);
      model.layers.push_back(shape.is_moe_block(i) ? to_layer(name, sparse, out, out, kAllreducesPerSelfAttentionBlock,
                                                              routed, expert_parameters)
                                                   : to_layer(name, dense, out, out, kAllreducesPerSelfAttentionBlock));
    }
    const bool last_is_moe = shape.is_moe_block(shape.layers - 1);
    for (int d = 0; d < shape.mtp_layers; ++d) {
      // Its output carries the main hidden states and those of every depth so far to the head.
      const Bytes carried = bytes(z.element * s * h * (d + 2));
      RoutedExperts mtp_routed = last_is_moe ? routed : RoutedExperts{};
      if (last_is_moe) ++mtp_routed.attention_gemms;  // the depth's eh_proj runs before its block
      model.layers.push_back(mtp_layer(shape, z, d, last_is_moe ? sparse : dense, out, carried, mtp_routed,
                                       last_is_moe ? expert_parameters : 0));
    }
  }
  model.layers.push_back(output_head(shape, z));
  return model;
}

}  // namespace mpsim::model
