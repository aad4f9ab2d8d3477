#pragma once
/// A cluster of several GPU kinds against each kind's nodes alone. Every plan of a mixed cluster uses
/// all its GPUs (a pipeline stage per kind), so where the link between the kinds is slow or a slower
/// kind's memory is small, one kind alone can be faster. `mpsim plan` searches each kind's nodes
/// (topology::Cluster::only_gpu_kind) as it searched the mix and reports them beside the ranking
/// (docs/mixed-clusters.md, "Each kind alone").
#include <string>
#include <vector>

#include "planner/explain.h"
#include "planner/search.h"
#include "sim/model/model.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// One GPU kind of a cluster of several, alone.
struct KindAlone {
  int kind = 0;               ///< index into the mixed cluster's gpu_kinds()
  std::string id;             ///< the kind's catalog id ("h100-sxm")
  std::string name;           ///< its name ("NVIDIA H100 SXM 80GB")
  topology::Cluster cluster;  ///< its nodes alone (Cluster::only_gpu_kind)
};

/// Each kind of the job's GPUs alone, in the order the GPUs show them (Cluster::job_gpu_kinds); empty
/// on a cluster of one kind. O(kinds x (devices + links)).
[[nodiscard]] std::vector<KindAlone> kinds_alone(const topology::Cluster& mixed);

/// The best plan of a kind alone against the mix's best.
struct AgainstMix {
  bool alone_faster = false;  ///< the kind alone's step is shorter than the mix's
  double mix_step_s = 0;      ///< the mix's best step
  double alone_step_s = 0;    ///< the kind alone's best step
  double mix_speedup = 0;     ///< the kind alone's step over the mix's: above 1, the mix is that many times faster
  /// compare() with the faster as the winner: the plan fields that differ (the faster's value first),
  /// both busiest ranks' breakdowns, and the component the slower spends the most more on.
  Comparison comparison;
  int mix_busiest_stage = 0;     ///< the mix's busiest pipeline rank (TimeBreakdown::stage)
  std::string mix_busiest_kind;  ///< the GPU kind (name) that runs it
  /// When the kind alone is faster: why the other kinds slow the job down, from the comparison (which
  /// component of the mix's busiest rank is longer, on which kind, and the plan fields that differ). Empty
  /// when the mix is faster.
  std::string why;
};

/// `mix_best` (the mix's #1 on `mixed`) against `alone_best` (the kind alone's #1 on alone.cluster).
/// Builds both plans' cost models once (O(layers)). Thread-safe.
[[nodiscard]] AgainstMix against_mix(const topology::Cluster& mixed, const Evaluated& mix_best, const KindAlone& alone,
                                     const Evaluated& alone_best, const model::Model& model);

}  // namespace mpsim::planner
