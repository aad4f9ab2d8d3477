#pragma once
/// How fast a collective can possibly run on the engine: its own rule for a phase (collectives.h: a
/// phase of r rounds moves as one flow after r x its routes' largest latency, at a rate no higher than
/// its slowest route's bandwidth), turned into a bound linear in the size. The planner prunes with it.
#include <cstdint>
#include <vector>

#include "sim/core/units.h"
#include "sim/engine/collectives.h"
#include "sim/topology/cluster.h"
#include "sim/engine/route_cache.h"

namespace mpsim::engine {

/// time(size) >= latency + size x ns_per_byte, for size > 0.
struct CollectiveBound {
  TimeNs latency;
  double ns_per_byte = 0;
  /// Rounded down, so that the bound stays below the simulator's rounded-up times.
  [[nodiscard]] TimeNs at(Bytes size) const noexcept;
};

/// The bound of a `kind` collective over `groups` (run at once) with `algorithm` (with Auto: below every
/// candidate the simulator may pick). A phase takes at least
/// r x (latency + bytes per round / bandwidth) of any one of its transfers; the worst of a sample of
/// them is taken. Bytes per round are a share of the size (ceil(size / q)); q is read off one call at
/// a large size, rounded so that the bytes are never overestimated. `routing`: an expert all-to-all's
/// token dispatch (collective_rounds).
[[nodiscard]] CollectiveBound collective_bound(const topology::Cluster& cluster, SharedRoutes& routes,
                                               CollectiveKind kind, CollectiveAlgorithm algorithm,
                                               const std::vector<std::vector<topology::DeviceId>>& groups,
                                               const TokenRouting* routing = nullptr);

}  // namespace mpsim::engine
