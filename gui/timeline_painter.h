#pragma once
/// Draws a TimelineScene: time axis with grid, one header per trace (with its step time and the
/// difference to the first trace), collapsible node groups, lanes with bars coloured by kind,
/// bubbles on compute streams, GPUs' memory rows (memory_lane.h), the highlighted microbatch, the
/// selection and the legend.
///
/// Cost per frame is bounded by what is visible: rows outside the vertical range are skipped,
/// spans outside the time range are culled by binary search, and spans thinner than a pixel are
/// merged into one pixel column per pixel (level of detail), so a frame touches at most about
/// (visible rows x plot width) bars whatever the trace size.
#include <QSize>

#include "gui/canvas.h"
#include "gui/timeline_scene.h"

namespace mpsim::view {

void paintTimeline(Canvas& canvas, const TimelineScene& scene, QSize viewSize);

/// The title line of a trace header: file, plan, step time, bubble and (for later traces) the
/// step-time difference to the first trace.
[[nodiscard]] QString traceTitle(const TimelineScene& scene, int trace);

}  // namespace mpsim::view
