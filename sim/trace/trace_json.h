#pragma once
/// JSON forms: the report (docs/simulator.md, "The report"), and the Chrome Trace Event file that opens in Perfetto
/// (one process per node, one thread per lane, "X" events; a "C" counter track of each traced GPU's memory
/// when the report has its timeline) carrying the report under "mpsim".
/// Output is deterministic: same inputs, same bytes.
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/trace/report.h"
#include "sim/trace/timeline.h"

namespace mpsim::trace {

[[nodiscard]] nlohmann::ordered_json report_json(const Report& report);
[[nodiscard]] std::string chrome_trace(const Timeline& timeline, const Report& report);
/// The same with the report embedded as a command prints it (`report_object`: report_json and what the
/// command adds to it).
[[nodiscard]] std::string chrome_trace(const Timeline& timeline, const Report& report,
                                       const nlohmann::ordered_json& report_object);

}  // namespace mpsim::trace
