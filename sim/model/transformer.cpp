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

  Part& operator+=(const Part& o) {
    gemms.insert(gemms.end(), o.gemms.begin(), o.gemms.end());
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
    p.gemms.push_back({q_tokens, h, aw + 2 * kv, TensorSplit::Columns});  // fused QKV projection
  } else {
    p.gemms.push_back({q_tokens, h, aw, TensorSplit::Columns});
    p.gemms.push_back({kv_tokens, h, 2 * kv, TensorSplit::Columns});
  }
  p.gemms.push_back({q_tokens, aw, h, TensorSplit::Rows});
  p.cores.push_back({q_tokens, kv_tokens, m.heads, m.head_dim, causal});
  p.parameters = h * aw + 2 * h * kv + aw * h + (m.biases ? aw + 2 * kv + h : 0);
  p.matmul_flops = kFlopsPerMac * (static_cast<double>(q_tokens) * static_cast<double>(h * aw) +
                                   static_cast<double>(kv_tokens) * static_cast<double>(2 * h * kv) +
                                   static_cast<double>(q_tokens) * static_cast<double>(aw * h));
  // QKᵀ and scores·V: q_tokens · kv_tokens · attention width multiply-adds each.
  p.score_flops = 2 * kFlopsPerMac * static_cast<double>(q_tokens) * static_cast<double>(kv_tokens) *
                  static_cast<double>(aw);
  // The input of the Q projection (for self-attention also of K and V) and the mask of the output dropout.
  // A cross-attention's K/V input is the encoder output, shared by all decoder blocks and not counted here.
  p.stash.tp_replicated = bytes((z.element + z.mask) * q_tokens * h);
  p.stash.tp_sharded = bytes(z.element * (2 * q_tokens * aw + 2 * kv_tokens * kv));
  // Softmax output; with dropout also its mask and the dropped-out scores that multiply V.
  const std::int64_t per_score = z.mask > 0 ? 2 * z.element + z.mask : z.element;
  p.stash.attention_scores = bytes(per_score * m.heads * q_tokens * kv_tokens);
  return p;
}

/// The MLP and its dropout. Stash: the first matmul's input and the dropout mask (replicated), the
/// activation function's input(s) and the last matmul's input (sharded).
Part mlp(const TransformerShape& m, const Sizes& z, std::int64_t tokens) {
  const std::int64_t h = m.hidden;
  const std::int64_t f = m.ffn;
  const std::int64_t matrices = m.gated_mlp ? 3 : 2;
  Part p;
  p.parameters = matrices * h * f + (m.biases ? (matrices - 1) * f + h : 0);
  p.matmul_flops = kFlopsPerMac * static_cast<double>(tokens) * static_cast<double>(matrices * h * f);
  p.gemms.push_back({tokens, h, (matrices - 1) * f, TensorSplit::Columns});  // up (and gate)
  p.gemms.push_back({tokens, f, h, TensorSplit::Rows});                      // down
  p.stash.tp_replicated = bytes((z.element + z.mask) * tokens * h);
  // Gated: gate and up projections (inputs of the gating) and the down projection's input.
  p.stash.tp_sharded = bytes(z.element * matrices * tokens * f);
  return p;
}

Layer to_layer(std::string name, const Part& p, Bytes layer_input, Bytes output, int allreduces) {
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
  Layer l;
  l.name = "output_head";
  l.kind = LayerKind::OutputHead;
  double flops = kFlopsPerMac * static_cast<double>(tokens) * static_cast<double>(h * m.vocab);  // logits
  l.gemms.push_back({tokens, h, m.vocab, TensorSplit::Columns});
  l.parameters = m.tied_embeddings ? 0 : m.vocab * h;
  // Korthikanti Section 4.3: the logits matmul's input, and the fp32 logits of the cross-entropy loss.
  std::int64_t replicated = z.element * tokens * h;
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
  l.stashed.tp_sharded = bytes(kFp32Bytes * tokens * m.vocab);
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
  model.layers.reserve(static_cast<std::size_t>(shape.layers) + 2);
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
    // GPT and LLaMA decode left to right (causal masks); BERT attends both ways.
    const Part p = self_attention_block(shape, z, shape.seq_len, shape.family != Family::Bert);
    for (int i = 0; i < shape.layers; ++i) {
      model.layers.push_back(to_layer(fmt::format("block{}", i), p, out, out, kAllreducesPerSelfAttentionBlock));
    }
  }
  model.layers.push_back(output_head(shape, z));
  return model;
}

}  // namespace mpsim::model
