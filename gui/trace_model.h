#pragma once
/// One opened trace, arranged for display: rows (one per device stream, and one per link that
/// carried traffic) grouped by process, each with its spans sorted by start and its idle gaps
/// (bubbles), and under a GPU's compute row its memory over the step when the report has it;
/// look-ups by time for culling and hit testing; tooltip text; microbatch paths.
/// Immutable after construction; cheap queries are O(log n) per row.
#include <QString>

#include <cstdint>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "sim/trace/report.h"
#include "sim/trace/timeline.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::view {

struct Bubble {
  std::int64_t startNs = 0;
  std::int64_t endNs = 0;
};

struct TraceRow {
  std::uint32_t lane = 0;
  QString process;
  QString thread;
  QString label;  ///< thread without a leading "process/" (shown in the view)
  bool isLink = false;
  bool showsBubbles = false;         ///< compute streams: idle gaps inside the step are bubbles
  std::vector<std::uint32_t> spans;  ///< indices into the timeline, sorted by (start, end)
  std::vector<std::int64_t> starts;  ///< start of each of `spans`, contiguous for the searches
  std::vector<Bubble> bubbles;       ///< sorted, disjoint
  std::int64_t maxSpanNs = 0;        ///< longest span of the row (bounds the culling search)
  /// A memory row (no spans; drawn under its GPU's compute row): the index in the report's devices
  /// of the GPU whose memory_timeline it draws. -1 for the other rows.
  int memoryDevice = -1;
};

/// The range the memory rows of a trace share, so that their heights compare: from the lowest value
/// of any timeline to the highest (the largest peak).
struct MemoryRange {
  std::int64_t lowBytes = 0;
  std::int64_t highBytes = 0;
};

struct TraceGroup {
  QString name;  ///< the process ("node0", "links"); a node's links: "node0 links"
  bool isLinks = false;
  std::vector<int> rows;  ///< indices into rows(), in lane order
};

class TraceModel {
 public:
  TraceModel(mpsim::trace::TraceFile file, QString sourcePath);

  /// Reads a trace file; on failure returns null and sets *error to "FILE: message".
  [[nodiscard]] static std::unique_ptr<TraceModel> load(const QString& path, QString* error);

  [[nodiscard]] const QString& sourcePath() const noexcept { return m_sourcePath; }
  [[nodiscard]] const mpsim::trace::Timeline& timeline() const noexcept { return m_timeline; }
  [[nodiscard]] const std::optional<mpsim::trace::Report>& report() const noexcept { return m_report; }
  [[nodiscard]] const std::vector<TraceRow>& rows() const noexcept { return m_rows; }
  [[nodiscard]] const std::vector<TraceGroup>& groups() const noexcept { return m_groups; }
  [[nodiscard]] const mpsim::trace::Span& span(std::uint32_t index) const { return m_timeline.spans[index]; }

  /// Bit (1 << kind) set for each span kind present.
  [[nodiscard]] std::uint32_t kindMask() const noexcept { return m_kindMask; }
  /// Extent of all spans (0, 0 when empty).
  [[nodiscard]] std::int64_t startNs() const noexcept { return m_startNs; }
  [[nodiscard]] std::int64_t endNs() const noexcept { return m_endNs; }
  [[nodiscard]] const MemoryRange& memoryRange() const noexcept { return m_memoryRange; }
  /// Step time: the report's when present, the extent otherwise.
  [[nodiscard]] double stepTimeNs() const noexcept;

  /// Positions [first, last) in rows()[row].spans of the spans that intersect [t0, t1].
  [[nodiscard]] std::pair<std::size_t, std::size_t> spanRange(int row, double t0, double t1) const;
  /// Position in rows()[row].spans of the first span starting at or after t, searching from `from`
  /// (a short linear probe, then a binary search: cheap when the answer is near).
  [[nodiscard]] std::size_t firstStartingAtOrAfter(int row, double t, std::size_t from = 0) const;
  /// The span under time `ns` in a row (the nearest within toleranceNs when none covers it).
  [[nodiscard]] std::optional<std::uint32_t> spanAt(int row, double ns, double toleranceNs) const;

  /// The bubble of a compute row under time `ns`, if any.
  [[nodiscard]] std::optional<Bubble> bubbleAt(int row, double ns) const;
  /// Tooltip of a bubble: its length and where it lies in the step.
  [[nodiscard]] QString bubbleTooltipText(const Bubble& bubble) const;

  /// Multi-line tooltip: kind, microbatch, chunk, stage, start, duration, bytes, row.
  [[nodiscard]] QString tooltipText(std::uint32_t spanIndex) const;
  /// Every span of a microbatch (its path across stages: compute, sends, receives), in time order.
  [[nodiscard]] std::vector<std::uint32_t> microbatchSpans(std::int32_t microbatch) const;

 private:
  void buildRows();
  /// The memory row under a compute row, when the report has that GPU's memory timeline.
  [[nodiscard]] std::optional<TraceRow> memoryRowFor(const TraceRow& compute) const;
  void setMemoryRange();

  QString m_sourcePath;
  mpsim::trace::Timeline m_timeline;
  std::optional<mpsim::trace::Report> m_report;
  std::vector<TraceRow> m_rows;
  std::vector<TraceGroup> m_groups;
  std::int64_t m_startNs = 0;
  std::int64_t m_endNs = 0;
  std::uint32_t m_kindMask = 0;
  MemoryRange m_memoryRange;
};

}  // namespace mpsim::view
