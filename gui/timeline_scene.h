#pragma once
/// What the timeline shows: the opened traces stacked on one time axis, which groups are
/// collapsed, the visible time range and vertical scroll, the highlighted microbatch and the
/// range being selected; and the vertical layout of rows derived from it. A value type shared by
/// the widget, the screenshot/export code and the benchmark, so all three draw the same thing.
#include <QPointF>
#include <QRectF>
#include <QSize>
#include <QString>

#include <cstdint>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "gui/time_mapping.h"
#include "gui/trace_model.h"

namespace mpsim::view {

struct LayoutMetrics {
  int axisHeight = 30;
  int legendHeight = 30;
  int labelWidth = 190;
  int traceHeaderHeight = 28;
  int groupHeaderHeight = 22;
  int laneHeight = 22;
  int computeLaneHeight = 30;
  int memoryLaneHeight = 34;
  int gap = 6;  ///< space after each trace
};

enum class RowType : std::uint8_t { TraceHeader, GroupHeader, Lane };

struct VisualRow {
  RowType type = RowType::Lane;
  int trace = 0;
  int group = -1;  ///< index into the trace's groups()
  /// A group header for a run of consecutive collapsed groups (`group` .. `last_group`) takes one row
  /// for all of them: 128 collapsed link groups cost one row, not 128. Equal to `group` otherwise.
  int last_group = -1;
  int row = -1;    ///< index into the trace's rows() (lanes only)
  int y = 0;       ///< top, in content coordinates (0 = first row below the axis)
  int height = 0;
};

struct Hit {
  RowType type = RowType::Lane;
  bool valid = false;
  int trace = -1;
  int group = -1;
  int last_group = -1;  ///< a folded run of collapsed groups: its last (see VisualRow)
  int row = -1;
  std::optional<std::uint32_t> span;
  std::optional<Bubble> bubble;  ///< when no span is hit on a compute row
};

class TimelineScene {
 public:
  TimelineScene() = default;

  void setTraces(std::vector<const TraceModel*> traces);
  [[nodiscard]] const std::vector<const TraceModel*>& traces() const noexcept { return m_traces; }

  [[nodiscard]] const LayoutMetrics& metrics() const noexcept { return m_metrics; }
  [[nodiscard]] const std::vector<VisualRow>& rows() const noexcept { return m_rows; }
  [[nodiscard]] int contentHeight() const noexcept { return m_contentHeight; }
  /// Height that shows every row with the axis and legend: the natural size of a screenshot.
  [[nodiscard]] int naturalHeight() const noexcept;

  [[nodiscard]] bool isCollapsed(int trace, int group) const;
  void setCollapsed(int trace, int group, bool collapsed);

  [[nodiscard]] TimeMapping& mapping() noexcept { return m_mapping; }
  [[nodiscard]] const TimeMapping& mapping() const noexcept { return m_mapping; }
  /// The time shown at the left of the axis labels as 0: the earliest start over the traces.
  [[nodiscard]] double originNs() const noexcept;
  /// The latest end over the traces.
  [[nodiscard]] double endNs() const noexcept;
  /// Shows every span of every trace with a small margin.
  void fit(QSize viewSize);

  [[nodiscard]] int scrollY() const noexcept { return m_scrollY; }
  void setScrollY(int y, QSize viewSize);

  [[nodiscard]] std::int32_t highlightedMicrobatch() const noexcept { return m_highlight; }
  void setHighlightedMicrobatch(std::int32_t microbatch) noexcept { m_highlight = microbatch; }

  [[nodiscard]] const std::optional<std::pair<double, double>>& selection() const noexcept { return m_selection; }
  void setSelection(std::optional<std::pair<double, double>> range) { m_selection = std::move(range); }

  /// Bars area: right of the labels, between the axis and the legend.
  [[nodiscard]] QRectF plotRect(QSize viewSize) const;
  /// Rows area including the labels column.
  [[nodiscard]] QRectF rowsRect(QSize viewSize) const;
  /// What is under a point of the view (span hit within 3 pixels).
  [[nodiscard]] Hit hitTest(QPointF point, QSize viewSize) const;

 private:
  void relayout();

  std::vector<const TraceModel*> m_traces;
  std::vector<std::set<int>> m_collapsed;
  LayoutMetrics m_metrics;
  std::vector<VisualRow> m_rows;
  int m_contentHeight = 0;
  TimeMapping m_mapping;
  int m_scrollY = 0;
  std::int32_t m_highlight = -1;
  std::optional<std::pair<double, double>> m_selection;
};

}  // namespace mpsim::view
