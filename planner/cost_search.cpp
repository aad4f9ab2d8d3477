#include "planner/cost_search.h"

#include <algorithm>

#include "sim/engine/training_step.h"

namespace mpsim::planner {

std::vector<int> cost_job_sizes(int gpus, int nodes, std::optional<int> fixed) {
  if (fixed) return {*fixed};
  nodes = std::max(1, nodes);
  const int per_node = gpus / nodes;
  std::vector<int> sizes;
  if (nodes == 1) {
    for (int n = 1; n < gpus; n *= 2) sizes.push_back(n);
  } else {
    for (int k = 1; k < nodes; k *= 2) sizes.push_back(k * per_node);
  }
  sizes.push_back(gpus);
  return sizes;
}

std::optional<std::size_t> cheapest_job_size(const std::vector<JobSizeResult>& sizes, std::optional<TimeNs> deadline) {
  std::optional<std::size_t> chosen;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    const JobSizeResult& s = sizes[i];
    if (!s.run || (deadline && s.run->wall_time > *deadline)) continue;
    if (!chosen || s.run->gpu_hours < sizes[*chosen].run->gpu_hours) chosen = i;
  }
  return chosen;
}

CostSearchResult run_cost_search(const std::vector<int>& sizes, const std::function<JobSearch(int gpus)>& search_of,
                                 const training::TrainingRequest& request, std::optional<TimeNs> deadline) {
  CostSearchResult out;
  for (const int n : sizes) {
    const JobSearch job = search_of(n);
    const PlannerResult result = run_planner(job.cluster, job.model, job.options);
    JobSizeResult size{n, {}, {}, result.infeasible};
    if (!result.ranked.empty()) {
      size.best = result.ranked.front();
      size.run = training::estimate_request(
          request, engine::training_step(job.cluster, job.model, size.best->plan, size.best->report));
    }
    out.sizes.push_back(std::move(size));
  }
  out.chosen = cheapest_job_size(out.sizes, deadline);
  return out;
}

}  // namespace mpsim::planner
