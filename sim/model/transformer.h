#pragma once
/// Transformer models from hyperparameters: pure functions, no I/O.
///
/// Counting conventions (per sample = one sequence of seq_len tokens):
///  - FLOPs are those of matrix multiplications, 2 per multiply-add, as Megatron counts them
///    (Narayanan et al. SC21, Eq. 3); norms, biases, activations and softmax are not counted.
///    A block's forward pass costs 2·s·(weights touched) + 4·s²·(attention width) for the
///    scores (QKᵀ and the weighted sum of V). Backward costs twice the forward pass: the
///    activation gradients (backward_input) redo every matmul once and the scores twice, the
///    weight gradients (backward_weight) redo the weight matmuls once.
///    For GPT with ffn = 4h a block costs 24sh² + 4s²h forward, and the logits 2shV, so one sample
///    trains for 72·l·s·h²·(1 + s/(6h) + V/(12hl)) FLOPs.
///  - Parameters are exact for the published checkpoints (GPT: 12h² + 13h per block).
///  - Activations follow Korthikanti et al. 2023, Section 4, generalised to the dtype, to grouped-query
///    attention, to gated MLPs and to models trained without dropout (no masks stored).
#include <cstdint>
#include <string>

#include "sim/model/model.h"
#include "sim/model/transformer_shape.h"

namespace mpsim::model {

/// A shape with the family's defaults: kv_heads = heads, head_dim = hidden / heads, ffn = 4·hidden
/// (0 for LLaMA, whose MLP width must be given), max_positions = seq_len for learned positions, and:
///   gpt:   LayerNorm, biases, GELU, learned positions, tied output head, dropout
///   llama: RMSNorm, no biases, SwiGLU, rotary positions, untied output head, no dropout
///   t5:    RMS-style norm, no biases, ReLU, 32 relative-position buckets, tied output head, dropout;
///          `layers` blocks in each stack (as Hugging Face's num_layers), decoder_seq_len = seq_len
///   bert:  post-LayerNorm, biases, GELU, learned positions, 2 token types, pooler, tied MLM head, dropout
[[nodiscard]] TransformerShape default_shape(Family family, int layers, std::int64_t hidden, std::int64_t heads,
                                             std::int64_t seq_len, std::int64_t vocab);

/// Switches the position scheme and keeps the shape consistent: a learned table of seq_len rows (unless
/// one is set already), 32 relative buckets, or neither.
void set_positions(TransformerShape& shape, PositionKind positions);

/// Why `shape` cannot be generated (the first violated precondition), or an empty string when it can.
[[nodiscard]] std::string shape_error(const TransformerShape& shape);

/// The model of `shape`: one Embedding layer, one Transformer layer per block (T5: the encoder's, then
/// the decoder's), one OutputHead. `dtype_bytes` sizes activations (2 for bf16/fp16, 4 for fp32).
/// Precondition: shape_error(shape) is empty and dtype_bytes >= 1.
///
/// Layer names: "embedding", "block<i>" (T5: "encoder<i>", "decoder<i>"), "output_head".
/// Where the parameters live: the embedding holds the token table, the position table (learned
/// positions), the token-type table and the embedding norm (BERT); each block holds its attention,
/// MLP and norms (T5: the first block of each stack also holds the relative-position bias, the last
/// encoder block the encoder's final norm); the output head holds the final norm, the output matrix
/// unless tied, and BERT's MLM transform, output bias, pooler and next-sentence classifier.
/// Output bytes are hidden·seq·dtype per block (for T5 decoder blocks the decoder's; the encoder output
/// a pipelined encoder-decoder also forwards is not included), and 0 for the output head (the loss).
[[nodiscard]] Model make_transformer(const TransformerShape& shape, std::string name, int dtype_bytes);

}  // namespace mpsim::model
