#pragma once
/// Passes: Program -> Program rewrites that add what a generator leaves out.
///
/// A generator emits compute ops; lower_comm() adds the point-to-point transfers its data
/// dependencies need, add_layer_collectives() the collectives inside the passes, and
/// add_gradient_sync() the data-parallel collectives and the optimizer step. All three are pure
/// and O(ops).
#include <algorithm>
#include <optional>
#include <vector>

#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/schedule/program.h"

namespace mpsim::schedule {

/// Inserts a Send/Recv pair for every data dependency between virtual stages on different ranks:
/// - before F of virtual stage vs > 0: RecvActivation from the rank of vs - 1;
/// - after F of vs < p*v - 1: SendActivation to the rank of vs + 1;
/// - before B or I of vs < p*v - 1: RecvGrad from the rank of vs + 1;
/// - after B or I of vs > 0: SendGrad to the rank of vs - 1.
/// An F&B pair receives before it what its forward and its backward need, and sends after it what
/// both produce. Every inserted op carries the microbatch and the local chunk of the compute op it belongs to
/// (so a Recv carries the receiving op's chunk) and `peer`, the other rank. A Send and its Recv are
/// matched by (kind pair, microbatch, virtual stages). With p = 1 consecutive virtual stages live on
/// the same rank and nothing is inserted. Send/Recv ops already in `program` are dropped first, so
/// the pass is idempotent.
[[nodiscard]] Program lower_comm(Program program);

/// Where a layer collective runs: as the plan's tensor overlap says (the tensor-parallel exchanges),
/// always beside the pass (ZeRO-3's parameter gathers, issued ahead of the layer as FSDP prefetches,
/// and its gradient reduce-scatters; context parallelism's p2p ring), or always blocking the compute
/// stream (MoE's token dispatch and combine, which the experts wait for; context parallelism's
/// all_gather and a2a exchanges, which the attention waits for).
enum class LayerCommPlacement : std::uint8_t { AsPlanned, Beside, Blocking };

/// Collectives inside one pass of a chunk's layers, per microbatch on one GPU: `count` collectives of
/// `bytes` over `group`.
struct LayerCollective {
  OpKind kind = OpKind::AllReduce;
  plan::AxisSet group = plan::Axis::Tensor;
  Bytes bytes;
  int count = 1;
  LayerCommPlacement placement = LayerCommPlacement::AsPlanned;
  friend bool operator==(const LayerCollective&, const LayerCollective&) = default;
};
/// A chunk's in-layer collectives by pass. The fused backward (B) and the input-gradient half (I)
/// carry `backward`; the weight-gradient half communicates nothing.
struct ChunkCollectives {
  std::vector<LayerCollective> forward;
  std::vector<LayerCollective> backward;
};

/// What the layers of each chunk communicate inside their passes ([rank][chunk]), as Megatron runs it:
/// a layer with k tensor-parallel all-reduces of its output (model::Layer) makes k all-reduces of
/// output x micro batch bytes over the tensor group in its forward and k in its backward; with
/// sequence parallelism each becomes an all-gather and a reduce-scatter of the same size. Full
/// recomputation runs the forward's collectives again before the backward's. Collectives of equal
/// kind and size in a chunk's layers merge into one with their count. No tensor-parallel ones when
/// tensor = 1.
/// Context parallelism (context > 1) splits every layer's tokens (model::context_share) and adds, per
/// attention core, as the plan's cp_comm_type says: with p2p, beside its passes (Megatron's ring
/// exchange, overlapped with the attention), an all-gather over the context group of the whole
/// sequence's keys and values before the forward, and before the backward an all-gather of them and a
/// reduce-scatter of their gradients; with all_gather, the same, blocking; with a2a (Ulysses),
/// blocking all-to-alls over the context group of the rank's queries, keys and values and of its
/// output, in the forward and again for their gradients in the backward.
/// ZeRO 3 with data x context > 1 adds, per layer with parameters, beside its passes (FSDP with
/// prefetch and resharding after the forward): an all-gather of its weights over the data group before the
/// forward and again before the backward (gathered_parameter_bytes per parameter), and a
/// reduce-scatter of its gradients (gradient_bytes_per_parameter) in the backward; routed experts
/// with replicas of their own (splits_expert_gradients) do the same for their shard over the
/// expert-data group.
/// Expert parallelism (expert > 1) adds, per MoE layer and pass, blocking: the token dispatch and
/// the combine, each an all-to-all over the expert group of the tokens' top-k copies the rank routes
/// (routed tokens x top_k x hidden x micro batch / tensor elements: each tensor rank routes its share
/// of the sequence, as Megatron requires sequence parallelism for tensor-parallel MoE), with, when
/// expert_tensor > 1, an all-gather of the dispatched tokens over the expert-tensor group after the
/// dispatch and a reduce-scatter before the combine.
[[nodiscard]] std::vector<std::vector<ChunkCollectives>> chunk_layer_collectives(const model::Model& model,
                                                                               const plan::Plan& plan);

/// Adds every chunk's in-layer collectives to the program, on the compute stream (overlap = false:
/// after the compute op, which the stream then waits for, as Megatron's blocking TP all-reduce) or
/// beside it (overlap = true: before the compute op, which ends no earlier than they do). Each op
/// carries the compute op's microbatch and chunk. An F&B pair runs both passes' collectives beside it,
/// whatever their placement: the overlap hides each pass's communication (its expert
/// all-to-alls included) under the other pass's compute, so the pair lasts max(F + B, communication).
/// O(ops).
/// Throws std::invalid_argument when `collectives` is not [stages][chunks].
[[nodiscard]] Program add_layer_collectives(Program program, const std::vector<std::vector<ChunkCollectives>>& collectives,
                                            bool overlap);

/// What add_gradient_sync() needs to know about the gradients and the data-parallel setup.
struct GradientSync {
  std::vector<std::vector<Bytes>> gradient_bytes;  ///< [rank][chunk]: gradient bytes per GPU of the rank
  /// [rank][chunk], or empty: the routed experts' gradient bytes, reduced over the expert-data group
  /// (splits_expert_gradients); their buckets follow the chunk's dense ones.
  std::vector<std::vector<Bytes>> expert_gradient_bytes;
  Bytes bucket_size = Bytes::mib(25);              ///< at most this much per collective (> 0)
  bool overlap = true;                             ///< issue a chunk's buckets as soon as its backward is done
  /// ZeRO >= 1: gather the updated parameters at the start of the stream, beside the forwards, as
  /// Megatron's --overlap-param-gather does in the next step's forward, instead of after the step.
  bool overlap_param_gather = false;
  /// Bytes per parameter of the weights ZeRO's all-gather moves (gathered_parameter_bytes) and of
  /// the gradients (gradient_bytes_per_parameter): each gather bucket is its gradient bucket scaled
  /// by parameter_bytes / gradient_bytes_per_parameter.
  int parameter_bytes = 2;
  int gradient_bytes_per_parameter = 4;
  int zero = 0;                ///< 0: all-reduce; >= 1: reduce-scatter, then all-gather the parameters
  plan::AxisSet data_group = plan::Axis::Data;  ///< the dense gradients' replicas (data x context with context parallelism),
                                                ///< or with HSDP the group ZeRO shards them over
  /// HSDP: the groups holding whole copies (DataReplica); each reduced shard is all-reduced over
  /// them, 1 / shard_ranks of a bucket. Empty: none.
  plan::AxisSet replica_group;
  int shard_ranks = 1;
  plan::AxisSet expert_group = plan::Axis::ExpertData;  ///< the routed experts' replicas (expert_replica_group)
  bool data_parallel = false;  ///< false: no collectives, only the optimizer step
};

/// The data-parallel sync add_gradient_sync() emits, in order: the gradient reduction before the
/// optimizer step (an all-reduce; a reduce-scatter with ZeRO >= 1) and, with ZeRO >= 1, the all-gather
/// of the updated parameters after it, all over `group`.
struct SyncCollectives {
  OpKind reduction = OpKind::AllReduce;
  std::optional<OpKind> after_step;
  plan::AxisSet group = plan::Axis::Data;
};
[[nodiscard]] SyncCollectives sync_collectives(int zero) noexcept;

/// Adds the gradient synchronization and the optimizer step to every stream.
/// When `data_parallel`, each rank reduces its gradients over `data_group`: an AllReduce
/// (zero = 0) or a ReduceScatter (zero >= 1) per bucket, a chunk's bytes split into
/// ceil(bytes / bucket_size) buckets, the last one smaller, chunks in reverse order (v-1 first,
/// as backward makes them ready). With `overlap`, a chunk's buckets follow that chunk's last
/// backward op (B or W) on the rank, after that op's in-layer collectives and the SendGrad it feeds
/// (so the transfer on the critical path is issued first); without, all buckets follow the last op of the stream. Then
/// OptimizerStep ends every stream (also without data parallelism), and with zero >= 1 an AllGather
/// of the updated parameters per bucket (its weights: parameter_bytes per parameter; chunk 0 first, as the next forward needs
/// them) follows it; with `overlap_param_gather` those all-gathers open the stream instead, so they
/// run beside the forward passes (the step is periodic: the gathers of this step's start stand for
/// the previous step's). Collectives carry the chunk whose tensors they move. With zero >= 3 the
/// layers' own gathers and reduce-scatters (chunk_layer_collectives) have done the sync: only the
/// optimizer step is added.
/// Throws std::invalid_argument when `data_parallel` and gradient_bytes is not [stages][chunks],
/// a size is negative, bucket_size <= 0, zero < 0 or a byte count per parameter <= 0.
[[nodiscard]] Program add_gradient_sync(Program program, const GradientSync& sync);

/// Whether the routed experts' gradients have replicas of their own (the expert-data group differs
/// from the data-parallel group): expert parallelism, or an expert-tensor degree other than tensor.
[[nodiscard]] constexpr bool splits_expert_gradients(const plan::Plan& plan) noexcept {
  return plan.degrees[plan::Axis::Expert] > 1 ||
         plan.degrees[plan::Axis::ExpertTensor] != plan.degrees[plan::Axis::Tensor];
}
/// Whether those gradients need a reduction of their own: split, and with more than one replica.
[[nodiscard]] inline bool reduces_expert_gradients(const plan::Plan& plan) noexcept {
  return splits_expert_gradients(plan) && (plan.expert_data() > 1 || plan::is_bidirectional(plan.schedule));
}
/// The mirrored pipeline rank that holds the same stages in a bidirectional schedule, as a group axis
/// (plan::Axis::PipelineMirror), or nothing.
[[nodiscard]] inline plan::AxisSet mirror_axis(const plan::Plan& plan) noexcept {
  return plan::is_bidirectional(plan.schedule) ? plan::AxisSet(plan::Axis::PipelineMirror) : plan::AxisSet{};
}
/// The group that holds replicas of the dense weights: data, and context when the plan splits the
/// sequence (context-parallel ranks compute gradients of the same weights), and the mirrored pipeline
/// rank in a bidirectional schedule (which keeps two copies of every stage).
[[nodiscard]] inline plan::AxisSet dense_replica_group(const plan::Plan& plan) noexcept {
  const plan::AxisSet data = plan.degrees[plan::Axis::Context] > 1 ? (plan::Axis::Data | plan::Axis::Context)
                                                                   : plan::AxisSet(plan::Axis::Data);
  return data | mirror_axis(plan);
}
/// The group that holds replicas of the routed experts when their gradients are split off
/// (splits_expert_gradients): expert-data, and the mirrored pipeline rank in a bidirectional schedule.
[[nodiscard]] inline plan::AxisSet expert_replica_group(const plan::Plan& plan) noexcept {
  return plan::AxisSet(plan::Axis::ExpertData) | mirror_axis(plan);
}

/// The group ZeRO shards the dense states over: their replicas, or with HSDP (shard_groups > 1) the
/// inner part of the data axis (x context).
[[nodiscard]] inline plan::AxisSet dense_shard_group(const plan::Plan& plan) noexcept {
  if (plan.degrees[plan::Axis::DataReplica] <= 1) return dense_replica_group(plan);
  return plan.degrees[plan::Axis::Context] > 1 ? (plan::Axis::DataShard | plan::Axis::Context)
                                               : plan::AxisSet(plan::Axis::DataShard);
}
/// Ranks in that group.
[[nodiscard]] inline int dense_shard_ranks(const plan::Plan& plan) noexcept {
  return plan.degrees[plan::Axis::Data] * plan.degrees[plan::Axis::Context] /
         std::max(1, plan.degrees[plan::Axis::DataReplica]);
}

/// Bytes of an fp32 gradient: Megatron-LM accumulates and reduces 16-bit models' gradients in fp32
/// (grad_reduce_in_fp32, forced on for bf16).
inline constexpr int kGradientBytesPerParameter = 4;

/// Bytes per parameter of the gradient buffer and its reduction: fp32 with `grad_reduce_in_fp32`,
/// else the model's dtype (Megatron-Core's DDP with grad_reduce_in_fp32 = false, as NeMo's and
/// Megatron-Bridge's performance recipes run). The simulator's memory and traffic, the planner's
/// bounds and the executor's buffers all use this one rule.
[[nodiscard]] constexpr int gradient_bytes_per_parameter(bool grad_reduce_in_fp32, int dtype_bytes) noexcept {
  return grad_reduce_in_fp32 ? kGradientBytesPerParameter : dtype_bytes;
}
/// Bytes per parameter ZeRO's all-gather moves: the model's dtype, or 1 with `fp8_param_gather`
/// (Megatron's --fp8-param-gather gathers the FP8 weights; the few 16-bit ones, embeddings and
/// norms, are counted at 1 byte too).
[[nodiscard]] constexpr int gathered_parameter_bytes(bool fp8_param_gather, int dtype_bytes) noexcept {
  return fp8_param_gather ? 1 : dtype_bytes;
}

/// [rank][chunk]: the gradient bytes one GPU of each pipeline rank holds for each of its chunks, in
/// gradient_bytes_per_parameter, split as the simulator's cost model splits them when the routed
/// experts' gradients have replicas of their own (splits_expert_gradients): `experts` holds each MoE
/// layer's expert parameters over expert x expert_tensor ranks, `dense` the rest over the tensor
/// ranks ((parameters - expert parameters) / tensor per layer). Otherwise `experts` is zero and
/// `dense` holds every layer's parameters (the experts' over expert x expert_tensor ranks). The
/// executor sizes its buckets from it.
struct ChunkGradientBytes {
  std::vector<std::vector<Bytes>> dense;
  std::vector<std::vector<Bytes>> experts;
};
[[nodiscard]] ChunkGradientBytes chunk_gradient_split(const model::Model& model, const plan::Plan& plan);

/// Megatron's default gradient bucket: max(40M, 1M x data-parallel size) parameters of the plan's
/// gradients (gradient_bytes_per_parameter).
[[nodiscard]] Bytes default_gradient_bucket(const plan::Plan& plan, int dtype_bytes) noexcept;

/// The compute order a plan runs: its schedule's generator (make_program), or Megatron-Core's
/// combined 1F1B (make_combined_1f1b) when it overlaps the expert all-to-alls (overlap_moe_expert_comm).
[[nodiscard]] Program compute_program(const plan::Plan& plan);

/// The Program a plan runs, as the simulator and the executor both build it: compute_program(),
/// lower_comm(), add_layer_collectives() with chunk_layer_collectives(model, plan) and the
/// plan's tensor-communication overlap, then add_gradient_sync() with `sync` (its `zero`,
/// `data_parallel`, parameter-gather overlap and byte sizes per parameter are taken from the plan).
/// `compute`, when given, is the compute order to run instead of the generator's (an imported schedule,
/// interop/formats/torch_csv.h), of the plan's shape.
[[nodiscard]] Program plan_program(const model::Model& model, const plan::Plan& plan, GradientSync sync,
                                   const Program* compute = nullptr);

}  // namespace mpsim::schedule
