#include "sim/engine/cost_model.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>

#include "sim/engine/dispatcher_buffers.h"
#include "sim/engine/kernel_time.h"
#include "sim/engine/route_cache.h"
#include "sim/engine/working_memory.h"
#include "sim/plan/layer_recompute.h"
#include "sim/plan/plan_check.h"

namespace mpsim::engine {

using model::Layer;
using model::Recompute;

RingProfile ring_profile(SharedRoutes& routes, const std::vector<topology::DeviceId>& devices) {
  RingProfile ring;
  ring.members = static_cast<std::int64_t>(devices.size());
  if (devices.size() <= 1) return ring;
  double bandwidth = 0;
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const auto route = routes.route(devices[i], devices[(i + 1) % devices.size()]);
    if (!route) throw std::logic_error("ring edge without a route");
    const double bw = route->bandwidth.in_bytes_per_sec();
    bandwidth = i == 0 ? bw : std::min(bandwidth, bw);
    ring.alpha = std::max(ring.alpha, route->latency);
  }
  ring.bandwidth = BytesPerSec::bytes_per_sec(bandwidth);
  return ring;
}

TimeNs ring_time(const RingProfile& ring, schedule::OpKind kind, Bytes size) noexcept {
  const std::int64_t n = ring.members;
  if (n <= 1 || size.count() == 0) return TimeNs{};
  const Bytes per_round = Bytes::bytes((size.count() + n - 1) / n);
  const std::int64_t rounds = kind == schedule::OpKind::AllReduce ? 2 * (n - 1) : n - 1;
  return (ring.alpha + transfer_time(per_round, ring.bandwidth)) * rounds;
}

TimeNs ring_time(const RingProfile& ring, const std::vector<schedule::LayerCollective>& collectives) noexcept {
  TimeNs total;
  for (const schedule::LayerCollective& c : collectives) {
    if (c.group == plan::Axis::Tensor) total += ring_time(ring, c.kind, c.bytes) * c.count;
  }
  return total;
}

Bytes reserved_memory(int tensor, int pipeline, int data) noexcept {
  const int communicators = (tensor > 1 ? 1 : 0) + (pipeline > 1 ? 1 : 0) + (data > 1 ? 1 : 0);
  return Bytes::gib(kContextReserveGiB + kCommunicatorReserveGiB * communicators);
}

Bytes side_stream_pools(Bytes gathered, Bytes unsharded_gradient) noexcept { return gathered + unsharded_gradient; }

StateFormat state_format(const plan::Plan& plan, int dtype_bytes) noexcept {
  // Context-parallel ranks hold the same weights: the data-parallel group of the model states (the
  // distributed optimizer's shards, the gradient reduction) spans data x context.
  return {dtype_bytes,
          plan.precision,
          plan.zero,
          plan.grad_reduce_in_fp32,
          plan.fp8_param_gather,
          plan.degrees[plan::Axis::Tensor],
          plan.degrees[plan::Axis::Pipeline],
          plan.degrees.product(plan::Axis::DataShard | plan::Axis::Context),
          plan.expert_data(),
          plan.optimizer,
          plan.precision_aware_optimizer,
          plan.exp_avg_dtype,
          plan.exp_avg_sq_dtype,
          Bytes{}};
}

StateFormat state_format(const plan::PlanSpec& spec, int dtype_bytes) noexcept {
  // As a resolved plan's: dense states over data x context, the experts' over their replicas.
  const plan::Degrees degrees = plan::degrees_of(spec, spec.written(plan::Axis::Data).value_or(1));
  return {dtype_bytes,
          spec.precision.value_or(plan::model_precision(dtype_bytes)),
          spec.zero,
          spec.grad_reduce_in_fp32,
          spec.fp8_param_gather,
          spec.degrees[plan::Axis::Tensor],
          spec.degrees[plan::Axis::Pipeline],
          degrees.product(plan::Axis::Data | plan::Axis::Context) / std::max(1, spec.degrees[plan::Axis::DataReplica]),
          std::max(1, degrees[plan::Axis::ExpertData]),
          spec.optimizer,
          spec.precision_aware_optimizer,
          spec.exp_avg_dtype,
          spec.exp_avg_sq_dtype,
          Bytes{}};
}

bool fused_adam_holds_master_weights(const StateFormat& f) noexcept {
  return f.precision_aware_optimizer && f.optimizer == plan::Optimizer::Adam && !plan::is_fp8(f.precision);
}

int optimizer_moment_bytes_per_parameter(const StateFormat& f) noexcept {
  if (f.optimizer == plan::Optimizer::Muon) return kFp32Bytes;
  if (!f.precision_aware_optimizer) return 2 * kFp32Bytes;
  return plan::bytes_of(f.exp_avg_dtype) + plan::bytes_of(f.exp_avg_sq_dtype);
}

int optimizer_unscaled_moment_bytes_per_parameter(const StateFormat& f) noexcept {
  if (!f.precision_aware_optimizer || f.optimizer != plan::Optimizer::Adam) return 0;
  int bytes = 0;
  for (const plan::StateDtype d : {f.exp_avg_dtype, f.exp_avg_sq_dtype}) {
    if (d == plan::StateDtype::Fp16 || d == plan::StateDtype::Fp8) bytes += kFp32Bytes;
  }
  return bytes;
}

int optimizer_bytes_per_parameter(const StateFormat& f) noexcept {
  // TE's remainders: the fp32 master's low half beside the bf16 weight, which is its high half.
  const bool remainders = fused_adam_holds_master_weights(f) && f.precision != plan::Precision::Fp16;
  const int master_weights = f.dtype_bytes >= kFp32Bytes ? 0 : remainders ? kFp32Bytes - f.dtype_bytes : kFp32Bytes;
  return master_weights + optimizer_moment_bytes_per_parameter(f);
}

StaticMemory static_memory(const RankParameters& p, const StateFormat& f) noexcept {
  const int data = std::max(1, f.data);
  const int expert_data = std::max(1, f.expert_data);
  const std::int64_t expert = std::min(p.expert, p.total);
  const std::int64_t dense = p.total - expert;
  // ZeRO stage `stage` and above shard a state over its parameters' replicas: the data-parallel group
  // for dense parameters, the expert-data group for the routed experts'.
  const auto sharded = [&](std::int64_t dense_bytes, std::int64_t expert_bytes, int stage) {
    if (f.zero < stage) return dense_bytes + expert_bytes;
    return (dense_bytes + data - 1) / data + (expert_bytes + expert_data - 1) / expert_data;
  };
  // FP8 GEMMs' weights: all of the routed experts', the rest of `p.fp8` among the dense ones.
  const bool fp8 = plan::is_fp8(f.precision);
  const std::int64_t expert_fp8 = fp8 ? expert : 0;
  const std::int64_t dense_fp8 = fp8 ? std::clamp<std::int64_t>(p.fp8 - expert, 0, dense) : 0;
  const int fp8_weight_bytes =
      f.fp8_param_gather ? kFp8OnlyWeightBytesPerParameter : f.dtype_bytes + kFp8WeightCopyBytesPerParameter;
  const auto weight_bytes = [&](std::int64_t n, std::int64_t n_fp8) {
    return (n - n_fp8) * f.dtype_bytes + n_fp8 * fp8_weight_bytes;
  };
  const int gradient_bytes = schedule::gradient_bytes_per_parameter(f.grad_reduce_in_fp32, f.dtype_bytes);
  // A tied table's copy is a dense 16-bit (model dtype) parameter of its own.
  const std::int64_t copy = std::max<std::int64_t>(p.tied_copy, 0);
  StaticMemory m;
  m.weights = Bytes::bytes(sharded(weight_bytes(dense, dense_fp8) + copy * f.dtype_bytes, weight_bytes(expert, expert_fp8), 3));
  m.gradients = Bytes::bytes(sharded((dense + copy) * gradient_bytes, expert * gradient_bytes, 2));
  const int optimizer_bytes = optimizer_bytes_per_parameter(f);
  m.optimizer = Bytes::bytes(sharded((dense + copy) * optimizer_bytes, expert * optimizer_bytes, 1));
  m.reserved = reserved_memory(f.tensor, f.pipeline, data) + f.dispatcher_buffers;
  // fp32 master weights of Megatron's own, 16-bit gradients: the gradient shard's fp32 copy; fp16 and
  // FP8 moments: FusedAdam's fp32 copies of them (below).
  int step_working_bytes = 0;
  if (gradient_bytes < kFp32Bytes && f.dtype_bytes < kFp32Bytes && !fused_adam_holds_master_weights(f)) {
    step_working_bytes += kFp32Bytes;
  }
  step_working_bytes += optimizer_unscaled_moment_bytes_per_parameter(f);
  if (step_working_bytes > 0) {
    m.optimizer_step_working =
        Bytes::bytes(sharded((dense + copy) * step_working_bytes, expert * step_working_bytes, 1));
  }
  if (f.zero >= 3 && data > 1) {
    // The gathered layers the compute stream holds: the one computing and the next, prefetched, with
    // the one layer's whole gradient before its reduce-scatter.
    const Bytes gathered = Bytes::bytes(kGatheredLayers * p.largest_layer *
                                        schedule::gathered_parameter_bytes(f.fp8_param_gather, f.dtype_bytes));
    const Bytes unsharded_gradient = Bytes::bytes(p.largest_layer * gradient_bytes);
    m.weights += gathered;
    m.gradients += unsharded_gradient;
    m.reserved += side_stream_pools(gathered, unsharded_gradient);
  }
  return m;
}

OptimizerPace optimizer_pace(const model::Model& model, BytesPerSec memory_bandwidth) {
  return {memory_bandwidth, model.optimizer_seconds_per_parameter};
}

TimeNs optimizer_step_time(const RankParameters& parameters, const StateFormat& format,
                           const OptimizerPace& pace) noexcept {
  const std::int64_t expert = std::min(parameters.expert, parameters.total);
  // A tied table's copy is stepped like the rank's own dense parameters (static_memory keeps its state).
  const std::int64_t dense = parameters.total - expert + std::max<std::int64_t>(parameters.tied_copy, 0);
  const int data = std::max(1, format.data);
  const int expert_data = std::max(1, format.expert_data);
  const std::int64_t owned =
      format.zero >= 1 ? (dense + data - 1) / data + (expert + expert_data - 1) / expert_data : parameters.total;
  if (const auto measured = pace.seconds_per_parameter.find(format.optimizer);
      measured != pace.seconds_per_parameter.end()) {
    return TimeNs::seconds(static_cast<double>(owned) * measured->second);
  }
  return transfer_time(Bytes::bytes(owned * optimizer_traffic_bytes_per_parameter(format.optimizer)),
                       pace.memory_bandwidth);
}

Bytes kept_after_input(const Layer& layer, int micro_batch, int tensor, Bytes stashed, Bytes attention_scores,
                       std::int64_t gemm_element_bytes) noexcept {
  if (!layer.gemms.empty()) {
    const model::WeightGradientStore store = model::weight_gradient_store(layer, micro_batch, tensor);
    return Bytes::bytes((store.input_elements + store.output_gradient_elements) * gemm_element_bytes);
  }
  if (layer.kind == model::LayerKind::Embedding) {  // the table's gradient scatters its output's gradient
    return Bytes::bytes(layer.output_bytes.count() * micro_batch / tensor);
  }
  return stashed - std::min(stashed, attention_scores);
}

Bytes attention_score_bytes(const model::Layer& layer, int micro_batch, int tensor) noexcept {
  return Bytes::bytes(layer.stashed.attention_scores.count() * micro_batch / tensor);
}

namespace {

/// Kernel times of one pass over a chunk's layers, before recomputation, by kernel class.
struct PassTimes {
  ClassTimes forward;
  ClassTimes backward_input;
  ClassTimes backward_weight;
};

/// The GEMMs and attention cores of a generated layer, timed by shape, plus the FP8 casts of the GEMM
/// inputs; a layer without them (hand-listed) is timed from its FLOPs as one large GEMM.
PassTimes layer_kernel_times(const KernelRates& rates, const Layer& layer, const plan::Plan& plan) {
  const int b = plan.micro_batch;
  const int t = plan.degrees[plan::Axis::Tensor];
  PassTimes out;
  const KernelClass gemms = gemm_class(rates);
  if (layer.gemms.empty() && layer.attention.empty()) {
    const double per_rank = static_cast<double>(b) / t;
    out.forward = ClassTimes::of(gemms, compute_time(layer.forward_flops * per_rank, rates.gemm));
    out.backward_input = ClassTimes::of(gemms, compute_time(layer.backward_input_flops * per_rank, rates.gemm));
    out.backward_weight = ClassTimes::of(gemms, compute_time(layer.backward_weight_flops * per_rank, rates.gemm));
    return out;
  }
  std::int64_t cast_forward = 0, cast_backward = 0;
  for (const model::Gemm& g : layer.gemms) {
    const GemmPasses passes = gemm_passes(g, b, t, plan.degrees[plan::Axis::Expert],
                                          plan.degrees[plan::Axis::ExpertTensor], plan.expert_load());
    out.forward += ClassTimes::of(gemms, gemm_time(rates, passes.forward));
    out.backward_input += ClassTimes::of(gemms, gemm_time(rates, passes.backward_input));
    out.backward_weight += ClassTimes::of(gemms, gemm_time(rates, passes.backward_weight));
    cast_forward += passes.forward.groups * passes.forward.m * passes.forward.k;
    cast_backward += passes.backward_input.groups * passes.backward_input.m * passes.backward_input.k;
  }
  if (rates.fp8) {  // the casts are kernels of their own, memory-bound
    out.forward += ClassTimes::of(KernelClass::MemoryBound,
                                  transfer_time(Bytes::bytes(cast_forward * kFp8CastBytesPerElement), rates.memory));
    out.backward_input += ClassTimes::of(
        KernelClass::MemoryBound, transfer_time(Bytes::bytes(cast_backward * kFp8CastBytesPerElement), rates.memory));
  }
  for (const model::AttentionCore& core : layer.attention) {
    const AttentionTimes a = attention_time(rates, core, plan.attention, b, t);
    out.forward += ClassTimes::of(a.kernel_class, a.forward);
    out.backward_input += ClassTimes::of(a.kernel_class, a.backward);
  }
  return out;
}

/// An MoE block's attention half: its leading `routed.attention_gemms` gemms and its attention cores.
PassTimes attention_half_kernel_times(const KernelRates& rates, const Layer& layer, const plan::Plan& plan) {
  PassTimes out;
  const auto leading = std::min<std::size_t>(layer.gemms.size(), static_cast<std::size_t>(layer.routed.attention_gemms));
  for (std::size_t i = 0; i < leading; ++i) {
    const GemmPasses passes = gemm_passes(layer.gemms[i], plan.micro_batch, plan.degrees[plan::Axis::Tensor],
                                          plan.degrees[plan::Axis::Expert], plan.degrees[plan::Axis::ExpertTensor]);
    out.forward += ClassTimes::of(gemm_class(rates), gemm_time(rates, passes.forward));
    out.backward_input += ClassTimes::of(gemm_class(rates), gemm_time(rates, passes.backward_input));
    out.backward_weight += ClassTimes::of(gemm_class(rates), gemm_time(rates, passes.backward_weight));
  }
  for (const model::AttentionCore& core : layer.attention) {
    const AttentionTimes a =
        attention_time(rates, core, plan.attention, plan.micro_batch, plan.degrees[plan::Axis::Tensor]);
    out.forward += ClassTimes::of(a.kernel_class, a.forward);
    out.backward_input += ClassTimes::of(a.kernel_class, a.backward);
  }
  return out;
}

/// `part` of a pass whose kernels take `kernels` and the whole pass `pass`: its share of the pass.
TimeNs share_of_pass(TimeNs part, TimeNs kernels, TimeNs pass) {
  if (kernels.base() <= 0) return TimeNs{};
  return TimeNs::ns(static_cast<std::int64_t>(static_cast<double>(part.base()) * static_cast<double>(pass.base()) /
                                              static_cast<double>(kernels.base())));
}

/// What a pass's time is made of, summed over layers: their kernels, the recomputation before the
/// backward, the memory-bound work beside the matmuls, or their profiled times.
struct PassWork {
  PassTimes kernels;
  Flops recompute, module_flops;
  Bytes stashed_scores, elementwise, module_bytes;
  TimeNs profiled_f, profiled_bi, profiled_bw;
  bool all_profiled_f = true, all_profiled_b = true;
  /// Of the forward, what the layers full recomputation applies to but does not checkpoint take (its
  /// block and every methods): the kernels, the memory-bound bytes, the profiled time.
  ClassTimes kept_kernels_f;
  TimeNs kept_profiled_f;
  Bytes kept_elementwise;

  PassWork& operator+=(const PassWork& o) {
    kernels.forward += o.kernels.forward;
    kernels.backward_input += o.kernels.backward_input;
    kernels.backward_weight += o.kernels.backward_weight;
    recompute += o.recompute;
    module_flops += o.module_flops;
    stashed_scores += o.stashed_scores;
    elementwise += o.elementwise;
    module_bytes += o.module_bytes;
    profiled_f += o.profiled_f;
    profiled_bi += o.profiled_bi;
    profiled_bw += o.profiled_bw;
    all_profiled_f = all_profiled_f && o.all_profiled_f;
    all_profiled_b = all_profiled_b && o.all_profiled_b;
    kept_kernels_f += o.kept_kernels_f;
    kept_profiled_f += o.kept_profiled_f;
    kept_elementwise += o.kept_elementwise;
    return *this;
  }
};

/// The passes of `work`, recomputation included in the input-gradient pass.
PassTimes pass_times(const PassWork& work, const KernelRates& rates, BytesPerSec memory_bandwidth,
                     const plan::Plan& plan, Recompute score_rule, bool flash) {
  const auto memory_bound = [&](Bytes bytes) {
    return ClassTimes::of(KernelClass::MemoryBound, transfer_time(bytes, memory_bandwidth));
  };
  const ClassTimes elementwise = memory_bound(work.elementwise);
  PassTimes out;
  out.forward = work.all_profiled_f ? ClassTimes::of_profiled(work.profiled_f) : work.kernels.forward + elementwise;
  // Recomputation runs before the input-gradient pass: all of the forward but that of the layers full
  // recomputation leaves whole (full), or the attention scores' matmuls and their softmax/dropout
  // traffic (selective; nothing under FlashAttention, whose backward recomputes the scores itself).
  ClassTimes recompute_time;
  if (model::traits(plan.recompute).whole_layer) {
    const ClassTimes kept = work.all_profiled_f ? ClassTimes::of_profiled(work.kept_profiled_f)
                                                : work.kept_kernels_f + memory_bound(work.kept_elementwise);
    if (out.forward.total() > kept.total()) recompute_time = out.forward - kept;
  } else if (model::replayed_recompute(score_rule, flash) == Recompute::Selective) {
    // The scores' matmuls at the 16-bit GEMM rate (standard attention's).
    recompute_time = ClassTimes::of(KernelClass::Gemm, compute_time(work.recompute, rates.standard_scores)) +
                     memory_bound(work.stashed_scores * 2);
  }
  // Recomputed modules (and per-op checkpointing's replayed ops): their matmuls, and their outputs
  // written again and read once.
  recompute_time += ClassTimes::of(gemm_class(rates), compute_time(work.module_flops, rates.gemm)) +
                    memory_bound(work.module_bytes * 2);
  if (work.all_profiled_b) {
    out.backward_input = ClassTimes::of_profiled(work.profiled_bi) + recompute_time;
    out.backward_weight = ClassTimes::of_profiled(work.profiled_bw);
  } else {
    out.backward_input = work.kernels.backward_input + elementwise + recompute_time;
    out.backward_weight = work.kernels.backward_weight;
  }
  return out;
}

/// An MoE block's halves for an F&B pair's slots: its own passes split by its attention half's kernels.
struct BlockHalves {
  TimeNs attention_forward, mlp_forward, attention_backward, mlp_backward;
};

BlockHalves moe_block_halves(const PassWork& block, const PassTimes& attention_kernels, const KernelRates& rates,
                             BytesPerSec memory_bandwidth, const plan::Plan& plan, Recompute score_rule, bool flash) {
  const PassTimes passes = pass_times(block, rates, memory_bandwidth, plan, score_rule, flash);
  const TimeNs forward = passes.forward.total();
  const TimeNs backward = passes.backward_input.total() + passes.backward_weight.total();
  BlockHalves out;
  out.attention_forward = share_of_pass(attention_kernels.forward.total(), block.kernels.forward.total(), forward);
  out.mlp_forward = forward - out.attention_forward;
  out.attention_backward =
      share_of_pass(attention_kernels.backward_input.total() + attention_kernels.backward_weight.total(),
                    block.kernels.backward_input.total() + block.kernels.backward_weight.total(), backward);
  out.mlp_backward = backward - out.attention_backward;
  return out;
}

}  // namespace

BytesPerSec host_bandwidth(const topology::Cluster& cluster, SharedRoutes& routes, topology::DeviceId gpu) {
  BytesPerSec widest;
  const int node = cluster.device(gpu).node;
  for (std::size_t d = 0; d < cluster.devices().size(); ++d) {
    const topology::Device& device = cluster.devices()[d];
    if (device.kind != topology::DeviceKind::Cpu || device.node != node) continue;
    if (const auto route = routes.route(gpu, topology::DeviceId{static_cast<std::uint32_t>(d)})) {
      widest = std::max(widest, route->bandwidth);
    }
  }
  return widest;
}

TimeNs offload_stall(Bytes offloaded, BytesPerSec bandwidth, TimeNs pass, int blocks) noexcept {
  if (offloaded.count() == 0 || blocks < 1 || bandwidth.in_bytes_per_sec() <= 0) return TimeNs{};
  const TimeNs copies = transfer_time(offloaded, bandwidth);
  const TimeNs hidden = TimeNs::ns(pass.base() * std::max(0, blocks - 2) / blocks);
  return copies > hidden ? copies - hidden : TimeNs{};
}

ClassTimes step_kernel_times(const RankCost& rank, int microbatches) noexcept {
  ClassTimes step;
  for (const ChunkCost& chunk : rank.chunks) step += chunk.kernels;
  step *= std::max(0, microbatches);
  step += ClassTimes::of(KernelClass::MemoryBound, rank.optimizer_step);
  return step;
}

CostModel build_cost_model(const topology::Cluster& cluster, const model::Model& m, const plan::Plan& plan,
                           const plan::Layout& layout, SharedRoutes* shared_routes, int replica) {
  const auto ranges = plan::virtual_stage_layers(plan, m);
  const auto layer_collectives = schedule::chunk_layer_collectives(m, plan);
  const schedule::ChunkGradientBytes gradient_bytes = schedule::chunk_gradient_split(m, plan);
  // What one context-parallel rank runs of each layer (all of it without context parallelism).
  std::vector<Layer> context_layers;
  if (plan.degrees[plan::Axis::Context] > 1) {
    for (const Layer& l : m.layers)
      context_layers.push_back(model::context_share(l, plan.degrees[plan::Axis::Context]));
  }
  const std::vector<Layer>& layers = plan.degrees[plan::Axis::Context] > 1 ? context_layers : m.layers;
  const int t = plan.degrees[plan::Axis::Tensor];
  const int b = plan.micro_batch;
  const bool flash = plan.attention == plan::AttentionKernel::Flash;
  // What the passes replay: selective recomputation the scores (unless its modules leave core_attn out).
  // What each layer stashes follows its own rule below (FlashAttention never stores the scores, as
  // selective recomputation drops them).
  const Recompute score_rule = model::score_recompute(plan.recompute, plan.recompute_modules);
  const bool recomputes_modules = model::traits(plan.recompute).takes_modules;
  // Each layer's rule by its place (plan/layer_recompute.h).
  const std::vector<plan::LayerRecompute> recompute_of = plan::layer_recompute(plan, m);
  CostModel out;
  std::optional<SharedRoutes> own_routes;
  SharedRoutes& routes =
      shared_routes != nullptr && &shared_routes->cluster() == &cluster ? *shared_routes : own_routes.emplace(cluster);
  for (int rank = 0; rank < plan.degrees[plan::Axis::Pipeline]; ++rank) {
    const int first = layout.with(layout.with(0, plan::Axis::Data, replica), plan::Axis::Pipeline, rank);
    const auto tensor_ranks = layout.group(first, plan::Axis::Tensor);
    std::vector<topology::DeviceId> tensor_devices;
    for (const int r : tensor_ranks) tensor_devices.push_back(cluster.gpus().at(static_cast<std::size_t>(r)));
    const topology::GpuKind& gpu = cluster.gpu_kind_of(tensor_devices.front());
    const KernelRates rates = kernel_rates(gpu, plan.precision, m.dtype_bytes, plan.attention_kernel);
    // Only the transformer blocks' linear layers run in FP8 (Transformer Engine modules); Megatron's
    // vocabulary projection is a plain 16-bit GEMM.
    const KernelRates block_only_fp8 =
        rates.fp8 ? kernel_rates(gpu, plan::model_precision(m.dtype_bytes), m.dtype_bytes, plan.attention_kernel)
                  : rates;
    const RingProfile tensor_ring = ring_profile(routes, tensor_devices);
    RankCost rc;
    rc.memory_capacity = gpu.memory;
    RankParameters rank_parameters;
    for (int c = 0; c < plan.virtual_stages; ++c) {
      const int vs = plan::virtual_stage_of(plan.schedule, plan.degrees[plan::Axis::Pipeline], rank, c);
      const plan::LayerRange range = ranges.at(static_cast<std::size_t>(vs));
      ChunkCost cc;
      PassWork work;
      Bytes stashed;
      Bytes kept_for_weight;  // what a split backward keeps from I until W
      Bytes offloaded;  // the stash of the blocks activation offloading moves to the host
      int blocks = 0;
      const Layer* timed_layer = nullptr;
      PassTimes timed;
      const Layer* halved = nullptr;  // the last MoE block whose halves were taken
      WorkingMemory working;          // of the chunk's layers so far (working_memory.h)
      Bytes group_rebuilt;            // what the backward of full recomputation's open group replays
      for (int li = range.first; li < range.last; ++li) {
        const Layer& layer = layers[static_cast<std::size_t>(li)];
        const plan::LayerRecompute& rule = recompute_of[static_cast<std::size_t>(li)];
        const Recompute layer_score_rule = model::score_recompute(rule.rule, plan.recompute_modules);
        const Recompute layer_stash_rule = model::stash_recompute(layer_score_rule, flash);
        const bool in_fp8 = layer.kind == model::LayerKind::Transformer || layer.kind == model::LayerKind::Generic;
        // A transformer's blocks are alike: time a block once and reuse it for the next ones.
        if (timed_layer == nullptr || !model::same_cost(*timed_layer, layer)) {
          timed = layer_kernel_times(in_fp8 ? rates : block_only_fp8, layer, plan);
          timed_layer = &layer;
        }
        PassWork layer_work;
        layer_work.kernels = timed;
        if (model::replayed_recompute(layer_score_rule, flash) == Recompute::Selective) {
          layer_work.recompute = model::recomputed_flops(m, layer, Recompute::Selective) * (static_cast<double>(b) / t);
        }
        // Dense weights split over the tensor ranks; the routed experts over expert x expert_tensor.
        const std::int64_t experts_here =
            layer.expert_parameters / (plan.degrees[plan::Axis::Expert] * plan.degrees[plan::Axis::ExpertTensor]);
        const std::int64_t here = (layer.parameters - layer.expert_parameters) / t + experts_here;
        cc.parameters += here;
        cc.expert_parameters += experts_here;
        cc.largest_layer_parameters = std::max(cc.largest_layer_parameters, here);
        if (layer.kind == model::LayerKind::Embedding || layer.tied_copy_parameters > 0) cc.holds_table = true;
        if (layer.kind == model::LayerKind::OutputHead && m.shape && m.shape->tied_embeddings) {
          cc.output_table = (m.shape->vocab * m.shape->hidden + t - 1) / t;  // vocabulary-parallel
        }
        if (in_fp8 && rates.fp8) cc.fp8_parameters += here;
        const Bytes stashed_before = stashed;
        // The GEMM inputs are kept in their 8-bit copies.
        const auto fp8_gemm_inputs = [&] {
          return in_fp8 && rates.fp8 ? Bytes::bytes(model::stashed_gemm_input_elements(layer, b, t, plan.sequence_parallel) *
                                                    (m.dtype_bytes - 1))
                                     : Bytes{};
        };
        const Bytes whole_stash = model::stashed_activation_bytes(layer, b, t, plan.sequence_parallel,
                                                                  model::stash_recompute(Recompute::None, flash));
        LayerWorkingSet working_set;
        if (layer_stash_rule == Recompute::Op) {
          // Per-op checkpointing keeps the saved outputs and replays the rest before the backward.
          const model::OpCheckpoint op =
              model::op_checkpoint(layer, b, t, plan.sequence_parallel, m.dtype_bytes, whole_stash);
          stashed += op.kept;
          working_set.backward += op.rebuilt;
          layer_work.module_flops = op.matmul_flops;
          layer_work.module_bytes = op.rebuilt;
        } else if (!plan::replays_forward(rule, layer.kind) || rule.place.keeps_input) {
          // A distributed checkpoint keeps its input split over the tensor ranks, as sequence
          // parallelism would; the replay gathers it whole again (group_rebuilt below).
          const bool split_input = plan.sequence_parallel ||
                                   (plan.distribute_saved_activations && plan::replays_forward(rule, layer.kind));
          stashed += model::stashed_activation_bytes(layer, b, t, split_input, layer_stash_rule);
          if (layer_stash_rule != Recompute::Full) stashed -= fp8_gemm_inputs();
        }
        if (const std::int64_t logits = logit_elements(layer, b, t); logits > 0) {
          const bool vocabulary_parallel = logits < logit_elements(layer, b, 1);
          const LossMemory loss = loss_memory(plan.cross_entropy, m.dtype_bytes, vocabulary_parallel);
          stashed += Bytes::bytes((loss.kept - kStashedLogitBytes) * logits);
          working_set = {Bytes::bytes(loss.forward * logits), Bytes::bytes(loss.backward * logits)};
        }
        if (plan::replays_forward(rule, layer.kind)) {
          // The backward of a group's last layer first rebuilds everything the group's layers would
          // have stashed, less the input the group keeps.
          group_rebuilt += whole_stash - fp8_gemm_inputs() - (stashed - stashed_before);
          if (rule.place.closes_group) {
            working_set.backward += std::max(group_rebuilt, Bytes{});
            group_rebuilt = Bytes{};
          }
        } else if (!flash && model::replayed_recompute(layer_score_rule, flash) == Recompute::Selective) {
          working_set.backward += attention_score_bytes(layer, b, t);
        }
        if (recomputes_modules) {
          // Recompute modules drop their outputs from the stash (GEMM inputs already held in 1 byte
          // under FP8) and run again before the backward.
          const model::ModuleRecomputation mr =
              model::module_recomputation(layer, b, t, plan.sequence_parallel, plan.recompute_modules);
          const std::int64_t fp8_saving =
              in_fp8 && rates.fp8 ? mr.dropped_gemm_input_elements * (m.dtype_bytes - 1) : 0;
          const Bytes dropped = mr.dropped - Bytes::bytes(fp8_saving);
          stashed -= dropped;
          working_set.backward += dropped;  // rebuilt before the layer's backward
          layer_work.module_flops = mr.matmul_flops;
          layer_work.module_bytes = mr.dropped;
        }
        if (!flash) layer_work.stashed_scores = attention_score_bytes(layer, b, t);
        kept_for_weight += kept_after_input(layer, b, t, stashed - stashed_before, layer_work.stashed_scores,
                                            in_fp8 && rates.fp8 ? 1 : m.dtype_bytes);
        // The busiest expert rank keeps its larger share of routed token copies (unless full
        // recomputation or the `moe` module drops them).
        if (layer.routed.experts > 0 && layer_stash_rule != Recompute::Full && layer_stash_rule != Recompute::Op &&
            !(recomputes_modules && plan.recompute_modules.has(model::RecomputeModule::Moe))) {
          const double extra = static_cast<double>(layer.routed.stashed.count()) * (plan.expert_load() - 1.0) *
                               static_cast<double>(b) / static_cast<double>(t);
          stashed += Bytes::bytes(static_cast<std::int64_t>(std::ceil(extra)));
        }
        if (layer.kind == model::LayerKind::Transformer) {
          if (blocks < plan.activation_offload_layers) {
            offloaded += stashed - stashed_before;
            stashed = stashed_before;
          }
          ++blocks;
        }
        if (plan.degrees[plan::Axis::Context] > 1 && plan.context_comm == plan::ContextComm::AllGather) {
          const Bytes gathered = gathered_key_value_bytes(layer, b, t, m.dtype_bytes);
          working_set.forward += gathered;
          working_set.backward += gathered * 2;
        }
        working = then(working, layer_working_memory(stashed - stashed_before, working_set));
        // Memory-bound work beside the matmuls (norms, softmax, dropout, activations, residuals): every
        // activation a pass produces is written once and read once.
        layer_work.elementwise = whole_stash * 2;
        layer_work.all_profiled_f = layer.forward_time.has_value();
        layer_work.all_profiled_b = layer.backward_input_time.has_value() && layer.backward_weight_time.has_value();
        layer_work.profiled_f = layer.forward_time.value_or(TimeNs{});
        layer_work.profiled_bi = layer.backward_input_time.value_or(TimeNs{});
        layer_work.profiled_bw = layer.backward_weight_time.value_or(TimeNs{});
        if (plan.recompute == Recompute::Full && model::is_recomputed(layer.kind) && !rule.place.checkpointed) {
          layer_work.kept_kernels_f = layer_work.kernels.forward;
          layer_work.kept_elementwise = layer_work.elementwise;
          layer_work.kept_profiled_f = layer_work.profiled_f;
        }
        if (layer.routed.experts > 0 && (halved == nullptr || !model::same_cost(*halved, layer))) {
          // Each half the shortest of the chunk's blocks (they are alike but for a multi-token
          // prediction depth's extra projection): the planner's bound of a block alone stays below.
          const BlockHalves h =
              moe_block_halves(layer_work, attention_half_kernel_times(in_fp8 ? rates : block_only_fp8, layer, plan),
                               rates, gpu.memory_bandwidth, plan, score_rule, flash);
          const bool first = halved == nullptr;
          const auto shortest = [&](TimeNs& kept, TimeNs next) { kept = first ? next : std::min(kept, next); };
          shortest(cc.moe_attention_forward, h.attention_forward);
          shortest(cc.moe_mlp_forward, h.mlp_forward);
          shortest(cc.moe_attention_backward, h.attention_backward);
          shortest(cc.moe_mlp_backward, h.mlp_backward);
          halved = &layer;
        }
        if (layer.routed.experts > 0) ++cc.moe_blocks;
        work += layer_work;
      }
      const PassTimes passes = pass_times(work, rates, gpu.memory_bandwidth, plan, score_rule, flash);
      cc.forward = passes.forward.total();
      cc.backward_input = passes.backward_input.total();
      cc.backward_weight = passes.backward_weight.total();
      cc.backward = cc.backward_input + cc.backward_weight;
      cc.kernels = passes.forward + passes.backward_input + passes.backward_weight;
      if (offloaded.count() > 0) {
        // Offloaded blocks' stash leaves during the forward and returns during the backward.
        const BytesPerSec host = host_bandwidth(cluster, routes, tensor_devices.front());
        cc.forward += offload_stall(offloaded, host, cc.forward, blocks);
        const TimeNs reload = offload_stall(offloaded, host, cc.backward, blocks);
        cc.backward_input += reload;
        cc.backward += reload;
      }
      const schedule::ChunkCollectives& collectives =
          layer_collectives[static_cast<std::size_t>(rank)][static_cast<std::size_t>(c)];
      cc.forward_comm = ring_time(tensor_ring, collectives.forward);
      cc.backward_comm = ring_time(tensor_ring, collectives.backward);
      const Layer& last = layers[static_cast<std::size_t>(range.last - 1)];
      cc.activation_send = Bytes::bytes(last.output_bytes.count() * b / t);
      // With expert parallelism the experts' gradients have replicas of their own (expert-data).
      cc.gradient_bytes = gradient_bytes.dense.at(static_cast<std::size_t>(rank)).at(static_cast<std::size_t>(c));
      cc.expert_gradient_bytes = gradient_bytes.experts.at(static_cast<std::size_t>(rank)).at(static_cast<std::size_t>(c));
      // A software profile's activation_memory factor scales every activation byte alike.
      const auto as_run = [&gpu](Bytes counted) {
        return gpu.activation_memory_factor == 1.0
                   ? counted
                   : Bytes::bytes(std::llround(static_cast<double>(counted.count()) * gpu.activation_memory_factor));
      };
      cc.stashed = as_run(stashed);
      cc.forward_working = as_run(working.forward);
      cc.backward_working = as_run(working.backward);
      cc.stashed_after_input = as_run(kept_for_weight);
      rank_parameters.total += cc.parameters;
      rank_parameters.fp8 += cc.fp8_parameters;
      rank_parameters.expert += cc.expert_parameters;
      rank_parameters.largest_layer = std::max(rank_parameters.largest_layer, cc.largest_layer_parameters);
      rc.chunks.push_back(cc);
    }
    std::int64_t output_table = 0;
    bool holds_table = false;
    for (const ChunkCost& cc : rc.chunks) {
      output_table = std::max(output_table, cc.output_table);
      holds_table = holds_table || cc.holds_table;
    }
    rank_parameters.tied_copy = tied_table_copy(output_table, holds_table);
    StateFormat states = state_format(plan, m.dtype_bytes);
    states.dispatcher_buffers = dispatcher_buffer_bytes(dispatcher_buffer_shape(cluster, m, plan, layout, first));
    rc.optimizer_step = optimizer_step_time(rank_parameters, states, optimizer_pace(m, gpu.memory_bandwidth));
    rc.static_memory = static_memory(rank_parameters, states);
    out.ranks.push_back(std::move(rc));
  }
  return out;
}

Bytes checkpoint_bytes(const model::Model& model, const plan::Plan& plan) noexcept {
  const StateFormat states = state_format(plan, model.dtype_bytes);
  const int master_weights = model.dtype_bytes < kFp32Bytes ? kFp32Bytes : 0;
  return model.parameter_bytes() +
         Bytes::bytes(model.parameters() * (master_weights + optimizer_moment_bytes_per_parameter(states)));
}

}  // namespace mpsim::engine
