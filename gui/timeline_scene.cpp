#include "gui/timeline_scene.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mpsim::view {

void TimelineScene::setTraces(std::vector<const TraceModel*> traces) {
  m_traces = std::move(traces);
  m_collapsed.resize(m_traces.size());
  relayout();
}

void TimelineScene::relayout() {
  m_rows.clear();
  int y = 0;
  for (int t = 0; t < static_cast<int>(m_traces.size()); ++t) {
    const TraceModel& model = *m_traces[static_cast<std::size_t>(t)];
    m_rows.push_back({RowType::TraceHeader, t, -1, -1, -1, y, m_metrics.traceHeaderHeight});
    y += m_metrics.traceHeaderHeight;
    const int groups = static_cast<int>(model.groups().size());
    for (int g = 0; g < groups; ++g) {
      // Consecutive collapsed groups share one header row.
      int last = g;
      if (isCollapsed(t, g)) {
        while (last + 1 < groups && isCollapsed(t, last + 1)) ++last;
      }
      m_rows.push_back({RowType::GroupHeader, t, g, last, -1, y, m_metrics.groupHeaderHeight});
      y += m_metrics.groupHeaderHeight;
      if (isCollapsed(t, g)) {
        g = last;
        continue;
      }
      for (const int r : model.groups()[static_cast<std::size_t>(g)].rows) {
        const TraceRow& row = model.rows()[static_cast<std::size_t>(r)];
        const int h = row.showsBubbles            ? m_metrics.computeLaneHeight
                      : row.memoryDevice >= 0 ? m_metrics.memoryLaneHeight
                                              : m_metrics.laneHeight;
        m_rows.push_back({RowType::Lane, t, g, g, r, y, h});
        y += h;
      }
    }
    y += m_metrics.gap;
  }
  m_contentHeight = y;
}

int TimelineScene::naturalHeight() const noexcept {
  return m_metrics.axisHeight + m_contentHeight + m_metrics.legendHeight;
}

bool TimelineScene::isCollapsed(int trace, int group) const {
  if (trace < 0 || trace >= static_cast<int>(m_collapsed.size())) return false;
  return m_collapsed[static_cast<std::size_t>(trace)].count(group) > 0;
}

void TimelineScene::setCollapsed(int trace, int group, bool collapsed) {
  if (trace < 0 || trace >= static_cast<int>(m_collapsed.size())) return;
  auto& set = m_collapsed[static_cast<std::size_t>(trace)];
  if (collapsed) {
    set.insert(group);
  } else {
    set.erase(group);
  }
  relayout();
}

double TimelineScene::originNs() const noexcept {
  double origin = std::numeric_limits<double>::infinity();
  for (const TraceModel* m : m_traces) {
    if (!m->timeline().spans.empty()) origin = std::min(origin, static_cast<double>(m->startNs()));
  }
  return std::isfinite(origin) ? origin : 0.0;
}

double TimelineScene::endNs() const noexcept {
  double end = -std::numeric_limits<double>::infinity();
  for (const TraceModel* m : m_traces) {
    if (!m->timeline().spans.empty()) end = std::max(end, static_cast<double>(m->endNs()));
  }
  return std::isfinite(end) ? end : originNs() + 1e6;
}

void TimelineScene::fit(QSize viewSize) {
  const double t0 = originNs();
  const double t1 = std::max(endNs(), t0 + 1);
  const double width = plotRect(viewSize).width();
  const double margin = (t1 - t0) * 0.01;
  m_mapping.showRange(t0 - margin, t1 + margin, width);
}

void TimelineScene::setScrollY(int y, QSize viewSize) {
  const int visible = static_cast<int>(rowsRect(viewSize).height());
  m_scrollY = std::clamp(y, 0, std::max(0, m_contentHeight - visible));
}

QRectF TimelineScene::plotRect(QSize viewSize) const {
  const QRectF rows = rowsRect(viewSize);
  return QRectF(rows.left() + m_metrics.labelWidth, rows.top(), std::max(1.0, rows.width() - m_metrics.labelWidth),
                rows.height());
}

QRectF TimelineScene::rowsRect(QSize viewSize) const {
  return QRectF(0, m_metrics.axisHeight, viewSize.width(),
                std::max(1, viewSize.height() - m_metrics.axisHeight - m_metrics.legendHeight));
}

Hit TimelineScene::hitTest(QPointF point, QSize viewSize) const {
  Hit hit;
  const QRectF rows = rowsRect(viewSize);
  if (!rows.contains(point)) return hit;
  const int contentY = static_cast<int>(point.y() - rows.top()) + m_scrollY;
  const auto it =
      std::upper_bound(m_rows.begin(), m_rows.end(), contentY, [](int y, const VisualRow& r) { return y < r.y; });
  if (it == m_rows.begin()) return hit;
  const VisualRow& row = *(it - 1);
  if (contentY >= row.y + row.height) return hit;
  hit.valid = true;
  hit.type = row.type;
  hit.trace = row.trace;
  hit.group = row.group;
  hit.last_group = row.last_group;
  hit.row = row.row;
  if (row.type == RowType::Lane && point.x() >= rows.left() + m_metrics.labelWidth) {
    const double x = point.x() - rows.left() - m_metrics.labelWidth;
    const double ns = m_mapping.toTime(x);
    const TraceModel& model = *m_traces[static_cast<std::size_t>(row.trace)];
    hit.span = model.spanAt(row.row, ns, 3 * m_mapping.nsPerPixel());
    if (!hit.span) hit.bubble = model.bubbleAt(row.row, ns);
  }
  return hit;
}

}  // namespace mpsim::view
