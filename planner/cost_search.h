#pragma once
/// `mpsim plan --optimize cost`: the job size whose --tokens run costs the fewest GPU-hours. At one
/// job size the fastest plan is the cheapest (GPU-hours grow with the step), so each size is searched
/// for speed and its best plan's run estimated (sim/training/training_request.h).
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/search.h"
#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/topology/cluster.h"
#include "sim/training/training_estimate.h"
#include "sim/training/training_request.h"

namespace mpsim::planner {

/// The search of a job of some GPUs: its cluster (cut to them), model and options.
struct JobSearch {
  topology::Cluster cluster;
  model::Model model;
  PlannerOptions options;
};

/// One job size tried.
struct JobSizeResult {
  int gpus = 0;
  std::optional<Evaluated> best;                  ///< its fastest plan; nothing: none fits
  std::optional<training::TrainingEstimate> run;  ///< `best`'s run
  std::string infeasible;                         ///< why no plan fits, when `best` is empty
};

struct CostSearchResult {
  std::vector<JobSizeResult> sizes;   ///< in the order tried
  std::optional<std::size_t> chosen;  ///< index into `sizes`; nothing: no size's run ends by the deadline
};

/// The job sizes to try on a cluster of `gpus` GPUs in `nodes` nodes: `fixed` alone when given; else
/// whole nodes in powers of two below the cluster's and all of them, or on one node powers of two
/// below its GPUs and all of them (4 x 8 GPUs: 8, 16, 32; one node of 8: 1, 2, 4, 8).
[[nodiscard]] std::vector<int> cost_job_sizes(int gpus, int nodes, std::optional<int> fixed);

/// The size with the fewest GPU-hours among those with a run that ends by `deadline` (any, without
/// one); the first of equals.
[[nodiscard]] std::optional<std::size_t> cheapest_job_size(const std::vector<JobSizeResult>& sizes,
                                                           std::optional<TimeNs> deadline);

/// Searches each of `sizes` (`search_of(gpus)` gives its cluster, model and options), estimates the
/// best plan's run as `request` asks, and chooses the cheapest that ends by `deadline`.
[[nodiscard]] CostSearchResult run_cost_search(const std::vector<int>& sizes,
                                               const std::function<JobSearch(int gpus)>& search_of,
                                               const training::TrainingRequest& request,
                                               std::optional<TimeNs> deadline);

}  // namespace mpsim::planner
