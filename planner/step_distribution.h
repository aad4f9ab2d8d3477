#pragma once
/// A plan's step as a distribution: the plan simulated on N sampled clusters, each GPU and link at its
/// own speed for that step (sim/variability/speed_sample.h). `simulate --samples` and `plan --samples`.
///
/// Sample i's speeds come from (seed, i) alone, and its simulation from its cluster alone (the engine
/// is deterministic), so the step times, and every figure made of them, are the same for any thread
/// count. Every plan meets the same N sampled clusters (common random numbers), so two plans' p95s
/// differ by what the plans do, not by the luck of their draws.
#include <vector>

#include "sim/engine/simulator.h"
#include "sim/variability/speed_sample.h"
#include "sim/variability/step_distribution_summary.h"

namespace mpsim::planner {

struct SampledSteps {
  std::vector<double> step_s;  ///< sample i's step time, in sample order
  variability::StepDistributionSummary summary;
};

/// Each of `plans` on `request.samples` sampled copies of `cluster`, the (plan, sample) simulations spread
/// over `threads` threads (thread_pool.h; <= 0: every core). `options` as for the unsampled run; its
/// timeline, memory timelines, observer, shared routes and step limit are dropped (the sampled copies
/// route their own links). Throws std::invalid_argument without samples.
[[nodiscard]] std::vector<SampledSteps> sample_steps(const topology::Cluster& cluster, const model::Model& model,
                                                     const std::vector<plan::Plan>& plans,
                                                     const engine::EngineOptions& options,
                                                     const variability::SamplingRequest& request, int threads);

}  // namespace mpsim::planner
