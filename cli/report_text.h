#pragma once
/// The human-readable report of one simulated step, as `simulate` and `schedule import` print it.
#include <optional>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "cli/inputs.h"
#include "planner/explain.h"
#include "sim/calibration/prediction_band.h"
#include "sim/trace/report.h"
#include "sim/trace/timeline.h"

namespace mpsim::cli {

/// The band the prediction's step is expected in (sim/calibration/prediction_band.h): calibrated when
/// the inputs' profile was fitted on their GPU kind.
[[nodiscard]] std::optional<calibration::StepBand> step_band_of(const Inputs& in, const trace::Report& r);

/// The report as `simulate --json` prints it: trace::report_json and the step's band
/// (`step_time_band_s`, `calibrated`, `band_basis`).
[[nodiscard]] nlohmann::ordered_json prediction_json(const Inputs& in, const trace::Report& r);

/// The plan's line, step time (and its band), throughput, idle share, peak memory, the per-stage table,
/// what each stage's peak memory holds and the busiest links, to stdout.
void print_report(const Inputs& in, const trace::Report& r);

/// "compute 1.2 s (80.0%), bubble ..., exposed communication ..." (planner/explain.h).
[[nodiscard]] std::string breakdown_line(const planner::TimeBreakdown& b);
[[nodiscard]] nlohmann::ordered_json breakdown_json(const planner::TimeBreakdown& b);

/// The Chrome trace of a prediction with the link lanes --trace-links keeps (`trace_links`: its value,
/// checked by add_trace_links_option).
[[nodiscard]] std::string chrome_trace_text(const trace::Timeline& timeline, const trace::Report& report,
                                            const nlohmann::ordered_json& report_object, const std::string& trace_links);

}  // namespace mpsim::cli
