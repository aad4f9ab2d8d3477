#pragma once
/// JSON forms: the report (docs/simulator.md, "The report"), and the Chrome Trace Event file that opens in Perfetto
/// (one process per node, one thread per lane, "X" events; a "C" counter track of each traced GPU's memory
/// when the report has its timeline) carrying the report under "mpsim".
/// Output is deterministic: same inputs, same bytes.
#include <functional>
#include <string>
#include <string_view>

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

/// The same written a piece at a time to `write` (pieces of whole events, about a megabyte each), never
/// held whole: how commands write trace files (AtomicFileWriter). The bytes are chrome_trace's.
void write_chrome_trace(const Timeline& timeline, const Report& report, const nlohmann::ordered_json& report_object,
                        const std::function<void(std::string_view)>& write);

/// `report` without the memory timelines of devices that have no lanes in `timeline`: what a trace
/// embeds. Its counter tracks and the viewer's memory lanes are drawn for traced devices only, and at
/// 1024 GPUs the other devices' timelines (the same as their traced replica's) were 80 % of the file.
[[nodiscard]] Report with_traced_memory_timelines(Report report, const Timeline& timeline);

}  // namespace mpsim::trace
