#pragma once
/// The human-readable report of one simulated step, as `simulate` and `schedule import` print it.
#include <string>

#include <nlohmann/json.hpp>

#include "cli/inputs.h"
#include "planner/explain.h"
#include "sim/trace/link_lanes.h"
#include "sim/trace/report.h"

namespace mpsim::cli {

/// The plan's line, step time, throughput, idle share, peak memory, the per-stage table and the
/// busiest links, to stdout.
void print_report(const Inputs& in, const trace::Report& r);

/// "compute 1.2 s (80.0%), bubble ..., exposed communication ..." (planner/explain.h).
[[nodiscard]] std::string breakdown_line(const planner::TimeBreakdown& b);
[[nodiscard]] nlohmann::ordered_json breakdown_json(const planner::TimeBreakdown& b);

/// The value of --trace-links (checked by add_trace_links_option).
[[nodiscard]] trace::LinkLanes link_lanes(const std::string& value);

}  // namespace mpsim::cli
