#pragma once
/// The Chrome-trace recorder: an engine observer that writes one lane per device stream (compute,
/// send, receive wait, collectives, layer comm) and per link, and a span per op and link use.
/// `traced_links` (by link index; empty: all) limits the links that get a lane.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/engine/observer.h"
#include "sim/trace/timeline.h"

namespace mpsim::engine {

class TimelineRecorder final : public Observer {
 public:
  TimelineRecorder(const topology::Cluster& cluster, std::vector<bool> traced_links)
      : cluster_(cluster), traced_links_(std::move(traced_links)) {}

  void actor_added(int actor, int rank, int replica, topology::DeviceId device, const std::vector<int>& members) override;
  void compute_ran(const OpEvent& e) override;
  void recv_waited(const OpEvent& e) override;
  void send_done(const OpEvent& e) override;
  void collective_done(const OpEvent& e) override;
  void link_used(std::size_t link, std::int64_t start_ns, std::int64_t end_ns, std::int64_t bytes) override;

  [[nodiscard]] trace::Timeline take() { return std::move(timeline_); }

 private:
  struct Lanes {
    std::uint32_t compute = 0, send = 0, recv = 0, collective = 0;
    std::optional<std::uint32_t> layer;  // made with the first in-layer collective (plans without none keep four lanes)
    std::string process, layer_thread;
  };
  std::uint32_t add_lane(std::string process, std::string thread);
  void add_span(std::uint32_t lane, trace::SpanKind kind, const OpEvent& e, bool with_microbatch);

  const topology::Cluster& cluster_;
  std::vector<bool> traced_links_;
  trace::Timeline timeline_;
  std::vector<Lanes> actor_lanes_;
  std::unordered_map<std::size_t, std::uint32_t> link_lanes_;
};

}  // namespace mpsim::engine
