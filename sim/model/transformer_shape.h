#pragma once
/// Hyperparameters of a transformer model, as papers and model cards give them.
#include <cstdint>
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

  [[nodiscard]] std::int64_t attention_width() const noexcept { return heads * head_dim; }
  [[nodiscard]] std::int64_t kv_width() const noexcept { return kv_heads * head_dim; }
};

}  // namespace mpsim::model
