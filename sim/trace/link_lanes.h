#pragma once
/// Which link lanes a trace keeps (`--trace-links`). At real-job size the links carry almost every
/// span of a trace (GPT-3 175B's weak-scaling plan on 1024 H100: 418 MB with every link, 5.6 MB with
/// the busiest 32), and a reader wants the few links that limit the step, not every one.
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>
#include <string_view>

#include "sim/trace/timeline.h"

namespace mpsim::trace {

enum class LinkLanes : std::uint8_t { None, Busiest, All };
inline constexpr std::pair<std::string_view, LinkLanes> kLinkLanesNames[] = {
    {"none", LinkLanes::None}, {"busiest", LinkLanes::Busiest}, {"all", LinkLanes::All}};

/// How many link lanes `busiest` keeps.
inline constexpr std::size_t kBusiestLinks = 32;

/// Which of some links `busiest` keeps, given their transfer times in the order their lanes are made
/// (first use): the positions of the kBusiestLinks largest, ties to the earlier, in increasing order.
[[nodiscard]] std::vector<std::size_t> busiest_links(std::span<const std::int64_t> transfer_ns);

/// `timeline` with the link lanes (lanes whose spans are link transfers) `which` keeps: none, the
/// kBusiestLinks with the most busy time (the sum of their transfers' durations; ties keep the
/// earlier lane), or all. Other lanes and their order stay; lanes are renumbered. O(spans + lanes log lanes).
[[nodiscard]] Timeline select_link_lanes(Timeline timeline, LinkLanes which);

}  // namespace mpsim::trace
