#pragma once
/// What the simulation asks of the network, and nothing more: the one interface between the event loop
/// (simulator.cpp) and a model of how transfers share links, as ASTRA-sim's network backends and
/// SimGrid's network models are. The simulation declares every set of link directions its transfers
/// will cross, starts a flow of some bytes over one of them, and learns when each flow ends; a model
/// decides the rates. FlowNetwork (flow_network.h, max-min fair sharing) is the model the simulator
/// runs; make_network_model() builds it. docs/simulator.md, section "The network model", says how to
/// add another.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "sim/core/units.h"
#include "sim/topology/cluster.h"
#include "sim/topology/route_table.h"

namespace mpsim::engine {

/// A link direction: link * 2 + (0 for a->b, 1 for b->a); a half-duplex link uses direction 0 for both.
using ResourceId = std::uint32_t;
/// How many of the transfers a flow stands for cross one link direction.
struct Usage {
  ResourceId resource;
  std::uint32_t count;
};

/// Appends the link directions of `route` to `usage`; merge_usage() then sums repeated directions.
void add_route_usage(const topology::Cluster& cluster, const topology::Route& route, std::vector<Usage>& usage);
/// Sorts by resource and sums the counts of repeated resources.
void merge_usage(std::vector<Usage>& usage);

/// A flow stands for one or more identical transfers at the same time (a collective's round, the
/// replicas of a stage); its usage counts them per link direction.
class NetworkModel {
 public:
  using FlowId = std::uint32_t;
  static constexpr BytesPerSec kUncapped = BytesPerSec::bytes_per_sec(std::numeric_limits<double>::infinity());

  NetworkModel() = default;
  NetworkModel(const NetworkModel&) = delete;
  NetworkModel& operator=(const NetworkModel&) = delete;
  virtual ~NetworkModel() = default;

  /// Declares every usage a flow will have (`sets`, each merged: sorted, no repeated resource; they
  /// must outlive the model), before the first flow starts.
  virtual void use_usage_sets(std::span<const std::span<const Usage>> sets) = 0;
  /// Starts a flow of `bytes` per transfer over declared set `set` at `now`, each transfer at most
  /// `rate_cap` (kUncapped: what the links leave it). Flows are numbered in the order they start.
  /// Returns the flows whose rates changed (the new one included), in increasing order: their
  /// completion() must be (re)scheduled, and an event for an older version() ignored. The list stays
  /// valid until the next start() or finish().
  virtual const std::vector<FlowId>& start(TimeNs now, std::uint32_t set, Bytes bytes, BytesPerSec rate_cap) = 0;
  /// Ends a finished flow at `now`; returns the flows whose rates changed, as start() does.
  virtual const std::vector<FlowId>& finish(TimeNs now, FlowId flow) = 0;
  /// When `flow` ends at its current rate (it must be active).
  [[nodiscard]] virtual TimeNs completion(FlowId flow) const = 0;
  /// Changes every time the flow's rate changes, to recognise stale completion events.
  [[nodiscard]] virtual std::uint32_t version(FlowId flow) const = 0;
  /// The rate (bytes per ns) a flow over `usage`, capped at `cap` bytes per ns, gets alone on the network.
  [[nodiscard]] virtual double rate_alone(std::span<const Usage> usage, double cap) const noexcept = 0;
  /// Flows started so far (the next one's id).
  [[nodiscard]] virtual std::size_t flows_started() const noexcept = 0;
  /// Traffic per link (both directions, every transfer a flow stands for) and time with traffic.
  [[nodiscard]] virtual const std::vector<double>& link_bytes() const noexcept = 0;
  [[nodiscard]] virtual const std::vector<std::int64_t>& link_busy_ns() const noexcept = 0;
};

/// The network models there are.
enum class NetworkModelKind : std::uint8_t {
  MaxMinFair,  ///< FlowNetwork: flows share each link direction max-min fairly (SimGrid's LMM)
};

/// The network of `cluster` as `kind` models it.
[[nodiscard]] std::unique_ptr<NetworkModel> make_network_model(const topology::Cluster& cluster,
                                                               NetworkModelKind kind = NetworkModelKind::MaxMinFair);

}  // namespace mpsim::engine
