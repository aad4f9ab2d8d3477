#pragma once
/// Where a plan's step time goes, and why one plan beats another.
#include <string>
#include <vector>

#include "planner/search.h"
#include "sim/model/model.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// The step of the pipeline rank that computes the most, split three ways (seconds; they add up to
/// the step time):
/// - compute: its busy time (forward, backward, recomputation, the blocking collectives inside the
///   layers, the optimizer step);
/// - bubble: the idle time its schedule forces even with free communication: the step-time lower
///   bound (lower_bound.h, from the plan's exact chunk times) minus its busy time;
/// - exposed communication: the rest, time spent waiting on pipeline transfers and the gradient
///   reduction that the schedule does not hide.
struct TimeBreakdown {
  int stage = 0;
  double step_s = 0;
  double compute_s = 0;
  double bubble_s = 0;
  double exposed_communication_s = 0;
};

/// Builds the plan's cost model once (O(layers)). Thread-safe.
[[nodiscard]] TimeBreakdown breakdown(const topology::Cluster& cluster, const model::Model& model, const Evaluated& e);

/// How `other` differs from `winner`: the plan fields that differ ("pipeline 8 vs 16"), both
/// breakdowns, and the component whose difference accounts for most of the step-time gap.
struct Comparison {
  std::vector<std::string> differences;
  TimeBreakdown winner;
  TimeBreakdown other;
  std::string main_reason;  ///< e.g. "bubble +0.41 s"; "peak memory +3.2 GiB" when the times tie
};

[[nodiscard]] Comparison compare(const topology::Cluster& cluster, const model::Model& model, const Evaluated& winner,
                                 const Evaluated& other);

/// compare() of two plans on two clusters (a cluster of several GPU kinds and one kind's nodes alone,
/// kind_alone.h): each breakdown on its own plan's cluster.
[[nodiscard]] Comparison compare(const topology::Cluster& winner_cluster, const topology::Cluster& other_cluster,
                                 const model::Model& model, const Evaluated& winner, const Evaluated& other);

}  // namespace mpsim::planner
