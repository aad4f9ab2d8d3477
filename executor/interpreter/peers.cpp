#include "executor/interpreter/peers.h"

#include <algorithm>

#include "sim/plan/layout.h"
#include "sim/plan/replica_share.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/passes.h"

namespace mpsim::executor {

std::vector<int> point_to_point_peers(const plan::Plan& plan, int world_rank) {
  const plan::Layout layout(plan);
  // The rank's replica's schedule (its own microbatch count when the shares are uneven).
  const int replica = layout.coordinate(world_rank, plan::Axis::Data);
  const schedule::Program program = schedule::lower_comm(schedule::compute_program(plan::replica_plan(plan, replica)));
  const int stage = layout.coordinate(world_rank, plan::Axis::Pipeline);
  std::vector<int> peers;
  for (const schedule::Op& op : program.streams.at(static_cast<std::size_t>(stage))) {
    if (!schedule::is_send(op.kind) && !schedule::is_recv(op.kind)) continue;
    peers.push_back(layout.with(world_rank, plan::Axis::Pipeline, static_cast<int>(op.peer)));
  }
  // The context ring (cp_comm_type p2p) passes keys and values to the next context rank.
  if (plan.degrees[plan::Axis::Context] > 1 && plan.context_comm == plan::ContextComm::P2p) {
    const int me = layout.coordinate(world_rank, plan::Axis::Context);
    peers.push_back(layout.with(world_rank, plan::Axis::Context, (me + 1) % plan.degrees[plan::Axis::Context]));
    peers.push_back(layout.with(world_rank, plan::Axis::Context,
                                (me + plan.degrees[plan::Axis::Context] - 1) % plan.degrees[plan::Axis::Context]));
  }
  std::sort(peers.begin(), peers.end());
  peers.erase(std::unique(peers.begin(), peers.end()), peers.end());
  return peers;
}

}  // namespace mpsim::executor
