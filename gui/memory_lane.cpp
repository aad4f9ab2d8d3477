#include "gui/memory_lane.h"

#include <QPolygonF>

#include <algorithm>
#include <cmath>

#include "gui/kind_style.h"

namespace mpsim::view {

void paintMemoryLane(Canvas& canvas, const TimelineScene& scene, const TraceModel& model, const TraceRow& row,
                     const QRectF& plot, qreal top, qreal height) {
  if (!model.report() || row.memoryDevice < 0) return;
  const auto& points = model.report()->devices[static_cast<std::size_t>(row.memoryDevice)].memory_timeline;
  if (points.empty()) return;
  const MemoryRange& range = model.memoryRange();
  const qreal bottom = top + height - 3;
  const qreal span = height - 6;
  // One flat value (no stash anywhere) fills half the row.
  const auto yOf = [&](std::int64_t bytes) {
    if (range.highBytes <= range.lowBytes) return bottom - span / 2;
    const auto above = static_cast<qreal>(bytes - range.lowBytes);
    return bottom - span * above / static_cast<qreal>(range.highBytes - range.lowBytes);
  };
  const TimeMapping& map = scene.mapping();
  const auto xOf = [&](double seconds) {
    return plot.left() + std::clamp(map.toPixel(seconds * 1e9), -2.0, plot.width() + 2);
  };
  // The step function to the step's end; the points outside the view collapse onto its edges.
  QPolygonF area;
  area << QPointF(xOf(points.front().time_s), bottom);
  qreal y = yOf(points.front().bytes);
  for (const auto& p : points) {
    area << QPointF(xOf(p.time_s), y);
    y = yOf(p.bytes);
    area << QPointF(xOf(p.time_s), y);
  }
  const qreal end = xOf(std::max(model.stepTimeNs() * 1e-9, points.back().time_s));
  area << QPointF(end, y) << QPointF(end, bottom);
  canvas.polygon(area, palette::kMemoryFill);
  // The row's own peak, a dashed line across it (an F&B pair's peak lasts no time: no area shows it).
  const std::int64_t peak = model.report()->devices[static_cast<std::size_t>(row.memoryDevice)].peak_memory_bytes;
  const qreal peakY = std::round(yOf(peak)) + 0.5;
  canvas.line(QPointF(plot.left(), peakY), QPointF(plot.right(), peakY), palette::kMemoryPeak, 1, true);
}

}  // namespace mpsim::view
