#pragma once
/// One data-parallel replica's part of a plan with uneven batch shares (Plan::replica_microbatches):
/// the plan its schedule is generated from, and where its microbatches sit in the global batch. The
/// simulator builds each replica class's program from replica_plan(), and the executor each rank's.

#include <cstdint>

#include "sim/plan/plan.h"

namespace mpsim::plan {

/// The plan replica `replica` (a data-parallel rank) runs: `plan` with its share as `microbatches`,
/// so that the schedule's generator emits the replica's own count. replica_microbatches stays, so the
/// whole step's batch (micro_batch x their sum) is still read from it. Even shares: `plan` itself.
[[nodiscard]] inline Plan replica_plan(const Plan& plan, int replica) {
  Plan share = plan;
  share.microbatches = plan.microbatches_of_replica(replica);
  return share;
}

/// The index in the step's global batch (in microbatches, over every replica) of replica `replica`'s
/// first microbatch: the shares of the replicas before it. Replica d holds microbatches
/// [first, first + microbatches_of_replica(d)), so the same global batch is seen however it is split.
[[nodiscard]] inline std::int64_t first_microbatch_of_replica(const Plan& plan, int replica) {
  std::int64_t first = 0;
  for (int d = 0; d < replica; ++d) first += plan.microbatches_of_replica(d);
  return first;
}

/// The microbatches of one step over every replica: microbatches x data (the plan check holds the
/// shares to that sum). Each microbatch's mean loss is weighted 1 / this in the global mean, whatever
/// its replica's share.
[[nodiscard]] inline std::int64_t step_microbatches(const Plan& plan) {
  return static_cast<std::int64_t>(plan.microbatches) * plan.degrees[Axis::Data];
}

}  // namespace mpsim::plan
