#pragma once
/// Hyperparameters of a transformer model, as papers and model cards give them.
#include <cstdint>
#include <optional>
#include <string_view>

namespace mpsim::model {

/// Which published architecture the blocks follow; it fixes the defaults of TransformerShape.
enum class Family : std::uint8_t {
  Gpt,    ///< decoder-only, pre-LayerNorm, GELU MLP, biases, learned positions, tied output head
  Llama,  ///< decoder-only, RMSNorm, SwiGLU MLP, no biases, rotary positions, untied output head
  T5,     ///< encoder-decoder, RMS-style norm, ReLU MLP, no biases, relative position bias
  Bert,   ///< encoder-only, post-LayerNorm, GELU MLP, learned positions and token types
};

enum class NormKind : std::uint8_t {
  LayerNorm,  ///< scale and shift: 2h parameters
  RmsNorm,    ///< scale only: h parameters (T5's LayerNorm is of this kind)
};

enum class PositionKind : std::uint8_t {
  Learned,   ///< a table of max_positions x hidden parameters in the embedding
  Rotary,    ///< RoPE: no parameters
  Relative,  ///< T5 relative position bias: buckets x heads parameters in the first block of each stack
};

/// The MLP's nonlinearity. SwiGLU is gated (a third matrix); squared ReLU (Nemotron, Primer) and GELU
/// are not. Nothing here counts its FLOPs (elementwise); it fixes the MLP's matrices.
enum class Activation : std::uint8_t { Gelu, Swiglu, SquaredRelu, Relu };

[[nodiscard]] std::string_view to_string(Family f) noexcept;
[[nodiscard]] std::string_view to_string(Activation a) noexcept;
[[nodiscard]] std::string_view to_string(NormKind n) noexcept;
[[nodiscard]] std::string_view to_string(PositionKind p) noexcept;

/// Mixture of experts (Shazeer et al. 2017; Megatron-Core's MoE layer): the MLP of an MoE block is a
/// router over `experts` routed experts, each an MLP of width `expert_ffn` (gated like the dense
/// one), of which every token uses `top_k`, plus `shared_experts` always-active experts of width
/// `shared_expert_ffn` each. The first `dense_layers` blocks keep the dense MLP; after them every
/// `frequency`-th block is MoE (Megatron's moe_layer_freq), counting from the first.
struct MoeShape {
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::int64_t expert_ffn = 0;
  std::int64_t shared_experts = 0;
  std::int64_t shared_expert_ffn = 0;  ///< per shared expert; expert_ffn unless the model says otherwise
  int dense_layers = 0;
  int frequency = 1;
  bool router_bias = false;  ///< the router's linear layer has a bias per expert (gpt-oss; DeepSeek-V3's
                             ///< load-balancing correction bias is counted the same way)
  friend bool operator==(const MoeShape&, const MoeShape&) = default;
};

/// DeepSeek's multi-head latent attention (DeepSeek-V2, Section 2.1): queries through a rank
/// `q_lora_rank` bottleneck (0: a plain projection), keys and values through a shared `kv_lora_rank`
/// latent plus a `qk_rope_head_dim` rotary key shared by all heads; per head, queries and keys have
/// qk_nope_head_dim + qk_rope_head_dim elements and values v_head_dim.
struct MlaShape {
  std::int64_t q_lora_rank = 0;
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_nope_head_dim = 0;
  std::int64_t qk_rope_head_dim = 0;
  std::int64_t v_head_dim = 0;
  [[nodiscard]] std::int64_t qk_head_dim() const noexcept { return qk_nope_head_dim + qk_rope_head_dim; }
  friend bool operator==(const MlaShape&, const MlaShape&) = default;
};

/// How a model rescales its rotary frequencies to run beyond its pre-training context (Hugging Face's
/// rope_scaling): Llama 3.1's frequency bands, or YaRN (Peng et al. 2023; DeepSeek-V3, Kimi K2,
/// gpt-oss). Like rotary_base, it costs nothing in the simulator and is carried to launch
/// configurations, whose defaults (none, or Megatron's YaRN factor 40 for latent attention) train
/// another model.
enum class RopeScalingKind : std::uint8_t { Llama3, Yarn };
[[nodiscard]] std::string_view to_string(RopeScalingKind k) noexcept;

struct RopeScaling {
  RopeScalingKind kind = RopeScalingKind::Llama3;
  double factor = 1.0;                                  ///< how many times the original context
  std::int64_t original_max_position_embeddings = 0;    ///< the pre-training context it extends
  double low_freq_factor = 1.0;                         ///< llama3 only
  double high_freq_factor = 4.0;                        ///< llama3 only
  double beta_fast = 32.0;                              ///< yarn only (its default)
  double beta_slow = 1.0;                               ///< yarn only (its default)
  double mscale = 1.0;                                  ///< yarn only: the attention temperature's scale
  double mscale_all_dim = 0.0;                          ///< yarn only: 0 leaves the temperature unscaled
  friend bool operator==(const RopeScaling&, const RopeScaling&) = default;
};

/// RoFormer's and LLaMA 1/2's RoPE base, and Megatron-LM's --rotary-base default.
inline constexpr std::int64_t kDefaultRotaryBase = 10'000;
/// PyTorch's LayerNorm default and Megatron-Core's norm_epsilon default.
inline constexpr double kDefaultNormEpsilon = 1e-5;

/// All widths are counts of elements; sequence lengths are tokens per sample.
/// `default_shape()` fills the family defaults; `shape_error()` states the preconditions of the generator.
struct TransformerShape {
  Family family = Family::Gpt;
  /// Blocks in all: for T5, encoder_layers + decoder_layers.
  int layers = 0;
  int encoder_layers = 0;  ///< T5 only; 0 otherwise
  int decoder_layers = 0;  ///< T5 only; 0 otherwise
  std::int64_t hidden = 0;    ///< model width h (T5's d_model)
  std::int64_t heads = 0;     ///< attention heads a
  std::int64_t kv_heads = 0;  ///< key/value heads; equal to heads unless grouped-query attention
  std::int64_t head_dim = 0;  ///< per-head width; hidden / heads unless the model says otherwise (T5-3B: 128)
  std::int64_t ffn = 0;       ///< MLP inner width (4h for GPT and BERT)
  std::int64_t seq_len = 0;   ///< tokens per sample (T5: of the encoder)
  std::int64_t decoder_seq_len = 0;  ///< T5 only: decoder tokens per sample; 0 otherwise
  std::int64_t vocab = 0;
  std::int64_t max_positions = 0;  ///< rows of the learned position table; 0 unless positions == Learned
  std::int64_t token_types = 0;    ///< BERT segment embeddings (2); 0 otherwise
  int relative_buckets = 0;        ///< T5 relative-position buckets (32); 0 otherwise
  bool tied_embeddings = true;     ///< the output head reuses the input embedding matrix
  Activation activation = Activation::Gelu;
  bool gated_mlp = false;          ///< three MLP matrices (SwiGLU/GEGLU) instead of two
  bool biases = true;              ///< linear layers carry biases
  bool dropout = true;             ///< dropout layers are active in training (they stash 1-byte masks)
  bool pooler = false;             ///< BERT pooler and next-sentence head
  NormKind norm = NormKind::LayerNorm;
  PositionKind positions = PositionKind::Learned;
  bool qk_norm = false;            ///< a norm over head_dim on queries and on keys (Qwen3; Megatron's qk_layernorm)
  bool attention_sinks = false;    ///< a learned sink logit per head (gpt-oss)
  /// RoPE's base (theta): launch configurations must carry it, since a framework's default (Megatron's
  /// 10000) silently trains another model. 0 unless positions == Rotary. Costs nothing in the simulator.
  std::int64_t rotary_base = 0;
  std::optional<RopeScaling> rope_scaling;  ///< none: the frequencies as trained (rotary positions only)
  /// The norms' epsilon, likewise only carried to launch configurations (Megatron's default 1e-5).
  double norm_epsilon = kDefaultNormEpsilon;
  std::optional<MoeShape> moe;     ///< MoE blocks; none: every block has the dense MLP
  std::optional<MlaShape> mla;     ///< latent attention instead of kv_heads x head_dim keys and values
  /// Multi-token prediction depths (DeepSeek-V3; Megatron-Core's mtp_num_layers): after the blocks,
  /// each depth normalises the hidden states and the embeddings of the tokens shifted by one more,
  /// projects their concatenation (2h to h), runs one more block like the last one and a final norm;
  /// the output head then computes logits and a loss for the main and every MTP sequence.
  int mtp_layers = 0;

  /// Whether block `i` (0-based) has the MoE MLP.
  [[nodiscard]] bool is_moe_block(int i) const noexcept {
    return moe && i >= moe->dense_layers && (i - moe->dense_layers) % moe->frequency == 0;
  }
  /// Query width: heads x head_dim (MLA: head_dim is its query-key head width).
  [[nodiscard]] std::int64_t attention_width() const noexcept { return heads * head_dim; }
  [[nodiscard]] std::int64_t kv_width() const noexcept { return kv_heads * head_dim; }
};

}  // namespace mpsim::model
