#include "sim/engine/traced_simulation.h"

#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/engine/observer.h"

namespace mpsim::engine {
namespace {

/// Each link's transfer time summed over its transfers (what select_link_lanes ranks lanes by), and
/// the order in which links were first used (the order their lanes would have been made in).
class LinkTransferTotals final : public Observer {
 public:
  void link_used(std::size_t link, std::int64_t start_ns, std::int64_t end_ns, std::int64_t /*bytes*/) override {
    if (link >= busy_ns_.size()) {
      busy_ns_.resize(link + 1, 0);
      first_use_.resize(link + 1, kUnused);
    }
    if (first_use_[link] == kUnused) first_use_[link] = used_++;
    busy_ns_[link] += end_ns - start_ns;
  }

  /// The `count` links with the most transfer time, ties to the link used first, as a mask by index.
  [[nodiscard]] std::vector<bool> busiest(std::size_t count) const {
    std::vector<std::size_t> links;
    for (std::size_t l = 0; l < busy_ns_.size(); ++l) {
      if (first_use_[l] != kUnused) links.push_back(l);
    }
    std::sort(links.begin(), links.end(), [&](std::size_t a, std::size_t b) {
      return busy_ns_[a] != busy_ns_[b] ? busy_ns_[a] > busy_ns_[b] : first_use_[a] < first_use_[b];
    });
    std::vector<bool> chosen(busy_ns_.size(), false);
    for (std::size_t i = 0; i < std::min(count, links.size()); ++i) chosen[links[i]] = true;
    return chosen;
  }

 private:
  static constexpr std::size_t kUnused = static_cast<std::size_t>(-1);
  std::vector<std::int64_t> busy_ns_;
  std::vector<std::size_t> first_use_;
  std::size_t used_ = 0;
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
      options.timeline_links = totals.busiest(trace::kBusiestLinks);
      // No link used: an empty mask would mean "every link"; there are none to draw either way.
      if (options.timeline_links.empty()) options.timeline_links.assign(cluster.links().size(), false);
      break;
    }
  }
  return simulate(cluster, model, plan, options);
}

}  // namespace mpsim::engine
