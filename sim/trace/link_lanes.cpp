#include "sim/trace/link_lanes.h"

#include <algorithm>
#include <numeric>
#include <vector>

namespace mpsim::trace {

std::vector<std::size_t> busiest_links(std::span<const std::int64_t> transfer_ns) {
  std::vector<std::size_t> order(transfer_ns.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return transfer_ns[a] > transfer_ns[b]; });
  order.resize(std::min(kBusiestLinks, order.size()));
  std::sort(order.begin(), order.end());
  return order;
}

Timeline select_link_lanes(Timeline timeline, LinkLanes which) {
  if (which == LinkLanes::All) return timeline;
  const std::size_t lanes = timeline.lanes.size();
  std::vector<bool> is_link(lanes, false);
  std::vector<std::int64_t> busy(lanes, 0);
  for (const Span& s : timeline.spans) {
    if (s.kind != SpanKind::Transfer || s.lane >= lanes) continue;
    is_link[s.lane] = true;
    busy[s.lane] += s.end_ns - s.start_ns;
  }
  std::vector<bool> keep(lanes, true);
  std::vector<std::size_t> links;
  std::vector<std::int64_t> link_busy;
  for (std::size_t l = 0; l < lanes; ++l) {
    if (!is_link[l]) continue;
    links.push_back(l);
    link_busy.push_back(busy[l]);
    keep[l] = false;
  }
  if (which == LinkLanes::Busiest) {
    for (const std::size_t kept : busiest_links(link_busy)) keep[links[kept]] = true;
  }

  std::vector<std::uint32_t> renumbered(lanes, 0);
  Timeline out;
  for (std::size_t l = 0; l < lanes; ++l) {
    if (!keep[l]) continue;
    renumbered[l] = static_cast<std::uint32_t>(out.lanes.size());
    out.lanes.push_back(std::move(timeline.lanes[l]));
  }
  out.spans.reserve(timeline.spans.size());
  for (Span& s : timeline.spans) {
    if (s.lane >= lanes || !keep[s.lane]) continue;
    s.lane = renumbered[s.lane];
    out.spans.push_back(s);
  }
  return out;
}

}  // namespace mpsim::trace
