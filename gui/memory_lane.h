#pragma once
/// Draws a memory row: its GPU's allocated bytes through the step (the report's memory_timeline) as a
/// filled step function, from the trace's lowest memory at the row's bottom to its largest peak at
/// the top, so that the rows of one trace compare.
#include <QRectF>

#include "gui/canvas.h"
#include "gui/timeline_scene.h"

namespace mpsim::view {

void paintMemoryLane(Canvas& canvas, const TimelineScene& scene, const TraceModel& model, const TraceRow& row,
                     const QRectF& plot, qreal top, qreal height);

}  // namespace mpsim::view
