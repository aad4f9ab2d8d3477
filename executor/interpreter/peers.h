#pragma once
/// Which ranks a rank exchanges point-to-point messages with when it runs a plan: its pipeline
/// neighbours (the previous and next virtual stage's ranks of its own tensor, data, context and
/// expert position), found from the schedule's Send and Recv ops, and under cp_comm_type p2p its
/// neighbours on the context ring. A backend needs a channel to these
/// only (BackendOptions::peers); collectives have groups of their own, and the executor's gathers on
/// rank 0 go over the host (Backend::host_send).
#include <vector>

#include "sim/plan/plan.h"

namespace mpsim::executor {

/// The world ranks `world_rank` sends to or receives from under `plan`, ascending, without itself.
/// O(its stream's ops).
[[nodiscard]] std::vector<int> point_to_point_peers(const plan::Plan& plan, int world_rank);

}  // namespace mpsim::executor
