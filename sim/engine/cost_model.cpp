#include "sim/engine/cost_model.h"

#include <algorithm>
#include <stdexcept>

#include "sim/plan/plan_check.h"

namespace mpsim::engine {
namespace {

using model::Layer;
using model::LayerKind;
using model::Recompute;

/// What the GPU's matmuls reach at the model's precision (the first listed peak if it has none).
FlopsPerSec effective_peak(const topology::GpuKind& gpu, int dtype_bytes) {
  return gpu.training_peak(dtype_bytes).value_or(gpu.peak.begin()->second) * gpu.matmul_efficiency;
}

}  // namespace

RingProfile ring_profile(topology::RouteFinder& routes, const std::vector<topology::DeviceId>& devices) {
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
  for (const schedule::LayerCollective& c : collectives) total += ring_time(ring, c.kind, c.bytes) * c.count;
  return total;
}

Bytes static_memory_bytes(std::int64_t parameters, int dtype_bytes, int zero, int data) noexcept {
  const std::int64_t optimizer_parameters = zero >= 1 ? (parameters + data - 1) / data : parameters;
  const std::int64_t weights = (zero >= 3 ? parameters / data : parameters) * dtype_bytes;
  const std::int64_t gradients = (zero >= 2 ? parameters / data : parameters) * kGradientBytesPerParameter;
  return Bytes::bytes(weights + gradients + optimizer_parameters * kOptimizerBytesPerParameter);
}

TimeNs optimizer_step_time(std::int64_t parameters, int zero, int data, BytesPerSec memory_bandwidth) noexcept {
  const std::int64_t optimizer_parameters = zero >= 1 ? (parameters + data - 1) / data : parameters;
  return transfer_time(Bytes::bytes(optimizer_parameters * kOptimizerTrafficBytesPerParameter), memory_bandwidth);
}

Bytes attention_score_bytes(const model::Layer& layer, int micro_batch, int tensor) noexcept {
  return Bytes::bytes(layer.stashed.attention_scores.count() * micro_batch / tensor);
}

CostModel build_cost_model(const topology::Cluster& cluster, const model::Model& m, const plan::Plan& plan,
                           const plan::Layout& layout) {
  const auto ranges = plan::virtual_stage_layers(plan, m);
  const auto layer_collectives = schedule::chunk_layer_collectives(m, plan);
  const int t = plan.tensor;
  const int b = plan.micro_batch;
  CostModel out;
  topology::RouteFinder routes(cluster);
  for (int rank = 0; rank < plan.pipeline; ++rank) {
    const auto tensor_ranks = layout.group(layout.with(0, plan::Axis::Pipeline, rank), plan::Axis::Tensor);
    std::vector<topology::DeviceId> tensor_devices;
    for (const int r : tensor_ranks) tensor_devices.push_back(cluster.gpus().at(static_cast<std::size_t>(r)));
    const topology::GpuKind& gpu = cluster.gpu_kind_of(tensor_devices.front());
    const FlopsPerSec peak = effective_peak(gpu, m.dtype_bytes);
    const RingProfile tensor_ring = ring_profile(routes, tensor_devices);
    RankCost rc;
    rc.memory_capacity = gpu.memory;
    std::int64_t rank_parameters = 0;
    for (int c = 0; c < plan.virtual_stages; ++c) {
      const int vs = c * plan.pipeline + rank;
      const plan::LayerRange range = ranges.at(static_cast<std::size_t>(vs));
      ChunkCost cc;
      Flops f, bi, bw, recompute;
      Bytes stashed, stashed_scores, elementwise;
      TimeNs profiled_f, profiled_bi, profiled_bw;
      bool all_profiled_f = true, all_profiled_b = true;
      for (int li = range.first; li < range.last; ++li) {
        const Layer& layer = m.layers[static_cast<std::size_t>(li)];
        const double per_rank = static_cast<double>(b) / t;
        f += layer.forward_flops * per_rank;
        bi += layer.backward_input_flops * per_rank;
        bw += layer.backward_weight_flops * per_rank;
        recompute += model::recomputed_flops(m, layer, plan.recompute) * per_rank;
        cc.parameters += layer.parameters / t;
        stashed += model::stashed_activation_bytes(layer, b, t, plan.sequence_parallel, plan.recompute);
        stashed_scores += attention_score_bytes(layer, b, t);
        // Memory-bound work beside the matmuls (norms, softmax, dropout, activations, residuals): every
        // activation a pass produces is written once and read once.
        elementwise += model::stashed_activation_bytes(layer, b, t, plan.sequence_parallel, Recompute::None) * 2;
        all_profiled_f = all_profiled_f && layer.forward_time.has_value();
        all_profiled_b = all_profiled_b && layer.backward_input_time.has_value() && layer.backward_weight_time.has_value();
        profiled_f += layer.forward_time.value_or(TimeNs{});
        profiled_bi += layer.backward_input_time.value_or(TimeNs{});
        profiled_bw += layer.backward_weight_time.value_or(TimeNs{});
      }
      const TimeNs memory_bound = transfer_time(elementwise, gpu.memory_bandwidth);
      const TimeNs forward = all_profiled_f ? profiled_f : compute_time(f, peak) + memory_bound;
      cc.forward = forward;
      // Recomputation runs before the input-gradient pass: all of the forward (full), or the attention
      // scores' matmuls and their softmax/dropout traffic (selective).
      TimeNs recompute_time;
      if (plan.recompute == Recompute::Full) {
        recompute_time = forward;
      } else if (plan.recompute == Recompute::Selective) {
        recompute_time = compute_time(recompute, peak) + transfer_time(stashed_scores * 2, gpu.memory_bandwidth);
      }
      if (all_profiled_b) {
        cc.backward_input = profiled_bi + recompute_time;
        cc.backward_weight = profiled_bw;
      } else {
        cc.backward_input = compute_time(bi, peak) + memory_bound + recompute_time;
        cc.backward_weight = compute_time(bw, peak);
      }
      cc.backward = cc.backward_input + cc.backward_weight;
      const schedule::ChunkCollectives& collectives =
          layer_collectives[static_cast<std::size_t>(rank)][static_cast<std::size_t>(c)];
      cc.forward_comm = ring_time(tensor_ring, collectives.forward);
      cc.backward_comm = ring_time(tensor_ring, collectives.backward);
      const Layer& last = m.layers[static_cast<std::size_t>(range.last - 1)];
      cc.activation_send = Bytes::bytes(last.output_bytes.count() * b / t);
      cc.gradient_bytes = Bytes::bytes(cc.parameters * kGradientBytesPerParameter);
      cc.stashed = stashed;
      // A split backward frees the attention scores at I and keeps the matmul inputs until W.
      cc.stashed_after_input = kept_after_input(stashed, stashed_scores);
      rank_parameters += cc.parameters;
      rc.chunks.push_back(cc);
    }
    const int dp = plan.data;
    rc.optimizer_step = optimizer_step_time(rank_parameters, plan.zero, dp, gpu.memory_bandwidth);
    rc.static_memory = static_memory_bytes(rank_parameters, m.dtype_bytes, plan.zero, dp);
    out.ranks.push_back(std::move(rc));
  }
  return out;
}

}  // namespace mpsim::engine
