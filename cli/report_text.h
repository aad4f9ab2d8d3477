#pragma once
/// The human-readable report of one simulated step, as `simulate` and `schedule import` print it.
#include "cli/inputs.h"
#include "sim/trace/report.h"

namespace mpsim::cli {

/// The plan's line, step time, throughput, idle share, peak memory, the per-stage table and the
/// busiest links, to stdout.
void print_report(const Inputs& in, const trace::Report& r);

}  // namespace mpsim::cli
