// mpsim-view: the timeline viewer. Parses the command line, then either renders a screenshot
// without a display or opens the window.
#include <QApplication>
#include <QCommandLineParser>
#include <QTextStream>

#include <cstdio>
#include <cstring>

#include "gui/main_window.h"
#include "gui/screenshot.h"

int main(int argc, char* argv[]) {
  // A screenshot (or the help text) needs no display: pick the offscreen platform before Qt
  // starts, unless the caller chose one.
  bool headless = false;
  for (int i = 1; i < argc; ++i) {
    const char* a = argv[i];
    headless = headless || std::strncmp(a, "--screenshot", 12) == 0 || std::strcmp(a, "--help") == 0 ||
               std::strcmp(a, "-h") == 0 || std::strcmp(a, "--version") == 0 || std::strcmp(a, "-v") == 0;
  }
  if (headless && qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");

  QApplication app(argc, argv);
  QApplication::setApplicationName(QStringLiteral("mpsim-view"));
  QApplication::setApplicationVersion(QStringLiteral("0.1.0"));

  QCommandLineParser parser;
  parser.setApplicationDescription(QStringLiteral(
      "Timeline viewer for mpsim traces (simulate, plan and execute --trace). Two traces are stacked on one time "
      "axis for comparison."));
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument(QStringLiteral("traces"),
                               QStringLiteral("Trace JSON files, plain or .json.gz (one, or two to compare)."),
                               QStringLiteral("[TRACE.json [TRACE2.json]]"));
  const QCommandLineOption screenshotOption(QStringLiteral("screenshot"),
                                            QStringLiteral("Render the view to FILE (.png or .svg) and exit."),
                                            QStringLiteral("FILE"));
  const QCommandLineOption widthOption(QStringLiteral("width"), QStringLiteral("Screenshot width in pixels (1600)."),
                                       QStringLiteral("PX"), QStringLiteral("1600"));
  const QCommandLineOption heightOption(QStringLiteral("height"),
                                        QStringLiteral("Screenshot height in pixels (default: every row)."),
                                        QStringLiteral("PX"), QStringLiteral("0"));
  const QCommandLineOption highlightOption(QStringLiteral("highlight"),
                                           QStringLiteral("Highlight the path of microbatch MB in the screenshot."),
                                           QStringLiteral("MB"), QStringLiteral("-1"));
  const QCommandLineOption collapseOption(
      QStringLiteral("collapse"),
      QStringLiteral("Collapse the group NAME in the screenshot (\"links\": every group of links). Repeatable."),
      QStringLiteral("NAME"));
  const QCommandLineOption rangeOption(
      QStringLiteral("range"),
      QStringLiteral("Show only START:END of the screenshot's time axis, from the traces' start (10ms:25ms)."),
      QStringLiteral("START:END"));
  const QCommandLineOption reportOption(
      QStringLiteral("report"),
      QStringLiteral("Draw the report panel (step, idle per device, memory, busiest links) beside the screenshot (.png)."));
  parser.addOptions(
      {screenshotOption, widthOption, heightOption, highlightOption, collapseOption, rangeOption, reportOption});
  parser.process(app);

  const QStringList traces = parser.positionalArguments();
  if (parser.isSet(screenshotOption)) {
    QTextStream err(stderr);
    mpsim::view::ScreenshotOptions options;
    options.output = parser.value(screenshotOption);
    options.collapse = parser.values(collapseOption);
    options.report = parser.isSet(reportOption);
    bool ok = true;
    options.width = parser.value(widthOption).toInt(&ok);
    bool okHeight = true;
    options.height = parser.value(heightOption).toInt(&okHeight);
    bool okHighlight = true;
    options.highlightMicrobatch = parser.value(highlightOption).toInt(&okHighlight);
    if (!ok || !okHeight || !okHighlight) {
      err << "mpsim-view: --width, --height and --highlight take integers\n";
      return 2;
    }
    if (parser.isSet(rangeOption)) {
      std::pair<double, double> range;
      QString error;
      if (!mpsim::view::parseTimeRange(parser.value(rangeOption), &range, &error)) {
        err << "mpsim-view: " << error << "\n";
        return 2;
      }
      options.rangeNs = range;
    }
    return mpsim::view::renderScreenshot(traces, options, err);
  }

  mpsim::view::MainWindow window;
  window.openFiles(traces);
  window.show();
  return QApplication::exec();
}
