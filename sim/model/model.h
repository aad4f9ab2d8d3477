#pragma once
/// The model a training step runs: an ordered list of layers with their cost and memory per sample.
///
/// Plain values: a Model is built by the transformer generator or the loader and is never changed
/// afterwards, so it can be shared read-only between planner threads.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/units.h"
#include "sim/model/optimizer.h"
#include "sim/model/recompute.h"
#include "sim/model/transformer_shape.h"

namespace mpsim::model {

enum class LayerKind : std::uint8_t {
  Embedding,    ///< token (and position) embeddings
  Transformer,  ///< one encoder or decoder block
  OutputHead,   ///< final norm, logits and loss
  Generic,      ///< anything listed by hand
};

/// "embedding", "transformer", "output_head", "generic": the words of the model file.
[[nodiscard]] std::string_view to_string(LayerKind k) noexcept;

/// Bytes a layer stores between its forward and backward pass for ONE sample (one sequence), split by
/// how tensor parallelism, sequence parallelism and recomputation act on them (Korthikanti et al. 2023,
/// Section 4). For a GPT block in 16-bit with dropout these are 10sh, 24sh, 5as² and 2sh.
struct ActivationFootprint {
  Bytes tp_replicated;     ///< whole on every tensor-parallel rank (norm inputs, dropout masks, inputs of
                           ///< the column-parallel matmuls); split by t only under sequence parallelism
  Bytes tp_sharded;        ///< split across tensor-parallel ranks (Q, K, V, MLP intermediates)
  Bytes attention_scores;  ///< softmax output, its dropout mask and output; split by t; dropped by
                           ///< selective recomputation
  Bytes layer_input;       ///< what full recomputation keeps: the layer's input
};

/// How Megatron's tensor parallelism splits a weight: by output columns (ColumnParallelLinear: QKV,
/// MLP up/gate, the vocabulary-parallel logits), by input rows (RowParallelLinear: attention output,
/// MLP down), or not at all.
enum class TensorSplit : std::uint8_t { None, Columns, Rows };

/// One weight matrix multiply of a layer's forward pass for one sample: [tokens x in] x [in x out].
/// The backward runs it twice: activation gradients [tokens x out] x [out x in] and weight gradients
/// [in x tokens] x [tokens x out].
/// `groups` > 1: that many independent GEMMs of [tokens/groups x in] x [in x out], one grouped
/// kernel (the routed experts: `tokens` is every token's top-k copies, spread evenly over the experts,
/// as uniform routing spreads them).
/// `matmuls` > 1: the GEMM fuses that many projections of the same input that a framework without the
/// fusion runs one after the other (TorchTitan's wq, wk, wv; w1 and w3): the first `out - (matmuls - 1)
/// x tail_out` columns, then `matmuls - 1` of `tail_out` columns each.
struct Gemm {
  std::int64_t tokens = 0;
  std::int64_t in = 0;
  std::int64_t out = 0;
  TensorSplit split = TensorSplit::None;
  std::int64_t groups = 1;
  std::int64_t matmuls = 1;
  std::int64_t tail_out = 0;
  /// Output columns of the `i`-th fused projection (from 0).
  [[nodiscard]] std::int64_t matmul_out(std::int64_t i) const noexcept {
    return i == 0 ? out - (matmuls - 1) * tail_out : tail_out;
  }
  friend bool operator==(const Gemm&, const Gemm&) = default;
};

/// The core of one attention (QK^T, softmax, scores x V) for one sample: what FlashAttention fuses.
struct AttentionCore {
  std::int64_t q_tokens = 0;
  std::int64_t kv_tokens = 0;
  std::int64_t heads = 0;     ///< query heads, split over tensor-parallel ranks
  std::int64_t head_dim = 0;  ///< of queries and keys
  bool causal = false;        ///< decoder self-attention: a kernel skips the masked half
  std::int64_t value_dim = 0;  ///< of values, when it differs from head_dim (MLA); 0: head_dim
  std::int64_t kv_heads = 0;   ///< key/value heads (grouped-query attention); 0: heads
  [[nodiscard]] std::int64_t values() const noexcept { return value_dim > 0 ? value_dim : head_dim; }
  /// Multiply-adds of QK^T and scores x V for one head of one sample: q x kv x (query-key + value width).
  [[nodiscard]] double score_macs_per_head() const noexcept {
    return static_cast<double>(q_tokens) * static_cast<double>(kv_tokens) * static_cast<double>(head_dim + values());
  }
  /// Elements of the keys and values of one sample: what context parallelism exchanges.
  [[nodiscard]] std::int64_t key_value_elements() const noexcept {
    return kv_tokens * (kv_heads > 0 ? kv_heads : heads) * (head_dim + values());
  }
  friend bool operator==(const AttentionCore&, const AttentionCore&) = default;
};

/// The routed experts of an MoE block, per sample: each of `tokens` tokens goes to `top_k` of the
/// `experts`, a vector of `hidden` elements each way (dispatch and combine).
struct RoutedExperts {
  std::int64_t experts = 0;  ///< 0: not an MoE block
  std::int64_t top_k = 0;
  std::int64_t tokens = 0;
  std::int64_t hidden = 0;
  /// Of the layer's stash (split across tensor ranks), what the routed token copies keep: the
  /// permuted tokens, the experts' intermediates and their outputs; it grows with a rank's load.
  Bytes stashed;
  /// The block's leading gemms that run before its MoE MLP (norms, attention and its projections;
  /// every attention core runs there too): the attention half of a combined 1F1B slot pair
  std::int64_t attention_gemms = 0;
  friend bool operator==(const RoutedExperts&, const RoutedExperts&) = default;
};

/// What one recomputable module of a layer keeps for ONE sample and costs to run again
/// (Megatron-Core's recompute_modules other than core_attn, which is the footprint's scores).
struct ModuleStash {
  RecomputeModule module = RecomputeModule::LayerNorm;
  Bytes tp_replicated;                   ///< dropped: whole on every tensor rank (split by t under SP)
  Bytes tp_sharded;                      ///< dropped: split across tensor ranks
  std::int64_t gemm_input_elements = 0;  ///< of the dropped, inputs of weight GEMMs (columns split as stashed_gemm_input_elements)
  bool gemm_input_replicated = true;     ///< whether those inputs are whole on every tensor rank (column-parallel GEMMs)
  double matmul_flops = 0;               ///< forward FLOPs of the module's weight matmuls, run again
  friend bool operator==(const ModuleStash&, const ModuleStash&) = default;
};

struct Layer {
  std::string name;
  LayerKind kind = LayerKind::Generic;
  std::int64_t parameters = 0;
  // FLOPs per sample (one sequence). Backward = backward_input (activation gradients) +
  // backward_weight (weight gradients), the split zero-bubble schedules use.
  Flops forward_flops;
  Flops backward_input_flops;
  Flops backward_weight_flops;
  ActivationFootprint stashed;  ///< per sample
  Bytes output_bytes;           ///< boundary activation per sample sent to the next layer or stage
  // Profiled durations per microbatch (of the plan's microbatch size, on one device); when present they
  // replace the FLOP-derived durations of that pass.
  std::optional<TimeNs> forward_time;
  std::optional<TimeNs> backward_input_time;
  std::optional<TimeNs> backward_weight_time;
  /// All-reduces of the layer's output size over the tensor-parallel group in one forward pass
  /// (Megatron: 2 per transformer block, 3 for a decoder block with cross-attention and for a
  /// multi-token-prediction layer, whose projection adds one, 1 for the vocabulary-parallel embedding,
  /// 0 otherwise). Backward performs the same number.
  int tensor_parallel_allreduces_forward = 0;
  /// The weight GEMMs and attention cores of the forward pass, when the layer was generated from a
  /// shape; the cost model times them by shape. Empty: the FLOP counts above are timed as one GEMM.
  std::vector<Gemm> gemms;
  std::vector<AttentionCore> attention;
  RoutedExperts routed;              ///< MoE blocks only
  std::int64_t expert_parameters = 0;  ///< of `parameters`, the routed experts' (expert parallelism shards them)
  /// Of `parameters`, a copy of another layer's that this layer's stage holds, trains and keeps equal
  /// (the embedding table Megatron builds beside the multi-token-prediction layers): counted on the
  /// stage, once in the model's total.
  std::int64_t tied_copy_parameters = 0;
  std::vector<ModuleStash> recomputable;  ///< per sample; generated blocks only

  [[nodiscard]] Flops backward_flops() const noexcept { return backward_input_flops + backward_weight_flops; }
  [[nodiscard]] Flops training_flops() const noexcept { return forward_flops + backward_flops(); }
};

/// Bytes a layer stashes for one microbatch of `micro_batch` samples on one tensor-parallel rank of
/// `tensor`, with or without sequence parallelism, under `recompute`:
///   None:      replicated (/t with SP) + sharded/t + scores/t
///   Selective: replicated (/t with SP) + sharded/t
///   Full:      layer_input (/t with SP, since Megatron then stores the sequence-sharded input)
/// Full recomputation applies to Transformer and Generic layers; Embedding and OutputHead layers are
/// not recomputed (Megatron checkpoints transformer layers only) and keep their Selective footprint.
/// Each split term is rounded up to a whole byte. Preconditions: micro_batch >= 1, tensor >= 1.
[[nodiscard]] Bytes stashed_activation_bytes(const Layer& layer, int micro_batch, int tensor, bool sequence_parallel,
                                             Recompute recompute) noexcept;

/// Elements of the weight GEMMs' inputs among what a layer stashes for one microbatch on one tensor
/// rank: a column-parallel GEMM's input is whole on every rank (split by t under sequence
/// parallelism), a row-parallel GEMM's input is split by t. Transformer Engine stashes them in FP8
/// when the GEMMs run in FP8, one byte each.
[[nodiscard]] std::int64_t stashed_gemm_input_elements(const Layer& layer, int micro_batch, int tensor,
                                                       bool sequence_parallel) noexcept;

/// What a split backward (the zero-bubble schedules' I, then W) keeps of a layer from its I until its W
/// for one microbatch on one tensor rank: each weight GEMM's input and its output's gradient, as the
/// weight-gradient GEMM reads them. Implementations hand both to a weight-gradient store at I (Qi et
/// al. 2023, Section 2; Transformer Engine's delayed wgrad keeps `inputmat_total`, the input after
/// sequence parallelism's all-gather, and `grad_output`); autograd frees the rest of the layer's stash
/// once I is through. A column-parallel GEMM's input is whole on every rank and its output's gradient
/// split by t; a row-parallel GEMM's input is split by t and its output's gradient whole (gathered under
/// sequence parallelism); an unsplit GEMM keeps both whole. GEMMs that read one input (Q, K, V of
/// cross-attention's query side, MLA's down projections) count it each time: an upper bound.
struct WeightGradientStore {
  std::int64_t input_elements = 0;
  std::int64_t output_gradient_elements = 0;
};
[[nodiscard]] WeightGradientStore weight_gradient_store(const Layer& layer, int micro_batch, int tensor) noexcept;

/// What selective recomputation of `modules` (other than core_attn) drops from one microbatch's
/// stash on one tensor rank, and runs again before the layer's backward. A module inside another
/// one chosen as well (moe_act or shared_experts inside moe) counts once.
struct ModuleRecomputation {
  Bytes dropped;                         ///< at the activations' dtype
  std::int64_t dropped_gemm_input_elements = 0;  ///< of those, GEMM inputs (FP8 GEMMs keep them in 1 byte)
  Flops matmul_flops;                    ///< weight matmuls run again
};
[[nodiscard]] ModuleRecomputation module_recomputation(const Layer& layer, int micro_batch, int tensor,
                                                       bool sequence_parallel, RecomputeModules modules) noexcept;

/// What TorchTitan's per-op selective checkpointing (Recompute::Op) keeps of a transformer block for
/// one microbatch on one tensor rank, and replays before its backward. The block's matmuls are counted
/// in forward order (a fused Gemm counts as its `matmuls` projections): the odd-numbered ones save their
/// output, the even-numbered ones are replayed. Attention kernels save their output and, in fp32, their
/// log-sum-exp per query and head. Under tensor parallelism with sequence parallelism the row-parallel
/// matmuls' reduce-scatters save their outputs (their all-reduces otherwise are replayed). A
/// column-parallel matmul's output is split by t, a row-parallel one's partial sum is whole.
struct OpCheckpoint {
  Bytes kept;         ///< the block's input and the saved outputs
  Bytes rebuilt;      ///< the block's whole stash (`full_stash`) less what the saved outputs hold of it
  Flops matmul_flops; ///< the replayed matmuls' forward
};
/// `full_stash`: what the block stashes without recomputation (stashed_activation_bytes under the
/// plan's attention kernel's rule). The saved outputs of column-parallel and unsplit matmuls and of the
/// attention kernels are counted as part of it (they are the next ops' inputs); the input too.
[[nodiscard]] OpCheckpoint op_checkpoint(const Layer& layer, int micro_batch, int tensor, bool sequence_parallel,
                                         int dtype_bytes, Bytes full_stash) noexcept;
/// Whether per-op checkpointing applies to the layer: a generated transformer block (TorchTitan wraps
/// its blocks); other layers keep their whole stash.
[[nodiscard]] bool takes_op_checkpoint(const Layer& layer) noexcept;

struct Model;

/// The recomputation rule that decides what a layer stashes: FlashAttention never stores the scores,
/// so without recomputation it keeps what selective recomputation keeps.
[[nodiscard]] constexpr Recompute stash_recompute(Recompute recompute, bool flash_attention) noexcept {
  return flash_attention && recompute == Recompute::None ? Recompute::Selective : recompute;
}
/// The recomputation that replays work before a layer's backward: under FlashAttention selective
/// recomputation has nothing left to replay (the kernel's own backward recomputes the scores).
[[nodiscard]] constexpr Recompute replayed_recompute(Recompute recompute, bool flash_attention) noexcept {
  return flash_attention && recompute == Recompute::Selective ? Recompute::None : recompute;
}

/// Whether full recomputation replays a layer of this kind: transformer blocks (and hand-listed
/// layers, which say what they keep); Megatron does not recompute the embedding or the output head.
[[nodiscard]] bool is_recomputed(LayerKind kind) noexcept;
/// FLOPs per sample that `recompute` runs again before the layer's backward: the whole forward of a
/// recomputed layer (full), or a transformer block's score matmuls (QK^T and scores x V of each of
/// its attention cores: 2 q kv (head_dim + value width) per head; 4 s^2 x attention width for
/// self-attention) (selective), or a block's even-numbered matmuls (op; op_checkpoint).
[[nodiscard]] Flops recomputed_flops(const Model& model, const Layer& layer, Recompute recompute) noexcept;

struct Model {
  std::string name;
  std::string family;  ///< "gpt", "llama", "t5", "bert", or a free word for hand-listed models
  std::optional<TransformerShape> shape;  ///< present when generated from hyperparameters
  int dtype_bytes = 2;  ///< bytes per parameter and activation element (bf16/fp16: 2, fp32: 4)
  std::vector<Layer> layers;
  /// A profiled model's: how far apart its profile's rounds were, (slowest - fastest) / median; the
  /// band around a prediction made from it (mpsim profile writes it).
  std::optional<double> profile_spread;
  /// A profiled model's: one optimizer step's measured time per parameter, in seconds, by optimizer
  /// (mpsim profile times Adam). The optimizer step's cost uses it instead of the optimizer's memory
  /// traffic at the GPU's memory bandwidth (engine::optimizer_step_time).
  std::map<Optimizer, double> optimizer_seconds_per_parameter;
  /// A profiled model's: the model it was profiled from (the hyperparameter form), which the executor
  /// trains when given this model (executed_model()). Same layers, in number and kind, as this one.
  std::shared_ptr<const Model> profiled_from;

  /// Sum of the layers' parameters (a tied output head, and a layer's tied copy, are counted once).
  [[nodiscard]] std::int64_t parameters() const noexcept;
  /// Parameters one token passes through: all but the routed experts it is not sent to (each MoE
  /// block's expert_parameters x top_k / experts of them count).
  [[nodiscard]] std::int64_t active_parameters() const noexcept;
  /// Forward + backward FLOPs of one sample through every layer, without recomputation.
  [[nodiscard]] Flops training_flops_per_sample() const noexcept;
  /// parameters() * dtype_bytes: the weights alone, without gradients or optimizer state.
  [[nodiscard]] Bytes parameter_bytes() const noexcept;
};

/// The model the executor trains for `model`: the one a profiled model was profiled from, else `model`
/// itself. Both have the same layers in number and kind, so a plan's partition cuts them alike.
[[nodiscard]] inline const Model& executed_model(const Model& model) noexcept {
  return model.profiled_from ? *model.profiled_from : model;
}

/// A run of consecutive layers that are identical except for their names (the blocks of a
/// transformer), for compact tables and for partitioners that exploit uniformity.
struct LayerRun {
  std::size_t first = 0;  ///< index of the first layer
  std::size_t count = 0;  ///< >= 1
};

/// The share of a layer one of `context` context-parallel ranks runs (Megatron's context parallelism
/// with causal load balancing: the sequence in 2 x context chunks, each rank two of them): FLOPs,
/// GEMM rows, routed tokens, stashed activations, output and profiled times divided by `context`
/// (rounded up), attention cores with 1/context of the queries against every key. Parameters stay.
[[nodiscard]] Layer context_share(const Layer& layer, int context);

/// Whether two layers cost the same: every field except the name.
[[nodiscard]] bool same_cost(const Layer& a, const Layer& b) noexcept;
/// Maximal runs of consecutive layers with the same cost, in order; they cover all layers. O(n).
[[nodiscard]] std::vector<LayerRun> identical_runs(const std::vector<Layer>& layers);

}  // namespace mpsim::model
