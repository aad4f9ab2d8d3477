#include "planner/step_distribution.h"

#include <stdexcept>

#include "planner/thread_pool.h"

namespace mpsim::planner {

std::vector<SampledSteps> sample_steps(const topology::Cluster& cluster, const model::Model& model,
                                       const std::vector<plan::Plan>& plans, const engine::EngineOptions& options,
                                       const variability::SamplingRequest& request, int threads) {
  if (request.samples <= 0) throw std::invalid_argument("sample_steps: no samples asked for");
  engine::EngineOptions engine = options;
  engine.record_timeline = false;
  engine.timeline_links.clear();
  engine.record_memory_timeline = false;
  engine.observer = nullptr;
  engine.routes = nullptr;
  engine.step_limit.reset();
  const auto samples = static_cast<std::size_t>(request.samples);
  std::vector<SampledSteps> out(plans.size());
  for (SampledSteps& s : out) s.step_s.assign(samples, 0.0);
  // One task per (plan, sample): a sample's cluster is drawn again for each plan, which costs little
  // beside a simulation and keeps the tasks independent.
  parallel_for(plans.size() * samples, threads, [&](std::size_t task) {
    const std::size_t p = task / samples;
    const std::size_t i = task % samples;
    const topology::Cluster sampled = variability::with_speed_sample(
        cluster, variability::draw_speed_sample(cluster, request.spread, request.seed, i));
    out[p].step_s[i] = engine::simulate(sampled, model, plans[p], engine).report.step_time_s;
  });
  for (SampledSteps& s : out) s.summary = variability::summarize_steps(s.step_s);
  return out;
}

}  // namespace mpsim::planner
