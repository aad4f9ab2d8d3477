#include "planner/sensitivity.h"

namespace mpsim::planner {

Sensitivity sensitivity(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
                        const engine::EngineOptions& options) {
  engine::EngineOptions engine = options;
  engine.record_timeline = false;
  engine.routes = nullptr;  // the what-if clusters route (and price) their own links
  Sensitivity out;
  topology::Cluster slow_network = cluster;
  for (std::size_t i = 0; i < cluster.links().size(); ++i) {
    const topology::Link& link = cluster.links()[i];
    if (link.kind != topology::LinkKind::Net) continue;
    slow_network.set_link_rate(topology::LinkId{static_cast<std::uint32_t>(i)},
                               BytesPerSec::bytes_per_sec(link.bandwidth.in_bytes_per_sec() * kHalfNetworkShare),
                               link.latency);
  }
  out.half_network_step_s = engine::simulate(slow_network, model, plan, engine).report.step_time_s;
  topology::Cluster slow_gpu = cluster;
  if (!cluster.gpus().empty()) slow_gpu.set_slowdown(cluster.gpus().front(), kSlowGpuFactor);
  out.slow_gpu_step_s = engine::simulate(slow_gpu, model, plan, engine).report.step_time_s;
  return out;
}

}  // namespace mpsim::planner
