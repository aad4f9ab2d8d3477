#pragma once
/// Reading back the Chrome Trace Event files that chrome_trace() writes (simulate, plan, execute):
/// the inverse of trace_json.h. The viewer and `compare` use it.
///
/// Lanes are rebuilt from the "M" metadata events (process = process_name of the pid, thread =
/// thread_name of the pid/tid), ordered by thread_sort_index (then tid, then pid), which puts them
/// back in the order chrome_trace() wrote them. Spans come from the "X" events in file order, with
/// their kind from `cat`, times from `ts`/`dur` (microseconds, exact to the nanosecond when written
/// with three decimals) and microbatch/chunk/stage/bytes from `args`. Other phases and `cat` "idle"
/// are skipped. The report is read from the top-level "mpsim" object when present.
///
/// Cost: one pass over the text, O(bytes), with no document tree for the event array (1M spans,
/// 145 MB, are parsed in about 0.4 s). Reentrant: no shared state.
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

#include "sim/trace/report.h"
#include "sim/trace/timeline.h"

namespace mpsim::trace {

/// A file that is not a readable mpsim trace. what() is "FILE: message"; JSON syntax errors carry
/// the byte offset ("FILE: invalid JSON at byte 1234: expected ',' or ']'").
class TraceReadError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceFile {
  Timeline timeline;
  std::optional<Report> report;  ///< absent when the file has no "mpsim" object
};

/// Parses the text of a trace; `source_name` prefixes error messages. Throws TraceReadError.
[[nodiscard]] TraceFile parse_trace(std::string_view json_text, std::string_view source_name);
/// Reads and parses a file, plain or gzip-compressed (recognised by its magic bytes, whatever its
/// name). Throws TraceReadError (also when the file cannot be read or its gzip is corrupt).
[[nodiscard]] TraceFile read_trace_file(const std::string& path);
/// The inverse of report_json(). Missing fields keep their defaults; a field of the wrong type, or
/// a non-object, throws TraceReadError (message without a file name).
[[nodiscard]] Report parse_report(const nlohmann::json& report_object);

}  // namespace mpsim::trace
