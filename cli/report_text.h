#pragma once
/// The human-readable report of one simulated step, as `simulate` and `schedule import` print it.
#include <functional>
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cli/inputs.h"
#include "planner/explain.h"
#include "sim/calibration/prediction_band.h"
#include "sim/trace/link_lanes.h"
#include "sim/trace/report.h"
#include "sim/trace/timeline.h"

namespace mpsim::cli {

/// The band the prediction's step is expected in (sim/calibration/prediction_band.h): calibrated when
/// the inputs' profile was fitted on their GPU kind.
[[nodiscard]] std::optional<calibration::StepBand> step_band_of(const Inputs& in, const trace::Report& r);

/// The same for a prediction of `plan` on the inputs' cluster and model (a planner's candidate).
[[nodiscard]] std::optional<calibration::StepBand> step_band_of(const Inputs& in, const plan::Plan& plan,
                                                                const trace::Report& r);

/// What a prediction of `plan` adds to its report's JSON: the step's band (`step_time_band_s`,
/// `calibrated`, `band_basis`; none without a plan), the peak's (`peak_memory_band_bytes`), and the
/// planner's memory margin (`memory_margin`, `within_memory_margin`).
void add_prediction_fields(nlohmann::ordered_json& json, const Inputs& in, const plan::Plan* plan,
                           const trace::Report& r);

/// The report as `simulate --json` prints it: trace::report_json and add_prediction_fields.
[[nodiscard]] nlohmann::ordered_json prediction_json(const Inputs& in, const trace::Report& r);

/// The plan's line, step time (and its band), throughput, idle share, peak memory, the per-stage table,
/// what each stage's peak memory holds and the busiest links, to stdout.
void print_report(const Inputs& in, const trace::Report& r);

/// "compute 1.2 s (80.0%), bubble ..., exposed communication ..." (planner/explain.h).
[[nodiscard]] std::string breakdown_line(const planner::TimeBreakdown& b);
[[nodiscard]] nlohmann::ordered_json breakdown_json(const planner::TimeBreakdown& b);

/// The link lanes --trace-links keeps (`trace_links`: its value, checked by add_trace_links_option).
[[nodiscard]] trace::LinkLanes link_lanes_named(const std::string& trace_links);

/// Writes a Chrome trace to `path` (gzip when its name ends in .gz) a piece at a time, replacing the
/// file atomically. It embeds `report_object` of the report less the memory timelines of devices
/// without lanes (trace::with_traced_memory_timelines).
void write_trace_file(const std::string& path, const trace::Timeline& timeline, trace::Report report,
                      const std::function<nlohmann::ordered_json(const trace::Report&)>& report_object);

}  // namespace mpsim::cli
