#pragma once
/// Collectives as rounds of concurrent point-to-point transfers over the real links (NCCL's ring,
/// tree and NVLS algorithms, and a hierarchical one). Each round's transfers run together; the next round starts when
/// the slowest has finished, as in a ring where every rank waits for its neighbour. A phase is a
/// run of identical rounds (the 2(n-1) steps of a ring all-reduce); the simulator moves it as one
/// flow of `rounds` x `bytes` with `rounds` x the route latency, which is exact when the phase's
/// contention does not change between rounds and saves 2(n-1) reallocations per collective.
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/core/traits_table.h"
#include "sim/core/units.h"
#include "sim/plan/layout.h"
#include "sim/schedule/program.h"
#include "sim/topology/cluster.h"

namespace mpsim::model {
struct Model;
}  // namespace mpsim::model

namespace mpsim::engine {

enum class CollectiveAlgorithm : std::uint8_t {
  Auto,          ///< the candidate NCCL's tuner would pick: the fastest on idle links (choose_algorithm)
  Ring,          ///< rail-aligned rings, one channel per member a node holds (ring_channels)
  Tree,          ///< binary tree: reduce to the root, then broadcast, pipelined (NCCL's tree, one tree)
  Hierarchical,  ///< intra-node reduce-scatter, inter-node all-reduce, intra-node all-gather
  Nvls,          ///< NVLink SHARP all-reduce inside one NVSwitch node: the switch reduces and multicasts
};
struct CollectiveAlgorithmTraits {
  CollectiveAlgorithm kind;
  std::string_view name;  ///< `mpsim simulate --collective`'s word
};
/// One row per CollectiveAlgorithm, in the enum's order (`--collective` lists them so).
inline constexpr std::array<CollectiveAlgorithmTraits, 5> kCollectiveAlgorithmTraits{{
    {CollectiveAlgorithm::Auto, "auto"},
    {CollectiveAlgorithm::Ring, "ring"},
    {CollectiveAlgorithm::Tree, "tree"},
    {CollectiveAlgorithm::Hierarchical, "hierarchical"},
    {CollectiveAlgorithm::Nvls, "nvls"},
}};
static_assert(core::rows_in_enum_order(kCollectiveAlgorithmTraits),
              "kCollectiveAlgorithmTraits: one row per CollectiveAlgorithm, in the enum's order");
[[nodiscard]] constexpr std::string_view to_string(CollectiveAlgorithm a) noexcept {
  return kCollectiveAlgorithmTraits[static_cast<std::size_t>(a)].name;
}
inline constexpr auto kCollectiveAlgorithmNames =
    core::column_words<kCollectiveAlgorithmTraits, &CollectiveAlgorithmTraits::name>();

enum class CollectiveKind : std::uint8_t { AllReduce, ReduceScatter, AllGather, AllToAll };
struct CollectiveTraits {
  CollectiveKind kind;
  schedule::OpKind op;  ///< the Program op that runs it
};
/// One row per CollectiveKind, in the enum's order; every OpClass::Collective op has one.
inline constexpr std::array<CollectiveTraits, 4> kCollectiveTraits{{
    {CollectiveKind::AllReduce, schedule::OpKind::AllReduce},
    {CollectiveKind::ReduceScatter, schedule::OpKind::ReduceScatter},
    {CollectiveKind::AllGather, schedule::OpKind::AllGather},
    {CollectiveKind::AllToAll, schedule::OpKind::AllToAll},
}};
static_assert(core::rows_in_enum_order(kCollectiveTraits),
              "kCollectiveTraits: one row per CollectiveKind, in the enum's order");
/// Every collective op runs exactly one collective, and only those do.
[[nodiscard]] consteval bool collectives_match_ops() {
  for (const schedule::OpTraits& op : schedule::kOpTraits) {
    int rows = 0;
    for (const CollectiveTraits& c : kCollectiveTraits) rows += c.op == op.kind ? 1 : 0;
    if (rows != (op.op_class == schedule::OpClass::Collective ? 1 : 0)) return false;
  }
  return true;
}
static_assert(collectives_match_ops(), "kCollectiveTraits: one row per collective op kind");
/// The collective a Program op runs. Precondition: schedule::is_collective(k).
[[nodiscard]] constexpr CollectiveKind collective_kind(schedule::OpKind k) noexcept {
  for (const CollectiveTraits& c : kCollectiveTraits) {
    if (c.op == k) return c.kind;
  }
  return CollectiveKind::AllReduce;
}

/// The groups a collective over `axes` runs on at once for the GPUs `members` (global ranks) stand
/// for: the group of each member, once each, in the members' order, as devices. An actor's in-layer
/// collective and a pipeline rank's gradient sync both take theirs from here.
[[nodiscard]] std::vector<std::vector<topology::DeviceId>> device_groups(const topology::Cluster& cluster,
                                                                         const plan::Layout& layout,
                                                                         const std::vector<int>& members,
                                                                         plan::AxisSet axes);

struct CollectiveRound {
  std::vector<std::pair<topology::DeviceId, topology::DeviceId>> transfers;
  Bytes bytes;       ///< per transfer and round
  int rounds = 1;    ///< identical rounds in this phase
  bool nvls = false; ///< an NVLS phase: its transfers reach kNvlsEfficiency of their routes (collective_tuning.h)
};

/// What a deduplicating token dispatcher (plan::MoeDispatcher DeepEp, HybridEp) needs to know of the
/// routing: the routed experts, spread evenly over the expert group's members, and each token's top_k
/// (distinct, uniformly routed) experts.
struct TokenRouting {
  std::int64_t experts = 0;
  int top_k = 1;
};

/// The routing of `model`'s expert all-to-alls when `plan`'s dispatcher deduplicates tokens; none
/// otherwise (the all-to-all dispatcher sends every copy).
[[nodiscard]] std::optional<TokenRouting> token_routing(const model::Model& model, const plan::Plan& plan);
/// `routing` for an all-to-all over the expert group, else null.
[[nodiscard]] const TokenRouting* expert_routing(const std::optional<TokenRouting>& routing, CollectiveKind kind,
                                                 plan::AxisSet group) noexcept;

/// The probability that a token's top_k distinct experts, drawn uniformly from `experts`, include at
/// least one of `held` of them: 1 - C(experts - held, top_k) / C(experts, top_k).
[[nodiscard]] double token_hit_fraction(std::int64_t experts, int top_k, std::int64_t held) noexcept;

/// The rings of a ring collective over `group`, NCCL's channels. A group inside one node, or whose
/// nodes hold different numbers of its members, is one ring in the group's order. A group with k
/// members on each of several nodes gets k rings, each carrying 1/k of the buffer (so every NIC of the
/// group's rails carries a share, as NCCL's channels do): ring c visits the nodes in order, the
/// node's members by local index rotated by c, reversed on every other node, so that each hop between
/// nodes joins two GPUs of the same local index, i.e. of the same rail (all of them when the node
/// count is even; the closing hop of an odd count crosses rails).
[[nodiscard]] std::vector<std::vector<topology::DeviceId>> ring_channels(const topology::Cluster& cluster,
                                                                         const std::vector<topology::DeviceId>& group);

/// The algorithms Auto chooses among for a `kind` collective over `groups`, in order of preference
/// on a tie: ring always; NVLS for an all-reduce whose groups are nvls_eligible(); tree for an
/// all-reduce whose groups span nodes (NCCL's tree is inter-node).
[[nodiscard]] std::vector<CollectiveAlgorithm> auto_candidates(const topology::Cluster& cluster, CollectiveKind kind,
                                                               const std::vector<std::vector<topology::DeviceId>>& groups);

/// The phases of a collective of `size` bytes per member over each of `groups` (groups run at the
/// same time, e.g. one data-parallel group per tensor-parallel rank). Ring all-reduce: 2(n-1) rounds
/// of size/(n c) over the c rings of ring_channels(); reduce-scatter and all-gather: n-1 rounds.
/// NVLS all-reduce: two rounds (reduce, multicast) in which each member sends size (n+1)/(2n) to its
/// neighbour's switch port, the traffic NVLS puts on each GPU's switch links. Auto is resolved by the
/// caller (choose among auto_candidates()); here it means ring. Tree all-reduce: the whole buffer flows up a
/// binary tree and back down, pipelined, so each phase pays one latency per tree level and moves
/// `size` over every tree edge (NCCL's tree is bandwidth-bound like this and wins on latency for small
/// buffers). Reduce-scatter and all-gather have no tree or NVLS form and run as rings. All-to-all
/// (NCCL's grouped sends and receives) is one phase in which every member sends size/n to each other
/// member at once, whatever the algorithm; with `routing` (the expert all-to-alls of a deduplicating
/// dispatcher) it is token_dispatch_rounds().
[[nodiscard]] std::vector<CollectiveRound> collective_rounds(const topology::Cluster& cluster, CollectiveKind kind,
                                                             CollectiveAlgorithm algorithm,
                                                             const std::vector<std::vector<topology::DeviceId>>& groups,
                                                             Bytes size, const TokenRouting* routing = nullptr);

/// A dispatch (or combine) of `size` bytes of routed token copies per member as DeepEP and HybridEP
/// run it: a token goes once to each node holding one of its experts, over the rail to the member of
/// the same local index (a first phase: (size / top_k) x token_hit_fraction of that node's experts to
/// every other node's member), then once to each GPU of the node holding one of its experts (a second
/// phase inside each node: every member forwards, for its own tokens and those of the other nodes'
/// members of its rail, (size / top_k) x token_hit_fraction of one member's experts to each other
/// member). A group inside one node has the second phase alone. A group whose nodes hold different
/// numbers of its members sends every token once per GPU in one phase, as inside a node.
[[nodiscard]] std::vector<CollectiveRound> token_dispatch_rounds(
    const topology::Cluster& cluster, const std::vector<std::vector<topology::DeviceId>>& groups, Bytes size,
    const TokenRouting& routing);

}  // namespace mpsim::engine
