#pragma once
/// What one pipeline rank's work costs: compute durations per (chunk, pass), bytes it sends,
/// gradients it reduces, and memory it holds. Computed once per simulation, O(layers).
///
/// Compute time of a pass on one tensor-parallel rank: its layers' weight GEMMs and attention cores
/// timed by shape (kernel_time.h: wave quantization, HBM roofline, FP8, FlashAttention) + the
/// memory-bound elementwise work (each activation the pass makes written and read once, at HBM
/// bandwidth). The tensor-parallel collectives inside the layers are not compute: they are ops of
/// the Program (schedule::chunk_layer_collectives) that the engine runs over the links;
/// `forward_comm` / `backward_comm` are their uncontended ring times, for the planner's bounds and
/// partitioner. The weight-gradient pass is GEMMs only. Recomputation is added to the
/// input-gradient pass. A profiled time in the model file replaces the derived one.
#include <algorithm>
#include <map>
#include <vector>

#include "sim/core/units.h"
#include "sim/engine/kernel_time.h"
#include "sim/model/model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan.h"
#include "sim/schedule/passes.h"
#include "sim/topology/cluster.h"
#include "sim/topology/route_table.h"

namespace mpsim::engine {
class SharedRoutes;
}

namespace mpsim::engine {

struct ChunkCost {
  TimeNs forward;
  TimeNs backward;          ///< fused: input + weight gradients, recomputation included
  TimeNs backward_input;    ///< zero-bubble split; recomputation goes here
  TimeNs backward_weight;
  /// The kernels of one microbatch's forward and backward through the chunk (recomputation
  /// included), by class: forward + backward is their total (less an offload stall, not a kernel).
  ClassTimes kernels;
  TimeNs forward_comm;      ///< the forward's tensor-parallel collectives, uncontended ring times
  TimeNs backward_comm;     ///< those of the backward (B or I), recomputed forward included
  Bytes activation_send;    ///< to the next virtual stage, per TP rank (grad back is the same size)
  Bytes gradient_bytes;     ///< gradients of the chunk's parameters on one TP rank (gradient_bytes_per_parameter),
                            ///< reduced over the data-parallel group
  Bytes expert_gradient_bytes;  ///< with expert parallelism: the routed experts' gradients on one rank, reduced
                                ///< over the expert-data group instead
  Bytes stashed;            ///< activations kept from F until the backward, per microbatch
  Bytes stashed_after_input;  ///< what a split backward keeps from I until W (kept_after_input)
  /// What a pass holds while it runs beyond the stash rule (working_memory.h), per microbatch: the
  /// forward's loss transients; the backward's remaining stash of its own microbatch plus a layer's
  /// recomputed activations or the loss's gradients, at their largest (schedule::working_bytes).
  Bytes forward_working;
  Bytes backward_working;
  std::int64_t parameters = 0;  ///< on one TP rank
  std::int64_t fp8_parameters = 0;  ///< of those, the weights of GEMMs that run in FP8
  std::int64_t largest_layer_parameters = 0;  ///< the chunk's largest layer, on one TP rank (ZeRO-3's unit)
  std::int64_t expert_parameters = 0;  ///< of `parameters`, the routed experts' (sharded over expert x expert_tensor)
  /// Tied embeddings: the vocabulary table the chunk's output head projects with, on one TP rank,
  /// and whether the chunk holds a table itself (the embedding, or a layer that keeps a copy).
  /// tied_table_copy() says what the rank keeps of it.
  std::int64_t output_table = 0;
  bool holds_table = false;
  /// The chunk's MoE blocks and one block's halves, for an F&B pair's slots (Megatron-Core's combined
  /// 1F1B and the schedules with pairs of their own run a block's attention and MoE MLP of one microbatch beside the other's
  /// expert all-to-alls): the attention half (norms, attention, projections) and the MLP half (router,
  /// experts) of the forward and of the backward: the block's own passes (kernels, memory-bound work
  /// and recomputation) split in proportion to the halves' kernels, whatever else the chunk holds;
  /// each the shortest of the chunk's MoE blocks' where they differ.
  int moe_blocks = 0;
  TimeNs moe_attention_forward;
  TimeNs moe_mlp_forward;
  TimeNs moe_attention_backward;
  TimeNs moe_mlp_backward;
};

/// What a GPU holds for the whole step, whatever the schedule does.
struct StaticMemory {
  Bytes weights;     ///< the model's dtype, plus FP8 copies under an FP8 precision
  Bytes gradients;   ///< Megatron's main gradients (fp32 unless grad_reduce_in_fp32 is off)
  Bytes optimizer;   ///< fp32 master weights and moments (Adam: momentum and variance; Muon: momentum)
  Bytes reserved;    ///< CUDA context, library workspaces, NCCL communicators' buffers, side-stream pools
  /// Held beyond the rest while the optimizer step runs, not in total(): fp32 copies of the rank's
  /// 16-bit gradient shard for its fp32 master weights (static_memory()).
  Bytes optimizer_step_working;
  [[nodiscard]] Bytes total() const noexcept { return weights + gradients + optimizer + reserved; }
  /// The whole while the optimizer step runs (no activation is held then).
  [[nodiscard]] Bytes during_optimizer_step() const noexcept { return total() + optimizer_step_working; }
};

struct RankCost {
  std::vector<ChunkCost> chunks;  ///< by chunk on the rank
  TimeNs optimizer_step;
  StaticMemory static_memory;
  Bytes memory_capacity;
};

struct CostModel {
  std::vector<RankCost> ranks;     ///< by pipeline rank
  [[nodiscard]] const ChunkCost& chunk(int rank, int chunk) const {
    return ranks.at(static_cast<std::size_t>(rank)).chunks.at(static_cast<std::size_t>(chunk));
  }
};

/// Bytes per parameter the step keeps beside the weights: the gradient buffer (fp32, 4, or the
/// model's dtype: schedule::gradient_bytes_per_parameter) and the optimizer state, sharded over the
/// data-parallel group by ZeRO stage 1 (optimizer) and 2 (gradients); stage 3 also shards the weights.
using schedule::kGradientBytesPerParameter;
inline constexpr int kFp32Bytes = 4;
struct StateFormat;
/// Whether Transformer Engine's FusedAdam holds the master weights (master_weights=True): Megatron-Core
/// hands them over with the precision-aware optimizer unless an FP8 recipe other than delayed scaling
/// runs (OptimizerConfig.use_precision_aware_optimizer_no_fp8_or_ds_fp8; mpsim's `fp8` stands for both
/// delayed and current scaling and is priced as current scaling, the larger). FusedAdam then takes
/// the 16-bit gradient shard as it is (decoupled_grad) and keeps of a bf16 weight's fp32 master only
/// the low 16 bits (store_param_remainders, on by default since Transformer Engine 2.1).
[[nodiscard]] bool fused_adam_holds_master_weights(const StateFormat& f) noexcept;
/// The optimizer state per parameter as held in memory: master weights of a 16-bit model (fp32, 4;
/// FusedAdam's bf16 remainders, 2; an fp32 model's optimizer updates its weights themselves, as
/// Megatron's FP32Optimizer and a plain torch.optim.Adam do) and the moments: Adam's momentum and
/// variance (fp32, 8, or the precision-aware optimizer's exp_avg_dtype and exp_avg_sq_dtype) or
/// Muon's momentum (4). Muon's layer-wise distributed optimizer (Megatron-Core) shards whole layers'
/// states over the data-parallel ranks, which the per-parameter shard here approximates.
[[nodiscard]] int optimizer_bytes_per_parameter(const StateFormat& f) noexcept;
[[nodiscard]] int optimizer_moment_bytes_per_parameter(const StateFormat& f) noexcept;
/// What the step holds beside fp16 and FP8 moments: FusedAdam unscales each into an fp32 copy for the
/// kernel and scales it back after (get_unscaled_state, set_scaled_state), a param group's at once;
/// bf16 moments it reads as they are (fused into the kernel since Transformer Engine pull request
/// 2632, February 2026). Counted over the rank's whole shard, the largest group's upper bound.
[[nodiscard]] int optimizer_unscaled_moment_bytes_per_parameter(const StateFormat& f) noexcept;
/// What one checkpoint writes: every parameter once (data-parallel replicas share it), in the model's
/// dtype, and its optimizer state (fp32 master weights, whole even where FusedAdam keeps remainders,
/// and the moments as held). Megatron's distributed checkpoint and PyTorch DCP both write the model
/// and the optimizer state.
[[nodiscard]] Bytes checkpoint_bytes(const model::Model& model, const plan::Plan& plan) noexcept;
/// HBM traffic of one optimizer step per parameter: read the fp32 gradient (4), read and write the
/// master weights and moments (Adam 24, Muon 16), write the 16-bit weights (2). Muon's Newton-Schulz
/// iterations (5 of them, about 4m²n + 2m³ FLOPs each for an m x n matrix, m <= n) are not timed: for
/// Kimi K2 on 256 GB300 they are about 1 % of the step.
[[nodiscard]] constexpr int optimizer_traffic_bytes_per_parameter(plan::Optimizer o) noexcept {
  return o == plan::Optimizer::Muon ? 22 : 30;
}

/// Transformer Engine keeps an FP8 copy of each FP8 GEMM's weight beside the 16-bit one across a
/// step's microbatches (1 byte per parameter); the transposed or column-wise copy the backward needs
/// is made from it per GEMM and not kept.
inline constexpr int kFp8WeightCopyBytesPerParameter = 1;
/// With FP8 weights (--fp8-param-gather; NeMo's fp8_params) no 16-bit copy exists: the FP8 data and
/// the transposed (Hopper) or column-wise (MXFP8) copy the backward's GEMM reads, 1 byte each.
inline constexpr int kFp8OnlyWeightBytesPerParameter = 2;
/// GPU memory no tensor of the model owns. CUDA context and library workspaces: 1.25 GiB (vLLM's
/// non-torch memory on H100 with tp=1, 1.79 GiB, less one NCCL communicator); each NCCL communicator
/// the plan uses: 0.6 GiB (NVIDIA/nccl#964: 544 MB for a 2-GPU group, 688 MB for 3-4 GPUs). Counted
/// are the tensor, pipeline and data-parallel (x context) groups of more than one GPU; expert and
/// context groups add none of their own.
inline constexpr double kContextReserveGiB = 1.25;
inline constexpr double kCommunicatorReserveGiB = 0.6;
[[nodiscard]] Bytes reserved_memory(int tensor, int pipeline, int data) noexcept;

/// Sharded weights (ZeRO 3, FSDP) gather this many layers at a time: the one computing and the next,
/// prefetched.
inline constexpr int kGatheredLayers = 2;
/// What the caching allocator holds for sharded weights' collectives beyond the compute stream's
/// tensors. PyTorch's CUDA caching allocator keeps a pool per stream and never hands a block freed on
/// one stream to another (docs "CUDA semantics", memory management). FSDP2 (pytorch/pytorch#114299, its
/// tracker; #117975 puts the reduce-scatter on a stream of its own) all-gathers each unit's
/// weights into a buffer of its all-gather stream and copies them out into the compute stream's
/// unsharded parameters, and reduce-scatters each unit's gradient from a buffer of its reduce-scatter
/// stream, cast to the reduce dtype. Each stream's pool stays at its largest: `gathered` (the
/// all-gather outputs of the layers in flight) and `unsharded_gradient` (one layer's gradient in the
/// reduce dtype), beside the compute stream's own copies of both. Reserved, not allocated: live only
/// while their collectives run, cached the rest of the step.
[[nodiscard]] Bytes side_stream_pools(Bytes gathered, Bytes unsharded_gradient) noexcept;

/// How a plan (or a planner's spec) keeps the model states: what static_memory() needs of it.
struct StateFormat {
  int dtype_bytes = 2;
  plan::Precision precision = plan::Precision::Bf16;
  int zero = 0;
  bool grad_reduce_in_fp32 = true;
  bool fp8_param_gather = false;
  int tensor = 1;
  int pipeline = 1;
  int data = 1;
  int expert_data = 1;  ///< the routed experts' replicas: their optimizer state, gradients and weights shard over these
  plan::Optimizer optimizer = plan::Optimizer::Adam;
  bool precision_aware_optimizer = false;
  plan::StateDtype exp_avg_dtype = plan::StateDtype::Fp32;
  plan::StateDtype exp_avg_sq_dtype = plan::StateDtype::Fp32;
  /// The flex token dispatcher's own buffers (dispatcher_buffers.h), static memory beside the NCCL
  /// communicators'. state_format() leaves it zero: the caller that knows the expert group sets it.
  Bytes dispatcher_buffers;
};
[[nodiscard]] StateFormat state_format(const plan::Plan& plan, int dtype_bytes) noexcept;
[[nodiscard]] StateFormat state_format(const plan::PlanSpec& spec, int dtype_bytes) noexcept;

/// What a pipeline rank holding `parameters` keeps for the step: ZeRO 1
/// (Megatron's distributed optimizer) shards the optimizer state over the `data` replicas (rounded
/// up), 2 the gradients, 3 the weights; FP8 GEMMs add their weights' 8-bit copies, or hold only FP8
/// weights with fp8_param_gather. ZeRO 3 also holds two layers' gathered weights (the one computing
/// and the one prefetched) and one layer's whole gradient before its reduce-scatter. With 16-bit
/// gradients (grad_reduce_in_fp32 off) of a 16-bit model, the optimizer step holds an fp32 copy of the
/// rank's gradient shard (optimizer_step_working): Megatron's mixed-precision optimizers hand each fp32
/// master weight `main_grad.float()` (DistributedOptimizer._copy_model_grads_to_main_grads), which
/// FusedAdam holding the master weights (fused_adam_holds_master_weights) does not; fp16 and FP8
/// moments add their fp32 copies (optimizer_unscaled_moment_bytes_per_parameter). The planner's
/// memory bound uses this same function.
struct RankParameters {
  std::int64_t total = 0;          ///< on one GPU of the pipeline rank
  std::int64_t fp8 = 0;            ///< of those, weights of FP8 GEMMs
  std::int64_t largest_layer = 0;  ///< in its largest layer
  std::int64_t expert = 0;         ///< of those, routed experts' (their states shard over expert_data, not data)
  /// Of a tied vocabulary table, the copy the rank keeps for its output head (tied_table_copy()):
  /// weights, gradients and optimizer state like any parameter's, so counted in static_memory() and
  /// stepped by optimizer_step_time(); not in `total` (the layers' own parameters). The all-reduce
  /// that keeps it equal to the first stage's table is not timed.
  std::int64_t tied_copy = 0;
};
[[nodiscard]] StaticMemory static_memory(const RankParameters& parameters, const StateFormat& format) noexcept;
/// With tied embeddings the output head projects with the embedding's table. A pipeline rank whose
/// head has no table beside it (neither the embedding nor a multi-token-prediction layer's copy)
/// allocates its own and keeps it in step with the first stage's by an all-reduce of their gradients
/// (Megatron-Core LanguageModule.setup_embeddings_and_output_layer; GPTModel's output_layer skips its
/// weight only with pre_process or mtp_process): `output_table` elements on one tensor rank, trained
/// as a parameter. Nothing where the rank holds a table or no tied head.
[[nodiscard]] constexpr std::int64_t tied_table_copy(std::int64_t output_table, bool holds_table) noexcept {
  return holds_table ? 0 : output_table;
}
/// The GPU's link to host memory, one direction: the widest route to a CPU of its node (NVLink-C2C on
/// Grace machines, PCIe elsewhere). Zero when its node has no CPU.
[[nodiscard]] BytesPerSec host_bandwidth(const topology::Cluster& cluster, SharedRoutes& routes,
                                         topology::DeviceId gpu);
/// What activation offloading (Transformer Engine's, under Megatron-Core's cpu_offloading) adds to a
/// pass over `blocks` blocks that takes `pass` without it: the offloaded blocks' stash, `offloaded`
/// bytes, goes to the host one block after another on a stream of its own, starting once the first
/// block has run, and each block's copy must end before the block `blocks - offloaded blocks` later
/// starts (so that no more sets than the kept blocks' are on the GPU); the backward brings them back
/// ahead of their use the same way. With copies no slower than the blocks nothing shows; slower, the
/// pass waits for the copies beyond the first and last blocks' time: copies - pass x (blocks - 2) / blocks.
/// Precondition: bandwidth > 0 (the plan check requires a host).
[[nodiscard]] TimeNs offload_stall(Bytes offloaded, BytesPerSec bandwidth, TimeNs pass, int blocks) noexcept;
/// What one optimizer step costs per parameter: the model's measured time for the optimizer when it has
/// one (a profiled model's optimizer_time_per_parameter: mpsim profile times the executor's Adam), else
/// the optimizer's HBM traffic (optimizer_traffic_bytes_per_parameter) at the GPU's memory bandwidth.
struct OptimizerPace {
  BytesPerSec memory_bandwidth;
  std::map<plan::Optimizer, double> seconds_per_parameter;  ///< measured, by optimizer
};
[[nodiscard]] OptimizerPace optimizer_pace(const model::Model& model, BytesPerSec memory_bandwidth);
/// One optimizer step over the state a rank owns: with ZeRO >= 1 its shards, the dense parameters'
/// over `data` and the routed experts' over `expert_data` (rounded up); that many parameters times the
/// measured time per parameter of `format.optimizer`, or their HBM traffic at the memory bandwidth.
/// The simulator and the planner's bounds both price the step here.
[[nodiscard]] TimeNs optimizer_step_time(const RankParameters& parameters, const StateFormat& format,
                                         const OptimizerPace& pace) noexcept;
/// Attention scores a layer stashes for one microbatch on one tensor rank (softmax output, dropout
/// mask and output: what selective recomputation drops and a split backward frees at I).
[[nodiscard]] Bytes attention_score_bytes(const model::Layer& layer, int micro_batch, int tensor) noexcept;
/// What a split backward keeps of a layer from its I until its W, per microbatch on one tensor rank
/// (`stashed` of it, `attention_scores` of those): its weight-gradient store (model::weight_gradient_store,
/// `gemm_element_bytes` per element: 1 for FP8 GEMMs, whose inputs and output gradients Transformer
/// Engine quantizes, else the activations' dtype); the embedding's output gradient; a layer listed by
/// hand without GEMMs its stash but the scores.
[[nodiscard]] Bytes kept_after_input(const model::Layer& layer, int micro_batch, int tensor, Bytes stashed,
                                     Bytes attention_scores, std::int64_t gemm_element_bytes) noexcept;

/// `routes`: the routes of `cluster` shared with other work on it (a search's), or null. Each pipeline
/// rank is priced on the GPUs of data-parallel replica `replica` (replicas on GPUs of different kinds
/// cost differently; those of one kind alike).
[[nodiscard]] CostModel build_cost_model(const topology::Cluster& cluster, const model::Model& model,
                                         const plan::Plan& plan, const plan::Layout& layout,
                                         SharedRoutes* routes = nullptr, int replica = 0);

/// A pipeline rank's kernel time in one step by class, on each GPU of the rank: `microbatches` times
/// each chunk's forward and backward (recomputation included), and the optimizer step (memory-bound).
/// What a profiler trace's kernels are compared with (mpsim calibrate); the engine's step also holds
/// waits, transfers and collectives, which are not in it.
[[nodiscard]] ClassTimes step_kernel_times(const RankCost& rank, int microbatches) noexcept;

/// A ring over `devices`: its size, slowest edge bandwidth and largest edge latency.
struct RingProfile {
  std::int64_t members = 1;
  BytesPerSec bandwidth;
  TimeNs alpha;
};
[[nodiscard]] RingProfile ring_profile(SharedRoutes& routes, const std::vector<topology::DeviceId>& devices);

/// A ring collective of `size` without contention: 2(n-1) rounds (all-reduce) or n-1 rounds (all-gather,
/// reduce-scatter) of alpha + (size/n) / B. What the engine's ring phases take on idle links.
[[nodiscard]] TimeNs ring_time(const RingProfile& ring, schedule::OpKind kind, Bytes size) noexcept;
/// The sum over `collectives` on the tensor group (count x ring_time each): the exchanges the
/// planner's bounds charge to a pass. Collectives on other groups (ZeRO-3's gathers beside the pass,
/// MoE's all-to-alls) are not counted, so the bounds stay bounds.
[[nodiscard]] TimeNs ring_time(const RingProfile& ring, const std::vector<schedule::LayerCollective>& collectives) noexcept;

/// A pass's time on idle links: compute and its in-layer collectives one after the other, or side by
/// side when they overlap (the engine's Blocking and Overlapped streams).
[[nodiscard]] inline TimeNs pass_time(TimeNs compute, TimeNs comm, bool overlap) noexcept {
  return overlap ? std::max(compute, comm) : TimeNs(compute + comm);
}

}  // namespace mpsim::engine
