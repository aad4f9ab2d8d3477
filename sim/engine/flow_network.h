#pragma once
/// Transfers as flows over links, sharing each link direction's bandwidth max-min fairly
/// (SimGrid's LMM, progressive filling). Rates are recomputed, for the flows that share links with
/// it, whenever a flow starts or ends.
///
/// A flow may stand for several identical transfers (the same bytes between other device pairs at
/// the same time: the tensor-parallel ranks of a stage, the edges of a ring, symmetric data-parallel
/// replicas). Its usage lists, per link direction, how many of those transfers cross it; each moves
/// at the flow's rate, so a link direction carries usage x rate.
#include <cstdint>
#include <deque>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "sim/core/units.h"
#include "sim/engine/network_model.h"
#include "sim/topology/cluster.h"
#include "sim/topology/route_table.h"

namespace mpsim::engine {

/// The simulator's network model (NetworkModel, network_model.h).
class FlowNetwork final : public NetworkModel {
 public:
  /// The rate (bytes per ns) a flow over `usage`, capped at `cap` bytes per ns, gets alone on its
  /// links: its tightest link's capacity over its count there, what progressive filling gives it.
  [[nodiscard]] double rate_alone(std::span<const Usage> usage, double cap) const noexcept override;
  explicit FlowNetwork(const topology::Cluster& cluster);
  FlowNetwork(const FlowNetwork&) = delete;
  FlowNetwork& operator=(const FlowNetwork&) = delete;

  /// Starts a flow of `bytes` (per transfer it stands for) at `now`. Returns the flows whose rates
  /// changed (the new one included), in increasing order; their completion times must be
  /// (re)scheduled, and events scheduled for an older version() ignored. The list stays valid until
  /// the next start() or finish().
  /// `usage` must outlive the flow (the simulator passes its cached transfer sets). `rate_cap` bounds
  /// the rate of each transfer the flow stands for, whatever the links leave it (a collective's
  /// achievable bandwidth, collective_tuning.h); infinite by default.
  const std::vector<FlowId>& start(TimeNs now, std::span<const Usage> usage, Bytes bytes,
                                   BytesPerSec rate_cap = kUncapped);
  /// The same, the network keeping `usage`.
  const std::vector<FlowId>& start(TimeNs now, std::vector<Usage>&& usage, Bytes bytes);

  /// Declares every usage a flow will have (`sets`, each merged: sorted, no repeated resource; they
  /// must outlive the network) before the first flow starts; flows then start by set index.
  /// The network groups link directions into classes: directions of equal capacity that every set
  /// crosses the same number of times (or not at all). Members of a class always carry the same
  /// flows, so they share one state: progressive filling runs over classes, and a flow standing for
  /// many replicas costs its number of classes rather than its number of link directions. The rates
  /// are bit-identical to the per-direction computation: a class's members have identical shares at
  /// every step, its first-discovered member decides (the others then carry no unfrozen flow), and the
  /// component search visits the classes in the order in which it would first reach one of their
  /// members (a set's classes ordered by their highest member).
  void use_usage_sets(std::span<const std::span<const Usage>> sets) override;
  /// Starts a flow over declared set `set` (use_usage_sets), as start() above.
  const std::vector<FlowId>& start(TimeNs now, std::uint32_t set, Bytes bytes,
                                   BytesPerSec rate_cap = kUncapped) override;
  /// Ends a finished flow at `now`; returns the flows whose rates changed, as start() does.
  const std::vector<FlowId>& finish(TimeNs now, FlowId flow) override;
  /// When `flow` ends at its current rate (it must be active).
  [[nodiscard]] TimeNs completion(FlowId flow) const override;
  /// Incremented every time the flow's rate changes, to recognise stale completion events.
  [[nodiscard]] std::uint32_t version(FlowId flow) const override { return flows_[flow].version; }

  /// Traffic per link (both directions, every transfer a flow stands for) and time with traffic.
  [[nodiscard]] const std::vector<double>& link_bytes() const noexcept override {
    expand_link_groups();
    return link_bytes_;
  }
  [[nodiscard]] const std::vector<std::int64_t>& link_busy_ns() const noexcept override {
    expand_link_groups();
    return link_busy_ns_;
  }
  [[nodiscard]] std::size_t flows_started() const noexcept override { return flows_.size(); }

 private:
  struct Flow {
    std::span<const Usage> usage;
    double remaining = 0;   // bytes
    double rate = 0;        // bytes per ns
    double cap = 0;         // bytes per ns, the most rate may be (infinite when uncapped)
    std::int64_t updated = 0;  // ns of the last progress update
    std::uint32_t version = 0;
    bool active = false;
    double bytes = 0;
    std::uint32_t set = 0;  // with declared sets: the set's index
  };
  /// With declared sets: links whose two directions are in the same classes (or unused alike) have the
  /// same activity and traffic; one group keeps them. A set's effect on a group, per direction.
  struct GroupUse {
    std::uint32_t group;
    std::uint32_t count[2];  // the set's count on the group's direction 0 and 1; 0 when it does not cross it
    bool crosses[2];
  };
  struct DeclaredSet {
    std::vector<Usage> classes;  // (class, count), by the class's highest member direction
    std::vector<GroupUse> groups;
  };
  void expand_link_groups() const noexcept;
  [[nodiscard]] double state_rate_alone(std::span<const Usage> usage, double cap) const noexcept;
  void progress(FlowId f, std::int64_t now);
  /// Max-min fair rates for the flows connected to seeds_ through shared resources; fills changed_.
  const std::vector<FlowId>& reallocate(std::int64_t now);
  void link_activity(ResourceId r, int delta, std::int64_t now);

  std::vector<double> capacity_;                 // bytes per ns, by resource
  std::vector<double> state_capacity_;           // bytes per ns, by resource or, with declared sets, by class
  std::vector<std::vector<FlowId>> on_resource_; // active flows per resource
  std::vector<Flow> flows_;
  std::deque<std::vector<Usage>> owned_usage_;   // usage handed over by value; deque keeps it in place
  mutable std::vector<double> link_bytes_;
  mutable std::vector<std::int64_t> link_busy_ns_;
  std::vector<int> link_active_;
  std::vector<std::int64_t> link_busy_since_;
  // Scratch for start/finish/reallocate, kept to avoid allocation per event (the planner runs
  // thousands of reallocations per simulation).
  std::vector<ResourceId> seeds_;
  std::vector<FlowId> changed_;
  std::vector<ResourceId> component_resources_;
  std::vector<FlowId> component_flows_;
  std::vector<double> remaining_capacity_;
  std::vector<double> weight_;
  std::vector<std::uint32_t> flows_on_offset_;  // local resource -> first entry in flows_on_
  std::vector<std::uint32_t> flows_on_;         // component flow indices, grouped by local resource
  std::vector<std::uint32_t> fill_cursor_;
  std::vector<char> frozen_;
  std::vector<double> private_limit_;  // component flow -> smallest share of the resources only it crosses
  std::vector<std::uint32_t> touched_mark_;  // local resource -> last saturation round that changed it
  std::vector<std::uint32_t> touched_;
  std::vector<std::pair<double, std::uint32_t>> heap_;  // (share, local resource), a min-heap
  std::vector<std::uint32_t> resource_mark_;
  std::vector<std::uint32_t> flow_mark_;
  std::vector<std::uint32_t> local_index_;  // resource -> index within the component being reallocated
  std::uint32_t epoch_ = 0;
  // Declared sets (use_usage_sets); empty otherwise. capacity_, on_resource_ and the marks are then by class.
  std::vector<DeclaredSet> sets_;
  std::vector<std::uint32_t> link_group_;  // link -> group, UINT32_MAX where no set crosses it
  std::vector<int> group_active_;
  std::vector<std::int64_t> group_busy_since_;
  std::vector<std::int64_t> group_busy_ns_;
  std::vector<double> group_bytes_;
};

}  // namespace mpsim::engine
