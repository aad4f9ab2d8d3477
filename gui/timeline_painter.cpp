#include "gui/timeline_painter.h"

#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "gui/kind_style.h"
#include "gui/memory_lane.h"

namespace mpsim::view {

using mpsim::trace::Span;

namespace {

const TextStyle kLabel{palette::kText, 12, false};
const TextStyle kSmall{palette::kMutedText, 11, false};
const TextStyle kBarText{QColor(0xff, 0xff, 0xff), 10, true};
const TextStyle kGroupText{palette::kText, 12, true};
const TextStyle kTraceText{palette::kTraceHeaderText, 12, true};
const TextStyle kBubbleText{palette::kBubbleOutline, 10, false};

QColor faded(const QColor& c) {
  // 75% toward the background: non-highlighted spans stay visible but step back.
  return QColor((c.red() + 3 * 0xff) / 4, (c.green() + 3 * 0xff) / 4, (c.blue() + 3 * 0xff) / 4);
}

/// Text vertically centred in [top, top + height].
qreal baselineFor(const TextStyle& style, qreal top, qreal height) {
  const qreal ascent = Canvas::ascent(style);
  return std::round(top + (height + ascent) / 2 - 1.5);
}

void paintAxis(Canvas& canvas, const TimelineScene& scene, QSize size, const QRectF& plot) {
  const auto& m = scene.metrics();
  canvas.fillRect(QRectF(0, 0, size.width(), m.axisHeight), palette::kHeaderBackground);
  canvas.line(QPointF(0, m.axisHeight - 0.5), QPointF(size.width(), m.axisHeight - 0.5), palette::kGrid, 1, false);
  const auto ticks = axisTicks(scene.mapping(), plot.width(), scene.originNs());
  canvas.pushClip(QRectF(plot.left(), 0, plot.width(), m.axisHeight));
  for (const AxisTick& tick : ticks) {
    const qreal x = std::round(plot.left() + scene.mapping().toPixel(tick.ns)) + 0.5;
    canvas.line(QPointF(x, m.axisHeight - 7), QPointF(x, m.axisHeight), palette::kMutedText, 1, false);
    canvas.text(QPointF(x + 3, m.axisHeight - 10), tick.label, kSmall);
  }
  canvas.popClip();
  canvas.text(QPointF(10, baselineFor(kSmall, 0, m.axisHeight)), QStringLiteral("time"), kSmall);
}

void paintGrid(Canvas& canvas, const TimelineScene& scene, const QRectF& plot) {
  for (const AxisTick& tick : axisTicks(scene.mapping(), plot.width(), scene.originNs())) {
    const qreal x = std::round(plot.left() + scene.mapping().toPixel(tick.ns)) + 0.5;
    canvas.line(QPointF(x, plot.top()), QPointF(x, plot.bottom()), palette::kGrid, 1, false);
  }
}

void paintLegend(Canvas& canvas, const TimelineScene& scene, QSize size) {
  const auto& m = scene.metrics();
  const qreal top = size.height() - m.legendHeight;
  canvas.fillRect(QRectF(0, top, size.width(), m.legendHeight), palette::kHeaderBackground);
  canvas.line(QPointF(0, top + 0.5), QPointF(size.width(), top + 0.5), palette::kGrid, 1, false);
  std::set<KindGroup> present;
  bool anyBubbles = false;
  bool anyMemory = false;
  for (const TraceModel* t : scene.traces()) {
    for (const mpsim::trace::SpanTraits& k : mpsim::trace::kSpanTraits) {
      if (t->kindMask() & (1u << static_cast<unsigned>(k.kind))) present.insert(k.group);
    }
    for (const TraceRow& r : t->rows()) {
      anyBubbles = anyBubbles || !r.bubbles.empty();
      anyMemory = anyMemory || r.memoryDevice >= 0;
    }
  }
  qreal x = 10;
  const qreal base = baselineFor(kSmall, top, m.legendHeight);
  for (const KindGroup g : present) {
    canvas.rect(QRectF(x, top + (m.legendHeight - 12) / 2.0, 12, 12), 2, groupColor(g), QColor(), 0, false);
    x += 17;
    const QString label = groupLabel(g);
    canvas.text(QPointF(x, base), label, kSmall);
    x += Canvas::textWidth(label, kSmall) + 16;
  }
  if (anyBubbles) {
    canvas.rect(QRectF(x + 0.5, top + (m.legendHeight - 12) / 2.0 + 0.5, 20, 11), 3, QColor(), palette::kBubbleOutline,
                1, true);
    x += 25;
    canvas.text(QPointF(x, base), QStringLiteral("bubble (idle)"), kSmall);
    x += Canvas::textWidth(QStringLiteral("bubble (idle)"), kSmall) + 16;
  }
  if (anyMemory) {
    canvas.rect(QRectF(x, top + (m.legendHeight - 12) / 2.0, 12, 12), 2, palette::kMemoryFill, QColor(), 0, false);
    x += 17;
    canvas.text(QPointF(x, base), QStringLiteral("memory"), kSmall);
    x += Canvas::textWidth(QStringLiteral("memory"), kSmall) + 16;
  }
  const QString hint = QStringLiteral("wheel: zoom  drag: select range  right-drag: pan  click: follow microbatch");
  const qreal hintWidth = Canvas::textWidth(hint, kSmall);
  if (x + hintWidth + 20 < size.width()) canvas.text(QPointF(size.width() - hintWidth - 10, base), hint, kSmall);
}

void paintBubbles(Canvas& canvas, const TimelineScene& scene, const TraceRow& row, const QRectF& plot, qreal top,
                  qreal height) {
  const TimeMapping& map = scene.mapping();
  const double t0 = map.toTime(0);
  const double t1 = map.toTime(plot.width());
  const auto first = std::lower_bound(row.bubbles.begin(), row.bubbles.end(), t0,
                                      [](const Bubble& b, double t) { return static_cast<double>(b.endNs) < t; });
  for (auto it = first; it != row.bubbles.end() && static_cast<double>(it->startNs) <= t1; ++it) {
    const double x0 = std::max(-4.0, map.toPixel(static_cast<double>(it->startNs)));
    const double x1 = std::min(plot.width() + 4, map.toPixel(static_cast<double>(it->endNs)));
    if (x1 - x0 < 5) continue;
    const QRectF r(std::round(plot.left() + x0) + 1.5, top + 3.5, std::round(x1 - x0) - 3, height - 7);
    canvas.rect(r, 4, QColor(), palette::kBubbleOutline, 1, true);
    const QString label = formatDuration(static_cast<double>(it->endNs - it->startNs));
    const qreal w = Canvas::textWidth(label, kBubbleText);
    if (w + 12 < r.width()) {
      canvas.text(QPointF(std::round(r.center().x() - w / 2), baselineFor(kBubbleText, top, height)), label,
                  kBubbleText);
    }
  }
}

void paintBars(Canvas& canvas, const TimelineScene& scene, const TraceModel& model, int rowIndex, const QRectF& plot,
               qreal top, qreal height) {
  const TimeMapping& map = scene.mapping();
  const TraceRow& row = model.rows()[static_cast<std::size_t>(rowIndex)];
  const auto [first, last] = model.spanRange(rowIndex, map.toTime(-1), map.toTime(plot.width() + 1));
  const std::int32_t highlight = scene.highlightedMicrobatch();
  const qreal barTop = top + 3;
  const qreal barHeight = height - 6;
  double lastColumn = -std::numeric_limits<double>::infinity();
  // Consecutive one-pixel columns of one colour are drawn as one rectangle.
  double runStart = 0;
  double runEnd = 0;
  QColor runColor;
  const auto flush = [&] {
    if (runEnd > runStart)
      canvas.fillRect(QRectF(plot.left() + runStart, barTop, runEnd - runStart, barHeight), runColor);
    runEnd = runStart;
  };
  std::size_t k = first;
  while (k < last) {
    const std::uint32_t index = row.spans[k];
    const Span& s = model.span(index);
    const double x0 = map.toPixel(static_cast<double>(s.start_ns));
    const double x1 = map.toPixel(static_cast<double>(s.end_ns));
    const bool inPath = highlight >= 0 && s.microbatch == highlight;
    QColor color = kindColor(s.kind);
    if (highlight >= 0 && !inPath) color = faded(color);
    if (x1 - x0 < 1.5) {
      // Level of detail: one pixel column for everything that starts in this pixel.
      const double column = std::floor(x0);
      if (column > lastColumn) {
        if (column != runEnd || color != runColor) {
          flush();
          runStart = column;
          runColor = color;
        }
        runEnd = column + 1;
        lastColumn = column;
      }
      k = model.firstStartingAtOrAfter(rowIndex, map.toTime(column + 1), k + 1);
      continue;
    }
    ++k;
    flush();
    // Whole pixels, with a one-pixel gap at the right end so neighbouring bars stay apart.
    const double left = std::max(std::round(x0), -2.0);
    const double right = std::min(std::round(x1), plot.width() + 2);
    const double width = right - left - (right - left >= 4 ? 1 : 0);
    if (width < 1) continue;
    const QRectF bar(plot.left() + left, barTop, width, barHeight);
    canvas.fillRect(bar, color);
    lastColumn = std::max(lastColumn, right - 1);
    if (inPath) canvas.rect(bar.adjusted(0.5, 0.5, -0.5, -0.5), 0, QColor(), palette::kHighlightEdge, 1.5, false);
    if (width >= 18) {
      // A label is shown whole or not at all: "F1..." says less than a bare bar.
      const QString label = spanShortLabel(s);
      const qreal w = Canvas::textWidth(label, kBarText);
      if (!label.isEmpty() && w + 4 <= width) {
        TextStyle style = kBarText;
        if (highlight >= 0 && !inPath) style.color = QColor(0xff, 0xff, 0xff, 0xd0);
        canvas.text(QPointF(std::round(bar.center().x() - w / 2), baselineFor(kBarText, barTop, barHeight)), label,
                    style);
      }
    }
  }
  flush();
}

void paintSelection(Canvas& canvas, const TimelineScene& scene, const QRectF& plot) {
  if (!scene.selection()) return;
  const auto [a, b] = *scene.selection();
  const double x0 = std::clamp(scene.mapping().toPixel(std::min(a, b)), 0.0, plot.width());
  const double x1 = std::clamp(scene.mapping().toPixel(std::max(a, b)), 0.0, plot.width());
  const QRectF r(plot.left() + x0, plot.top(), std::max(1.0, x1 - x0), plot.height());
  canvas.fillRect(r, palette::kSelection);
  canvas.line(r.topLeft(), r.bottomLeft(), palette::kSelectionEdge, 1, false);
  canvas.line(r.topRight(), r.bottomRight(), palette::kSelectionEdge, 1, false);
  const QString label = formatDuration(std::abs(b - a));
  const qreal w = Canvas::textWidth(label, kLabel);
  canvas.fillRect(QRectF(r.center().x() - w / 2 - 4, plot.top() + 2, w + 8, 18), palette::kSelectionEdge);
  canvas.text(QPointF(r.center().x() - w / 2, plot.top() + 15), label, {QColor(0xff, 0xff, 0xff), 12, false});
}

QString percent(double fraction) { return QStringLiteral("%1%").arg(fraction * 100, 0, 'f', 1); }

}  // namespace

QString traceTitle(const TimelineScene& scene, int trace) {
  const TraceModel& model = *scene.traces()[static_cast<std::size_t>(trace)];
  QStringList parts;
  parts << QFileInfo(model.sourcePath()).fileName();
  if (model.report() && !model.report()->plan.schedule.empty()) {
    const auto& p = model.report()->plan;
    QString plan = QString::fromStdString(p.schedule);
    if (p.virtual_stages > 1) plan += QStringLiteral(" x%1 chunks").arg(p.virtual_stages);
    // Every degree above one: a context- or expert-parallel run is not read as TP x PP x DP alone.
    plan += QStringLiteral(" \u00b7 TP %1%2 PP %3 DP %4%5 \u00b7 %6 microbatches")
                .arg(p.tensor)
                .arg(p.context > 1 ? QStringLiteral(" CP %1").arg(p.context) : QString())
                .arg(p.pipeline)
                .arg(p.data)
                .arg(p.expert > 1 ? QStringLiteral(" EP %1").arg(p.expert) : QString())
                .arg(p.microbatches);
    parts << plan;
  }
  QString step = QStringLiteral("step %1").arg(formatDuration(model.stepTimeNs()));
  if (trace > 0) {
    const double base = scene.traces().front()->stepTimeNs();
    const double diff = model.stepTimeNs() - base;
    step += QStringLiteral(" (%1%2, %3%4% vs first)")
                .arg(diff >= 0 ? QStringLiteral("+") : QStringLiteral("\u2212"))
                .arg(formatDuration(std::abs(diff)))
                .arg(diff >= 0 ? QStringLiteral("+") : QStringLiteral("\u2212"))
                .arg(base > 0 ? std::abs(diff) / base * 100 : 0.0, 0, 'f', 1);
  }
  parts << step;
  if (model.report()) parts << QStringLiteral("bubble %1").arg(percent(model.report()->bubble_fraction));
  return parts.join(QStringLiteral("  \u00b7  "));
}

void paintTimeline(Canvas& canvas, const TimelineScene& scene, QSize size) {
  const auto& m = scene.metrics();
  canvas.fillRect(QRectF(0, 0, size.width(), size.height()), palette::kBackground);
  const QRectF rows = scene.rowsRect(size);
  const QRectF plot = scene.plotRect(size);

  if (scene.traces().empty()) {
    const QString message =
        QStringLiteral("Open a trace: File \u25b8 Open, drop a file here, or run mpsim-view TRACE.json");
    const qreal w = Canvas::textWidth(message, kLabel);
    canvas.text(QPointF((size.width() - w) / 2, size.height() / 2.0), message, kSmall);
    return;
  }

  canvas.fillRect(QRectF(0, rows.top(), m.labelWidth, rows.height()), palette::kHeaderBackground);
  canvas.pushClip(plot);
  paintGrid(canvas, scene, plot);
  canvas.popClip();

  const int scroll = scene.scrollY();
  const auto& visual = scene.rows();
  auto it = std::upper_bound(visual.begin(), visual.end(), scroll, [](int y, const VisualRow& r) { return y < r.y; });
  if (it != visual.begin()) --it;
  canvas.pushClip(rows);
  for (; it != visual.end() && it->y - scroll < rows.height(); ++it) {
    const VisualRow& v = *it;
    const qreal top = rows.top() + v.y - scroll;
    const TraceModel& model = *scene.traces()[static_cast<std::size_t>(v.trace)];
    switch (v.type) {
      case RowType::TraceHeader: {
        canvas.fillRect(QRectF(0, top, size.width(), v.height), palette::kTraceHeaderBackground);
        const QString title = Canvas::elided(
            QStringLiteral("%1   %2")
                .arg(scene.traces().size() > 1 ? QString(QChar(u'A' + v.trace)) : QString(), traceTitle(scene, v.trace))
                .trimmed(),
            kTraceText, size.width() - 20);
        canvas.text(QPointF(10, baselineFor(kTraceText, top, v.height)), title, kTraceText);
        break;
      }
      case RowType::GroupHeader: {
        const auto& group = model.groups()[static_cast<std::size_t>(v.group)];
        canvas.fillRect(QRectF(0, top, size.width(), v.height), palette::kHeaderBackground);
        canvas.line(QPointF(0, top + v.height - 0.5), QPointF(size.width(), top + v.height - 0.5), palette::kGrid, 1,
                    false);
        const bool collapsed = scene.isCollapsed(v.trace, v.group);
        const qreal cy = top + v.height / 2.0;
        QPolygonF arrow;
        if (collapsed) {
          arrow << QPointF(12, cy - 5) << QPointF(18, cy) << QPointF(12, cy + 5);
        } else {
          arrow << QPointF(10, cy - 3) << QPointF(20, cy - 3) << QPointF(15, cy + 3);
        }
        canvas.polygon(arrow, palette::kMutedText);
        QString name = group.name;
        std::size_t rows_in_run = group.rows.size();
        if (v.last_group > v.group) {  // a folded run of collapsed groups
          const auto& last = model.groups()[static_cast<std::size_t>(v.last_group)];
          name = QStringLiteral("%1 \u2026 %2").arg(group.name, last.name);
          for (int g = v.group + 1; g <= v.last_group; ++g) rows_in_run += model.groups()[static_cast<std::size_t>(g)].rows.size();
        }
        canvas.text(QPointF(26, baselineFor(kGroupText, top, v.height)), name, kGroupText);
        const QString count = v.last_group > v.group
                                  ? QStringLiteral("%1 groups, %2 rows").arg(v.last_group - v.group + 1).arg(rows_in_run)
                                  : QStringLiteral("%1 rows").arg(rows_in_run);
        canvas.text(QPointF(30 + Canvas::textWidth(name, kGroupText), baselineFor(kSmall, top, v.height)), count,
                    kSmall);
        break;
      }
      case RowType::Lane: {
        const TraceRow& row = model.rows()[static_cast<std::size_t>(v.row)];
        canvas.line(QPointF(m.labelWidth, top + v.height - 0.5), QPointF(size.width(), top + v.height - 0.5),
                    palette::kRowSeparator, 1, false);
        canvas.line(QPointF(m.labelWidth - 0.5, top), QPointF(m.labelWidth - 0.5, top + v.height), palette::kGrid, 1,
                    false);
        const TextStyle& style = row.showsBubbles ? kLabel : kSmall;
        const QString label = Canvas::elided(row.label, style, m.labelWidth - 30);
        canvas.text(QPointF(22, baselineFor(style, top, v.height)), label, style);
        canvas.pushClip(QRectF(plot.left(), std::max(top, rows.top()), plot.width(),
                               std::min<qreal>(v.height, rows.bottom() - top)));
        if (row.showsBubbles) paintBubbles(canvas, scene, row, plot, top, v.height);
        if (row.memoryDevice >= 0) {
          paintMemoryLane(canvas, scene, model, row, plot, top, v.height);
        } else {
          paintBars(canvas, scene, model, v.row, plot, top, v.height);
        }
        canvas.popClip();
        break;
      }
    }
  }
  // Step end of each trace: a dashed line through its rows.
  for (int t = 0; t < static_cast<int>(scene.traces().size()); ++t) {
    const TraceModel& model = *scene.traces()[static_cast<std::size_t>(t)];
    int y0 = std::numeric_limits<int>::max();
    int y1 = std::numeric_limits<int>::min();
    for (const VisualRow& v : visual) {
      if (v.trace != t || v.type == RowType::TraceHeader) continue;
      y0 = std::min(y0, v.y);
      y1 = std::max(y1, v.y + v.height);
    }
    if (y0 >= y1) continue;
    const double x = scene.mapping().toPixel(static_cast<double>(model.startNs()) + model.stepTimeNs());
    if (x < 0 || x > plot.width()) continue;
    const qreal px = std::round(plot.left() + x) + 0.5;
    canvas.pushClip(plot);
    canvas.line(QPointF(px, rows.top() + y0 - scroll), QPointF(px, rows.top() + y1 - scroll), palette::kText, 1, true);
    canvas.popClip();
  }
  canvas.popClip();
  canvas.pushClip(plot);
  paintSelection(canvas, scene, plot);
  canvas.popClip();
  paintAxis(canvas, scene, size, plot);
  paintLegend(canvas, scene, size);
}

}  // namespace mpsim::view
