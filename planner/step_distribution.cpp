#include "planner/step_distribution.h"

#include <algorithm>
#include <atomic>
#include <optional>
#include <stdexcept>

#include "planner/thread_pool.h"
#include "sim/engine/route_cache.h"

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
  // One task per (plan, sample), taken in turn by the threads. Each thread keeps one copy of the
  // cluster and sets its speeds again for every task (a task's result depends on its draws alone).
  // Without a link spread the links never change, and a route is a function of the links, so the
  // thread's simulations share the routes they find (route_cache.h): at 1024 GPUs, most of a run.
  const std::size_t tasks = plans.size() * samples;
  std::atomic<std::size_t> next{0};
  const int used = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(effective_threads(threads)), tasks));
  run_on_threads(used, [&](int) {
    topology::Cluster sampled = cluster;
    std::optional<engine::SharedRoutes> routes;
    engine::EngineOptions mine = engine;
    if (request.spread.link == 0) mine.routes = &routes.emplace(sampled);
    for (std::size_t task = next++; task < tasks; task = next++) {
      const std::size_t p = task / samples;
      const std::size_t i = task % samples;
      variability::apply_speed_sample(sampled, cluster,
                                      variability::draw_speed_sample(cluster, request.spread, request.seed, i));
      out[p].step_s[i] = engine::simulate(sampled, model, plans[p], mine).report.step_time_s;
    }
  });
  for (SampledSteps& s : out) s.summary = variability::summarize_steps(s.step_s);
  return out;
}

}  // namespace mpsim::planner
