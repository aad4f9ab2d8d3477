#pragma once
/// `mpsim plan --catalog FILE --tokens N [--deadline D | --budget X]` (docs/budget.md): which instance
/// type, how many instances and which plan train N tokens cheapest by a deadline, or fastest within a
/// budget; and the frontier of cost against time to train.
///
/// Each instance type is a cost search of its own (cost_search.h): its instance counts are the job
/// sizes, each searched for speed, its fastest plan's run estimated at the type's price per GPU-hour
/// (price per instance-hour / GPUs per instance, so that the run's cost is instances x price x wall
/// hours). At one type and count the fastest plan is also the cheapest (the cost grows with the wall
/// time, which grows with the step), so the best plan of each (type, count) is all the choice and the
/// frontier need.
///
/// With `mix_types`, every pair of types at each pair of their counts is an offer too: a cluster of
/// two GPU kinds (two_instance_cluster(), docs/mixed-clusters.md) priced at the two types' instances
/// together. The choice and the frontier read only an offer's run, so they take mixed offers as any.
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/catalog.h"
#include "planner/cost_search.h"
#include "sim/core/units.h"
#include "sim/training/training_request.h"

namespace mpsim::planner {

/// What the run must keep within; at most one of the two (nothing: the cheapest run).
struct CatalogLimits {
  std::optional<TimeNs> deadline;  ///< the run must end by it; then the cheapest such run is chosen
  std::optional<double> budget;    ///< in the catalogue's currency; then the fastest run within it is chosen
};

/// One instance type at one count (or two types, each at a count), and its best plan's run.
struct CatalogOffer {
  std::size_t instance = 0;  ///< index into Catalog::instances
  int count = 0;             ///< instances
  JobSizeResult job;         ///< its GPUs, fastest plan and run (the run's cost in the catalogue's currency)
  std::optional<std::size_t> second;  ///< a second type (index into Catalog::instances), after `instance`'s nodes
  int second_count = 0;               ///< its instances
};

/// The cluster of an offer: instance_cluster(), or two_instance_cluster() for two types.
[[nodiscard]] topology::Cluster offer_cluster(const Catalog& catalog, const CatalogOffer& offer);

/// An instance type left out of the search, and why (a setting of every plan its GPU cannot run).
struct SkippedInstance {
  std::size_t instance = 0;  ///< index into Catalog::instances
  std::string reason;
};

struct CatalogSearchResult {
  std::vector<CatalogOffer> offers;   ///< by catalogue order, then count ascending
  std::vector<SkippedInstance> skipped;  ///< by catalogue order: types with no offer (nor any pair with them)
  std::vector<std::size_t> frontier;  ///< indices into `offers`: the non-dominated (cost, wall time), cheapest first
  std::optional<std::size_t> chosen;  ///< index into `offers`; nothing: no run within the limits
};

/// The instance counts tried for `available` instances: powers of two below it, and `available` itself
/// (cost_job_sizes' whole-node sizes, counted in instances: one rents whole instances). 12: 1, 2, 4, 8, 12.
/// With `fixed` (plan --instance-counts), those of them within `available` instead, in increasing order,
/// each once.
[[nodiscard]] std::vector<int> instance_counts(int available, const std::vector<int>& fixed = {});

/// The choice among `offers` with a run: with a deadline, the cheapest that ends by it; with a budget,
/// the fastest whose cost is within it; with neither, the cheapest. Ties go to the faster (with a budget:
/// the cheaper), then to the first. Precondition: every run has a cost.
[[nodiscard]] std::optional<std::size_t> choose_offer(const std::vector<CatalogOffer>& offers,
                                                      const CatalogLimits& limits);

/// The offers with a run that no other offer beats on both cost and wall time (one no worse on either
/// and better on one); of equal points, the first. Cheapest first. The choice is always one of them.
[[nodiscard]] std::vector<std::size_t> cost_time_frontier(const std::vector<CatalogOffer>& offers);

/// The type's price per GPU-hour: its price per instance-hour over its GPUs.
[[nodiscard]] double gpu_hour_price(const CatalogInstance& instance);

/// Searches every instance type of `catalog` at each of its instance_counts(available, counts) (and with `mix_types` every
/// pair of types at each pair of counts): `search_of(cluster)` gives the job of the offer's cluster
/// (offer_cluster()), its model and options; the run is `request`'s at the offer's price per GPU-hour
/// (its instances' prices per hour over its GPUs). Then chooses within `limits` and finds the frontier.
/// `request.gpu_hour_price` is ignored (the catalogue prices the runs). A type for whose cluster
/// (one instance) `unusable` gives a reason is skipped (CatalogSearchResult::skipped), its pairs too, and
/// so is a type of which none of the fixed `counts` is available.
[[nodiscard]] CatalogSearchResult run_catalog_search(
    const Catalog& catalog, const std::function<JobSearch(topology::Cluster)>& search_of,
    const training::TrainingRequest& request, const CatalogLimits& limits, bool mix_types = false,
    const std::function<std::optional<std::string>(const topology::Cluster&)>& unusable = {},
    const std::vector<int>& counts = {});

}  // namespace mpsim::planner
