// Rendering checked by pixels: a known trace is drawn off screen; each span of a row is one bar of
// its kind's colour, a known bubble is background, the image is the same every time, the SVG
// export is well-formed with one rect per bar, and the command line renders and reports errors.
#include <QImage>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <QXmlStreamReader>

#include <algorithm>
#include <memory>
#include <set>

#include "gui/export.h"
#include "gui/kind_style.h"
#include "gui/screenshot.h"
#include "gui/timeline_scene.h"
#include "gui/trace_model.h"
#include "known_trace.h"

using namespace mpsim::view;

namespace {

constexpr QSize kSize(1200, 360);

struct Fixture {
  QTemporaryDir dir;
  std::unique_ptr<TraceModel> model;
  TimelineScene scene;

  Fixture() {
    QString error;
    model = TraceModel::load(testing::writeKnownTrace(dir), &error);
    if (!model) qFatal("%s", qPrintable(error));
    scene.setTraces({model.get()});
    scene.fit(kSize);
  }

  /// Top of the lane whose thread is `thread`, in view coordinates.
  [[nodiscard]] int laneTop(const QString& thread) const {
    for (const VisualRow& v : scene.rows()) {
      if (v.type == RowType::Lane && model->rows()[static_cast<std::size_t>(v.row)].thread == thread) {
        return static_cast<int>(scene.rowsRect(kSize).top()) + v.y - scene.scrollY();
      }
    }
    return -1;
  }
};

bool isKindColor(QRgb pixel) {
  for (const mpsim::trace::SpanTraits& k : mpsim::trace::kSpanTraits) {
    if (kindColor(k.kind).rgb() == pixel) return true;
  }
  return false;
}

/// Runs of bar-coloured pixels along one line of the plot area.
int barsOnLine(const QImage& image, const QRectF& plot, int y) {
  int bars = 0;
  bool inBar = false;
  for (int x = static_cast<int>(plot.left()); x < static_cast<int>(plot.right()); ++x) {
    const bool bar = isKindColor(image.pixel(x, y));
    if (bar && !inBar) ++bars;
    inBar = bar;
  }
  return bars;
}

}  // namespace

class ViewScreenshotTest : public QObject {
  Q_OBJECT

 private slots:
  void barsMatchSpans_data() {
    QTest::addColumn<QString>("thread");
    QTest::addColumn<int>("spans");
    QTest::newRow("gpu0 compute") << QStringLiteral("gpu0 compute") << 4;
    QTest::newRow("gpu0 send") << QStringLiteral("gpu0 send") << 2;
    QTest::newRow("gpu1 compute") << QStringLiteral("gpu1 compute") << 4;
    QTest::newRow("link") << QStringLiteral("node0/nic0-node1/nic0") << 2;
  }
  void barsMatchSpans() {
    QFETCH(QString, thread);
    QFETCH(int, spans);
    Fixture f;
    const QImage image = renderImage(f.scene, kSize);
    const int top = f.laneTop(thread);
    QVERIFY(top >= 0);
    // Just inside the top of the bars: above the labels and clear of the bubble outlines.
    QCOMPARE(barsOnLine(image, f.scene.plotRect(kSize), top + 6), spans);
    const auto& row =
        f.model->rows()[static_cast<std::size_t>(std::find_if(f.model->rows().begin(), f.model->rows().end(),
                                                              [&](const TraceRow& r) { return r.thread == thread; }) -
                                                 f.model->rows().begin())];
    QCOMPARE(static_cast<int>(row.spans.size()), spans);
    // Each bar has its span's colour at its centre column.
    for (const auto i : row.spans) {
      const auto& s = f.model->span(i);
      const double mid = (static_cast<double>(s.start_ns) + static_cast<double>(s.end_ns)) / 2;
      const int x = static_cast<int>(f.scene.plotRect(kSize).left() + f.scene.mapping().toPixel(mid));
      QCOMPARE(QColor(image.pixel(x, top + 6)), kindColor(s.kind));
    }
  }

  // gpu0's memory row: filled up to its value, from the trace's lowest (512 MiB, the row's bottom)
  // to its highest (1 GiB, the top): full from 100 to 400 us, empty after 600 us.
  void memoryRowFollowsTheTimeline() {
    QTemporaryDir dir;
    QString error;
    const auto model = TraceModel::load(testing::writeKnownTraceWithMemory(dir), &error);
    QVERIFY2(model, qPrintable(error));
    TimelineScene scene;
    scene.setTraces({model.get()});
    scene.fit(kSize);
    const QImage image = renderImage(scene, kSize);
    const auto row = std::find_if(scene.rows().begin(), scene.rows().end(), [&](const VisualRow& v) {
      return v.type == RowType::Lane && model->rows()[static_cast<std::size_t>(v.row)].memoryDevice >= 0;
    });
    QVERIFY(row != scene.rows().end());
    const int top = static_cast<int>(scene.rowsRect(kSize).top()) + row->y - scene.scrollY();
    const QRectF plot = scene.plotRect(kSize);
    const auto at = [&](double ns, int y) {
      return QColor(image.pixel(static_cast<int>(plot.left() + scene.mapping().toPixel(ns)), y));
    };
    const int nearTop = top + 6;
    const int middle = top + row->height / 2;
    // Times clear of the grid lines, which fall on round times.
    QVERIFY(at(237'000, nearTop) != palette::kBackground);  // at the peak: filled to the top
    QVERIFY(at(237'000, middle) != palette::kBackground);
    QCOMPARE(at(693'000, middle), palette::kBackground);  // back to the lowest: nothing above the bottom
    QCOMPARE(at(37'000, nearTop), palette::kBackground);  // 768 MiB: half way up
    QVERIFY(at(37'000, top + row->height - 6) != palette::kBackground);
  }

  void knownBubbleIsBackground() {
    Fixture f;
    const QImage image = renderImage(f.scene, kSize);
    const int top = f.laneTop(QStringLiteral("gpu0 compute"));
    const int height = f.scene.metrics().computeLaneHeight;
    const QRectF plot = f.scene.plotRect(kSize);
    // gpu0 idles in [200, 400) us; a quarter in (clear of its duration label) it is background.
    for (const double ns : {240'000.0, 360'000.0}) {
      const int x = static_cast<int>(plot.left() + f.scene.mapping().toPixel(ns));
      for (const int y : {top + height / 2, top + 8, top + height - 8}) {
        QCOMPARE(QColor(image.pixel(x, y)), palette::kBackground);
      }
    }
    // ... while a busy moment of the same row is not.
    const int busy = static_cast<int>(plot.left() + f.scene.mapping().toPixel(500'000));
    QVERIFY(QColor(image.pixel(busy, top + height / 2)) != palette::kBackground);
  }

  void highlightFadesOtherMicrobatches() {
    Fixture f;
    f.scene.setHighlightedMicrobatch(0);
    const QImage image = renderImage(f.scene, kSize);
    const int top = f.laneTop(QStringLiteral("gpu0 compute"));
    const QRectF plot = f.scene.plotRect(kSize);
    const auto at = [&](double ns) {
      return QColor(image.pixel(static_cast<int>(plot.left() + f.scene.mapping().toPixel(ns)), top + 6));
    };
    QCOMPARE(at(50'000), kindColor(mpsim::trace::SpanKind::Forward));    // F0: microbatch 0
    QVERIFY(at(150'000) != kindColor(mpsim::trace::SpanKind::Forward));  // F1: faded
    QVERIFY(at(150'000) != palette::kBackground);
  }

  void renderingIsDeterministic() {
    Fixture f;
    const QImage a = renderImage(f.scene, kSize);
    Fixture g;
    const QImage b = renderImage(g.scene, kSize);
    QCOMPARE(a, b);
    QCOMPARE(renderSvg(f.scene, kSize), renderSvg(g.scene, kSize));
  }

  void svgIsWellFormedWithOneRectPerBar() {
    Fixture f;
    const QString svg = renderSvg(f.scene, kSize);
    QXmlStreamReader xml(svg);
    int forward = 0;
    while (!xml.atEnd()) {
      xml.readNext();
      if (xml.isStartElement() && xml.name() == QLatin1String("rect") &&
          xml.attributes().value(QLatin1String("fill")) == kindColor(mpsim::trace::SpanKind::Forward).name()) {
        ++forward;
      }
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    // Four forward spans, plus the legend swatch.
    QCOMPARE(forward, 4 + 1);
  }

  void commandLineScreenshot() {
    Fixture f;
    const QString png = f.dir.filePath(QStringLiteral("out.png"));
    QProcess process;
    process.start(QStringLiteral(MPSIM_VIEW_BINARY), {f.model->sourcePath(), QStringLiteral("--screenshot"), png,
                                                      QStringLiteral("--width"), QStringLiteral("900")});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 0);
    const QImage image(png);
    QCOMPARE(image.width(), 900);
    QCOMPARE(image.height(), f.scene.naturalHeight());

    const QString svgPath = f.dir.filePath(QStringLiteral("out.svg"));
    process.start(QStringLiteral(MPSIM_VIEW_BINARY), {f.model->sourcePath(), QStringLiteral("--screenshot"), svgPath});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 0);
    QFile svg(svgPath);
    QVERIFY(svg.open(QIODevice::ReadOnly));
    QVERIFY(svg.readAll().startsWith("<?xml"));
  }

  void timeRanges() {
    std::pair<double, double> range;
    QString error;
    QVERIFY(parseTimeRange(QStringLiteral("10ms:25ms"), &range, &error));
    QCOMPARE(range.first, 1e7);
    QCOMPARE(range.second, 2.5e7);
    QVERIFY(parseTimeRange(QStringLiteral("0:1.5s"), &range, &error));
    QCOMPARE(range.second, 1.5e9);
    QVERIFY(parseTimeRange(QStringLiteral("100us:200us"), &range, &error));
    QCOMPARE(range.first, 1e5);
    QVERIFY(!parseTimeRange(QStringLiteral("10:20"), &range, &error));      // units are needed
    QVERIFY(!parseTimeRange(QStringLiteral("25ms:10ms"), &range, &error));  // the end comes after the start
    QVERIFY(error.contains(QStringLiteral("after")));
    QVERIFY(!parseTimeRange(QStringLiteral("10ms"), &range, &error));
  }

  void commandLineScreenshotOfATimeRange() {
    // gpu0 computes F0 [0, 100) and F1 [100, 200) us, then B0 and B1 from 400 us: of its four bars only
    // the two forwards are in 0:200us, and they fill the plot.
    Fixture f;
    const QString png = f.dir.filePath(QStringLiteral("range.png"));
    QProcess process;
    process.start(QStringLiteral(MPSIM_VIEW_BINARY),
                  {f.model->sourcePath(), QStringLiteral("--screenshot"), png, QStringLiteral("--width"),
                   QString::number(kSize.width()), QStringLiteral("--height"), QString::number(kSize.height()),
                   QStringLiteral("--range"), QStringLiteral("0:200us")});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 0);
    const QImage image(png);
    const QRectF plot = f.scene.plotRect(kSize);
    const int y = f.laneTop(QStringLiteral("gpu0 compute")) + 6;
    QCOMPARE(barsOnLine(image, plot, y), 2);
    QCOMPARE(QColor(image.pixel(static_cast<int>(plot.left()) + 2, y)),
             kindColor(mpsim::trace::SpanKind::Forward));
    QCOMPARE(QColor(image.pixel(static_cast<int>(plot.right()) - 3, y)),
             kindColor(mpsim::trace::SpanKind::Forward));

    process.start(QStringLiteral(MPSIM_VIEW_BINARY), {f.model->sourcePath(), QStringLiteral("--screenshot"), png,
                                                      QStringLiteral("--range"), QStringLiteral("5ms")});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 2);
    QVERIFY(QString::fromUtf8(process.readAllStandardError()).contains(QStringLiteral("--range")));
  }

  void commandLineScreenshotWithTheReportPanel() {
    // --report puts the window's report panel to the right of the same timeline pixels.
    Fixture f;
    const QString plain = f.dir.filePath(QStringLiteral("plain.png"));
    const QString withReport = f.dir.filePath(QStringLiteral("report.png"));
    const QStringList size = {QStringLiteral("--width"), QString::number(kSize.width()), QStringLiteral("--height"),
                              QString::number(kSize.height())};
    QProcess process;
    process.start(QStringLiteral(MPSIM_VIEW_BINARY), QStringList{f.model->sourcePath(), QStringLiteral("--screenshot"), plain} + size);
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 0);
    process.start(QStringLiteral(MPSIM_VIEW_BINARY),
                  QStringList{f.model->sourcePath(), QStringLiteral("--screenshot"), withReport, QStringLiteral("--report")} + size);
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 0);
    const QImage timeline(plain);
    const QImage image(withReport);
    QCOMPARE(image.width(), kSize.width() + 420);
    QVERIFY(image.height() >= kSize.height());
    QCOMPARE(image.copy(0, 0, kSize.width(), kSize.height()), timeline.convertToFormat(image.format()));
    // The panel holds text: dark pixels right of the timeline.
    int dark = 0;
    for (int y = 0; y < image.height(); ++y) {
      for (int x = kSize.width(); x < image.width(); ++x) dark += qGray(image.pixel(x, y)) < 100 ? 1 : 0;
    }
    QVERIFY2(dark > 200, qPrintable(QString::number(dark)));

    process.start(QStringLiteral(MPSIM_VIEW_BINARY), {f.model->sourcePath(), QStringLiteral("--screenshot"),
                                                      f.dir.filePath(QStringLiteral("x.svg")), QStringLiteral("--report")});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitCode(), 2);
    QVERIFY(QString::fromUtf8(process.readAllStandardError()).contains(QStringLiteral("--report")));
  }

  void commandLineReportsBrokenFiles() {
    QTemporaryDir dir;
    const QString broken = testing::writeFile(dir, QStringLiteral("broken.json"), "{\"traceEvents\":[{\"ph\":");
    QProcess process;
    process.start(QStringLiteral(MPSIM_VIEW_BINARY),
                  {broken, QStringLiteral("--screenshot"), dir.filePath(QStringLiteral("x.png"))});
    QVERIFY(process.waitForFinished(60000));
    QCOMPARE(process.exitStatus(), QProcess::NormalExit);
    QCOMPARE(process.exitCode(), 1);
    const QString err = QString::fromUtf8(process.readAllStandardError());
    QVERIFY2(err.contains(QStringLiteral("mpsim-view: ") + broken + QStringLiteral(": invalid JSON at byte")),
             qPrintable(err));
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("x.png"))));
  }
};

QTEST_MAIN(ViewScreenshotTest)
#include "view_screenshot_test.moc"
