#include "gui/screenshot.h"

#include <QFileInfo>

#include <cmath>
#include <memory>
#include <vector>

#include "gui/export.h"
#include "gui/report_panel.h"
#include "gui/timeline_scene.h"
#include "gui/trace_model.h"

namespace mpsim::view {

namespace {

/// A time with its unit in nanoseconds, or nothing.
std::optional<double> parseTime(QString text) {
  text = text.trimmed();
  constexpr std::pair<const char16_t*, double> kUnits[] = {
      {u"ns", 1.0}, {u"us", 1e3}, {u"\u00b5s", 1e3}, {u"ms", 1e6}, {u"s", 1e9}};
  for (const auto& [unit, scale] : kUnits) {
    const QString suffix = QString::fromUtf16(unit);
    if (!text.endsWith(suffix)) continue;
    bool ok = false;
    const double value = text.left(text.size() - suffix.size()).trimmed().toDouble(&ok);
    if (!ok || value < 0 || !std::isfinite(value)) return std::nullopt;
    return value * scale;
  }
  bool ok = false;
  const double value = text.toDouble(&ok);
  if (ok && value == 0) return 0.0;
  return std::nullopt;
}

}  // namespace

bool parseTimeRange(const QString& text, std::pair<double, double>* rangeNs, QString* error) {
  const QStringList parts = text.split(QLatin1Char(':'));
  std::optional<double> start;
  std::optional<double> end;
  if (parts.size() == 2) {
    start = parseTime(parts[0]);
    end = parseTime(parts[1]);
  }
  if (!start || !end) {
    *error = QStringLiteral("--range takes START:END, two times with units such as 10ms:25ms, not '%1'").arg(text);
    return false;
  }
  const double from = start.value_or(0);
  const double to = end.value_or(0);
  if (to <= from) {
    *error = QStringLiteral("--range %1: the end must come after the start").arg(text);
    return false;
  }
  *rangeNs = {from, to};
  return true;
}

int renderScreenshot(const QStringList& traces, const ScreenshotOptions& options, QTextStream& err) {
  if (traces.isEmpty()) {
    err << "mpsim-view: --screenshot needs a trace file\n";
    err.flush();
    return 2;
  }
  std::vector<std::unique_ptr<TraceModel>> models;
  for (const QString& path : traces.mid(0, 2)) {
    QString error;
    auto model = TraceModel::load(path, &error);
    if (!model) {
      err << "mpsim-view: " << error << "\n";
      err.flush();
      return 1;
    }
    models.push_back(std::move(model));
  }
  TimelineScene scene;
  std::vector<const TraceModel*> views;
  for (const auto& m : models) views.push_back(m.get());
  scene.setTraces(views);
  scene.setHighlightedMicrobatch(options.highlightMicrobatch);
  for (int t = 0; t < static_cast<int>(views.size()); ++t) {
    const auto& groups = views[static_cast<std::size_t>(t)]->groups();
    for (int g = 0; g < static_cast<int>(groups.size()); ++g) {
      const auto& group = groups[static_cast<std::size_t>(g)];
      if (options.collapse.contains(group.name) ||
          (group.isLinks && options.collapse.contains(QStringLiteral("links")))) {
        scene.setCollapsed(t, g, true);
      }
    }
  }
  const QSize size(std::max(options.width, 300),
                   options.height > 0 ? options.height : std::min(scene.naturalHeight(), 8000));
  scene.fit(size);
  if (options.rangeNs) {
    const double origin = scene.originNs();
    scene.mapping().showRange(origin + options.rangeNs->first, origin + options.rangeNs->second,
                              scene.plotRect(size).width());
  }
  QString error;
  if (options.report) {
    if (QFileInfo(options.output).suffix().compare(QLatin1String("svg"), Qt::CaseInsensitive) == 0) {
      err << "mpsim-view: --report draws the panel into PNG screenshots only\n";
      err.flush();
      return 2;
    }
    // The window's panel is at least 340 px wide; a screenshot gives it a little more for its tables.
    constexpr int kReportWidth = 420;
    const QImage image = renderImageWithPanel(scene, size, reportHtml(views, options.highlightMicrobatch), kReportWidth);
    if (!savePng(image, options.output, &error)) {
      err << "mpsim-view: " << error << "\n";
      err.flush();
      return 1;
    }
    return 0;
  }
  if (!exportScene(scene, size, options.output, &error)) {
    err << "mpsim-view: " << error << "\n";
    err.flush();
    return 1;
  }
  return 0;
}

}  // namespace mpsim::view
