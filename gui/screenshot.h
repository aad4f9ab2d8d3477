#pragma once
/// `mpsim-view TRACE.json [TRACE2.json] --screenshot OUT.png`: renders the view without a display
/// (for reports and CI). Errors go to `err`, one line each, and give a non-zero exit status.
#include <QSize>
#include <QString>
#include <QStringList>
#include <QTextStream>

#include <cstdint>
#include <optional>
#include <utility>

namespace mpsim::view {

struct ScreenshotOptions {
  QString output;  ///< .png or .svg
  int width = 1600;
  int height = 0;  ///< 0: tall enough for every row
  std::int32_t highlightMicrobatch = -1;
  QStringList collapse;  ///< groups to collapse, by name ("node0 links") or "links" for all link groups
  /// The time range shown, in ns from the traces' start (`--range 10ms:25ms`); unset: all of it.
  std::optional<std::pair<double, double>> rangeNs;
  bool report = false;  ///< the report panel beside the timeline (PNG only), as the window shows it
};

/// `START:END` of `--range`: two times from the traces' start, each a number with a unit (ns, us, µs,
/// ms, s; 0 may go without one), END after START. False with the reason in `error` otherwise.
bool parseTimeRange(const QString& text, std::pair<double, double>* rangeNs, QString* error);

/// Returns the process exit status: 0 on success, 1 when a trace cannot be read or the image
/// cannot be written, 2 when no trace was given or --report asks for an SVG.
int renderScreenshot(const QStringList& traces, const ScreenshotOptions& options, QTextStream& err);

}  // namespace mpsim::view
