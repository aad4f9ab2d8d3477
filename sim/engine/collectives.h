#pragma once
/// Collectives as rounds of concurrent point-to-point transfers over the real links (NCCL's ring
/// and hierarchical algorithms). Each round's transfers run together; the next round starts when
/// the slowest has finished, as in a ring where every rank waits for its neighbour. A phase is a
/// run of identical rounds (the 2(n-1) steps of a ring all-reduce); the simulator moves it as one
/// flow of `rounds` x `bytes` with `rounds` x the route latency, which is exact when the phase's
/// contention does not change between rounds and saves 2(n-1) reallocations per collective.
#include <cstdint>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/units.h"
#include "sim/plan/layout.h"
#include "sim/schedule/program.h"
#include "sim/topology/cluster.h"

namespace mpsim::engine {

enum class CollectiveAlgorithm : std::uint8_t {
  Auto,          ///< hierarchical when the group spans nodes with several members per node, else ring
  Ring,
  Tree,          ///< binary tree: reduce to the root, then broadcast, pipelined (NCCL's tree, one tree)
  Hierarchical,  ///< intra-node reduce-scatter, inter-node all-reduce, intra-node all-gather
};
[[nodiscard]] std::string_view to_string(CollectiveAlgorithm a) noexcept;

enum class CollectiveKind : std::uint8_t { AllReduce, ReduceScatter, AllGather };
/// The collective a Program op runs. Precondition: schedule::is_collective(k).
[[nodiscard]] CollectiveKind collective_kind(schedule::OpKind k) noexcept;

/// The groups a collective over `axes` runs on at once for the GPUs `members` (global ranks) stand
/// for: the group of each member, once each, in the members' order, as devices. An actor's in-layer
/// collective and a pipeline rank's gradient sync both take theirs from here.
[[nodiscard]] std::vector<std::vector<topology::DeviceId>> device_groups(const topology::Cluster& cluster,
                                                                         const plan::Layout& layout,
                                                                         const std::vector<int>& members,
                                                                         plan::AxisSet axes);

struct CollectiveRound {
  std::vector<std::pair<topology::DeviceId, topology::DeviceId>> transfers;
  Bytes bytes;     ///< per transfer and round
  int rounds = 1;  ///< identical rounds in this phase
};

/// The phases of a collective of `size` bytes per member over each of `groups` (groups run at the
/// same time, e.g. one data-parallel group per tensor-parallel rank). Ring all-reduce: 2(n-1) rounds
/// of size/n; reduce-scatter and all-gather: n-1 rounds. Tree all-reduce: the whole buffer flows up a
/// binary tree and back down, pipelined, so each phase pays one latency per tree level and moves
/// `size` over every tree edge (NCCL's tree is bandwidth-bound like this and wins on latency for small
/// buffers). Reduce-scatter and all-gather have no tree form and run as rings.
[[nodiscard]] std::vector<CollectiveRound> collective_rounds(const topology::Cluster& cluster, CollectiveKind kind,
                                                             CollectiveAlgorithm algorithm,
                                                             const std::vector<std::vector<topology::DeviceId>>& groups,
                                                             Bytes size);

}  // namespace mpsim::engine
