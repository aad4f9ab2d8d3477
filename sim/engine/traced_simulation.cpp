#include "sim/engine/traced_simulation.h"

#include <cstdint>
#include <vector>

#include "sim/engine/observer.h"

namespace mpsim::engine {
namespace {

/// Each link's transfer time summed over its transfers (what select_link_lanes ranks lanes by), in
/// the order the links were first used (the order their lanes would have been made in).
class LinkTransferTotals final : public Observer {
 public:
  void link_used(std::size_t link, std::int64_t start_ns, std::int64_t end_ns, std::int64_t /*bytes*/) override {
    if (link >= position_.size()) position_.resize(link + 1, kUnused);
    if (position_[link] == kUnused) {
      position_[link] = links_.size();
      links_.push_back(link);
      transfer_ns_.push_back(0);
    }
    transfer_ns_[position_[link]] += end_ns - start_ns;
  }

  /// The links `busiest` keeps, as a mask by link index (over `links` links).
  [[nodiscard]] std::vector<bool> busiest(std::size_t links) const {
    std::vector<bool> chosen(links, false);
    for (const std::size_t kept : trace::busiest_links(transfer_ns_)) chosen[links_[kept]] = true;
    return chosen;
  }

 private:
  static constexpr std::size_t kUnused = static_cast<std::size_t>(-1);
  std::vector<std::size_t> position_;  ///< by link index: its place in first-use order
  std::vector<std::size_t> links_;     ///< in first-use order
  std::vector<std::int64_t> transfer_ns_;
};

}  // namespace

Prediction simulate_traced(const topology::Cluster& cluster, const model::Model& model, const plan::Plan& plan,
                           EngineOptions options, trace::LinkLanes links) {
  options.record_timeline = true;
  switch (links) {
    case trace::LinkLanes::All:
      options.timeline_links.clear();
      break;
    case trace::LinkLanes::None:
      options.timeline_links.assign(cluster.links().size(), false);
      break;
    case trace::LinkLanes::Busiest: {
      LinkTransferTotals totals;
      EngineOptions counting = options;
      counting.record_timeline = false;
      counting.record_memory_timeline = false;
      counting.observer = &totals;
      (void)simulate(cluster, model, plan, counting);
      options.timeline_links = totals.busiest(cluster.links().size());
      break;
    }
  }
  return simulate(cluster, model, plan, options);
}

}  // namespace mpsim::engine
