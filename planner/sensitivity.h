#pragma once
/// How fragile a ranked plan is: its step again under two what-ifs a real cluster meets, every network
/// link at half its bandwidth (a congested or degraded fabric) and one GPU 15 % slow (a straggler). A plan
/// that keeps the network busy most of the step, or whose lockstep groups wait on the slowest member,
/// moves; one that hides its communication does not. `plan --robust` ranks by the worse of the two.
#include "planner/search.h"

namespace mpsim::planner {

/// The network links' share of their bandwidth in the first what-if.
inline constexpr double kHalfNetworkShare = 0.5;
/// How much longer the slow GPU's passes take in the second (a 15 % straggler, the figure for a
/// GPU that throttles; PRISM and ByteDance's straggler study see spreads of that order).
inline constexpr double kSlowGpuFactor = 1.15;

struct Sensitivity {
  double half_network_step_s = 0;  ///< every LinkKind::Net link at kHalfNetworkShare of its bandwidth
  double slow_gpu_step_s = 0;      ///< the job's first GPU kSlowGpuFactor slow
  [[nodiscard]] double worse() const noexcept {
    return half_network_step_s > slow_gpu_step_s ? half_network_step_s : slow_gpu_step_s;
  }
};

/// `plan` simulated under both what-ifs on copies of `cluster`.
[[nodiscard]] Sensitivity sensitivity(const topology::Cluster& cluster, const model::Model& model,
                                      const plan::Plan& plan, const engine::EngineOptions& options);

}  // namespace mpsim::planner
