#pragma once
/// The planner: enumerate, partition, prune by memory and by a step-time lower bound, simulate the
/// survivors in parallel (branch and bound), rank, and find the speed/memory Pareto front.
///
/// Exactness: memory estimates equal the simulator's peak memory, and the step-time bound never
/// exceeds the simulated step time, so the top K returned are the top K of simulating every feasible
/// candidate (candidates are ordered by (objective, candidate id), the id being the enumeration order).
/// With `exact_pareto` the front also covers every feasible candidate: at `pareto_tolerance` 0 it is
/// their front; above 0, every feasible candidate has a plan on it that needs no more memory and is
/// at most that share slower.
///
/// Determinism: results (everything but SearchStats::search_time_s) do not depend on the thread count:
/// the branch and bound commits results in bound order exactly as a sequential loop would
/// (ordered_search.h).
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "planner/candidate.h"
#include "planner/memory_margin.h"
#include "planner/search_space.h"
#include "sim/engine/simulator.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"
#include "sim/trace/report.h"

namespace mpsim::planner {

/// `mpsim plan`'s default front tolerance (`--pareto near`): plans within 2 % of one another's step
/// are one choice for a user, a third of the smallest median error of the step-time predictions
/// on published runs (docs/validation.md: dense B200 6.0 %), so the front does not simulate plans
/// that could only add points that close to one it has (the DeepSeek-V3 search on 2048 H100 has
/// hundreds of candidates within 1-2 % of one another at 10 GiB: docs/planner.md "Performance").
inline constexpr double kNearParetoTolerance = 0.02;

struct SearchProgress {
  std::size_t candidates = 0;    ///< plans enumerated: specs while estimating, then specs x partitions
  bool simulating = false;       ///< false: estimating the candidates' memory and bounds
  std::size_t evaluated = 0;     ///< simulations committed so far
  std::size_t feasible = 0;      ///< candidates that fit in memory
  double best_step_time_s = 0;   ///< of the best plan so far; 0 before the first
  /// Once the ranking is done, the Pareto front's search goes through candidates by peak memory: the
  /// peak of the last one it committed. Zero while ranking.
  Bytes front_memory;
  double elapsed_s = 0;          ///< since the search began (wall clock; for the progress line only)
};

struct PlannerOptions {
  SearchSpaceOptions space;
  int top = 10;                  ///< K: how many plans are ranked (>= 1)
  int threads = 0;               ///< <= 0: hardware concurrency
  Bytes memory_reserve;          ///< kept free on every GPU
  /// The share of capacity - reserve also kept free (memory_margin.h): a plan fits when its peak is
  /// at most usable_memory(capacity, reserve, margin). 0: none.
  double memory_margin = kDefaultMemoryMargin;
  bool even_partition = true;    ///< also try the even layer split where it differs from the balanced one
  bool bound_pruning = true;     ///< false: simulate every feasible candidate
  bool exact_pareto = true;      ///< also simulate what the Pareto front may need beyond the top K
  /// With exact_pareto: a candidate the front needs is one that may be more than this share faster
  /// than every plan already on it that needs no more memory (0: any faster or as fast).
  double pareto_tolerance = 0;
  engine::EngineOptions engine;  ///< how candidates are simulated (record_timeline is ignored)
  /// Called once the candidates are enumerated (from the calling thread), then after each committed
  /// simulation, one call at a time, from a worker thread.
  std::function<void(const SearchProgress&)> on_progress;
  /// A search divided over processes (`mpirun -n N mpsim plan`): this one searches the candidates whose
  /// id is `shard` modulo `shards`; merge_shards() joins the parts.
  int shard = 0;
  int shards = 1;
  /// The user's framework (`plan --framework`): why it cannot run a resolved plan, or nothing. A refused
  /// candidate is never simulated (counted in pruned_framework). Called from worker threads.
  std::function<std::optional<std::string>(const plan::PlanSpec&, const plan::Plan&)> refuse;
};

/// A candidate ready to simulate: a complete spec (partition included) and its estimates. When its
/// static memory alone is over capacity - reserve (the margin not counted), the estimate holds only that static part (and no
/// bound): it is pruned either way.
struct Prepared {
  std::size_t id = 0;            ///< deterministic order: enumeration order, balanced before even partition
  plan::PlanSpec spec;
  Estimate estimate;
};

struct Evaluated {
  std::size_t id = 0;
  plan::Plan plan;
  trace::Report report;
  Estimate estimate;
};

struct SearchStats {
  std::size_t candidates = 0;      ///< specs x partitions
  std::size_t evaluated = 0;       ///< simulated (committed)
  std::size_t pruned_memory = 0;   ///< peak memory over the usable memory (usable_memory())
  /// Of pruned_memory: the candidates whose peak fits capacity - reserve, over it only by the margin.
  std::size_t within_margin = 0;
  std::size_t pruned_bound = 0;    ///< feasible, but their bound showed they could not make the results
  std::size_t pruned_invalid = 0;  ///< rejected by resolve_plan()
  std::size_t pruned_framework = 0;  ///< refused by PlannerOptions::refuse (a plan the framework cannot run)
  double search_time_s = 0;
  [[nodiscard]] std::size_t pruned() const noexcept {
    return pruned_memory + pruned_bound + pruned_invalid + pruned_framework;
  }
};

struct PlannerResult {
  std::vector<Evaluated> ranked;   ///< best first, at most `top`
  std::vector<Evaluated> pareto;   ///< peak memory ascending
  std::vector<Evaluated> evaluated;  ///< every feasible plan simulated, by id
  SearchStats stats;
  Bytes capacity;                  ///< GPU memory the plans had (before the reserve)
  Bytes usable;                    ///< what a plan's peak may be: capacity less the reserve and the margin
  /// The best plan (by the objective) of those that fit capacity - reserve only without the margin:
  /// not ranked, since its measured peak may be over the memory; the report shows it with a warning
  /// when it beats #1. Searched whole by every shard of a divided search.
  std::optional<Evaluated> within_margin;
  std::string infeasible;          ///< why there is no plan, when `ranked` is empty
};

/// Every candidate of the space, partitioned and estimated, by id. Thread-parallel; deterministic.
/// `routes`: the cluster's routes, shared with the search's simulations; null: its own.
[[nodiscard]] std::vector<Prepared> prepare_candidates(const topology::Cluster& cluster, const model::Model& model,
                                                       const PlannerOptions& options,
                                                       engine::SharedRoutes* routes = nullptr);

/// Runs the search. Thread-safe inputs are only read. Exceptions: only what engine::simulate throws
/// on a bug (std::logic_error).
[[nodiscard]] PlannerResult run_planner(const topology::Cluster& cluster, const model::Model& model,
                                        const PlannerOptions& options);

/// The result of the whole search from its shards' results: `candidates` are every shard's ranked and
/// Pareto plans (duplicates allowed), `stats` their summed counts. Each shard's top K and Pareto front
/// are exact for its candidates, so their union holds the whole space's, and ranking it as run_planner()
/// ranks (objective, then id) gives the one-process result.
[[nodiscard]] PlannerResult merge_shards(std::vector<Evaluated> candidates, const SearchStats& stats,
                                         const PlannerOptions& options);

/// "67.2 GiB (80 GiB less a 16% margin)": what a plan's peak may be on a GPU of `capacity`
/// (`usable`: PlannerResult::usable), and why it is less; the capacity alone without reserve or margin.
[[nodiscard]] std::string usable_memory_text(Bytes capacity, Bytes usable, const PlannerOptions& options);

/// Whether `a` ranks before `b` under objective `o` (as the ranking orders: objective, then id).
[[nodiscard]] bool ranks_before(plan::Objective o, const Evaluated& a, const Evaluated& b);

/// GPU memory a plan may use: the largest GPU kind's capacity.
[[nodiscard]] Bytes gpu_capacity(const topology::Cluster& cluster);

}  // namespace mpsim::planner
