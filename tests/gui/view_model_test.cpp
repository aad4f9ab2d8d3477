// The viewer's model and interactions on a known trace: rows and spans, bubbles, time <-> pixel
// mapping, axis ticks, tooltips, microbatch highlight (by clicking a bar), broken files, reload.
#include <QApplication>
#include <QHelpEvent>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QToolTip>

#include <algorithm>
#include <fstream>
#include <memory>
#include <set>

#include "gui/main_window.h"
#include "gui/report_panel.h"
#include "gui/time_mapping.h"
#include "gui/timeline_widget.h"
#include "gui/trace_model.h"
#include "sim/core/gzip.h"
#include "known_trace.h"

using namespace mpsim::view;
using mpsim::trace::SpanKind;

namespace {

std::unique_ptr<TraceModel> loadKnown(const QTemporaryDir& dir) {
  QString error;
  auto model = TraceModel::load(testing::writeKnownTrace(dir), &error);
  if (!model) qWarning() << error;
  return model;
}

int rowOf(const TraceModel& model, const QString& thread) {
  for (int i = 0; i < static_cast<int>(model.rows().size()); ++i) {
    if (model.rows()[static_cast<std::size_t>(i)].thread == thread) return i;
  }
  return -1;
}

}  // namespace

class ViewModelTest : public QObject {
  Q_OBJECT

 private slots:
  void rowsAndSpans() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    QVERIFY(model);
    QCOMPARE(model->timeline().spans.size(), std::size_t{12});
    // Four rows: the unused link lane carried nothing and is left out.
    QCOMPARE(model->rows().size(), std::size_t{4});
    QStringList threads;
    for (const auto& r : model->rows()) threads << r.thread;
    QCOMPARE(threads, (QStringList{"gpu0 compute", "gpu0 send", "gpu1 compute", "node0/nic0-node1/nic0"}));
    QStringList groups;
    for (const auto& g : model->groups()) groups << g.name;
    QCOMPARE(groups, (QStringList{"node0", "node1", "links"}));
    QVERIFY(model->groups().back().isLinks);
    QVERIFY(model->rows()[3].isLink);
    QVERIFY(model->rows()[0].showsBubbles);
    QVERIFY(!model->rows()[1].showsBubbles);

    const TraceRow& gpu0 = model->rows()[0];
    QCOMPARE(gpu0.spans.size(), std::size_t{4});
    std::vector<std::int64_t> starts;
    for (const auto i : gpu0.spans) starts.push_back(model->span(i).start_ns);
    QCOMPARE(starts, (std::vector<std::int64_t>{0, 100'000, 400'000, 600'000}));
    QCOMPARE(model->span(gpu0.spans[2]).kind, SpanKind::Backward);
    QCOMPARE(gpu0.bubbles.size(), std::size_t{1});
    QCOMPARE(gpu0.bubbles[0].startNs, 200'000);
    QCOMPARE(gpu0.bubbles[0].endNs, 400'000);
    const TraceRow& gpu1 = model->rows()[2];
    QCOMPARE(gpu1.spans.size(), std::size_t{4});
    QCOMPARE(gpu1.bubbles.size(), std::size_t{2});
    QCOMPARE(gpu1.bubbles[0].startNs, 0);
    QCOMPARE(gpu1.bubbles[0].endNs, 120'000);
    QCOMPARE(gpu1.bubbles[1].startNs, 480'000);
    QCOMPARE(gpu1.bubbles[1].endNs, 800'000);
    QCOMPARE(model->startNs(), 0);
    QCOMPARE(model->endNs(), 800'000);
    QCOMPARE(model->stepTimeNs(), 800'000.0);
    QVERIFY(model->report().has_value());
  }

  void culling() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    QVERIFY(model);
    const int row = rowOf(*model, QStringLiteral("gpu0 compute"));
    // [150us, 450us] intersects F1 and B0 only.
    const auto [first, last] = model->spanRange(row, 150'000, 450'000);
    QCOMPARE(first, std::size_t{1});
    QCOMPARE(last, std::size_t{3});
    QCOMPARE(model->spanAt(row, 250'000, 10'000), std::nullopt);
    QCOMPARE(model->spanAt(row, 450'000, 0).value(), model->rows()[static_cast<std::size_t>(row)].spans[2]);
  }

  void mappingRoundTrip_data() {
    QTest::addColumn<double>("start");
    QTest::addColumn<double>("nsPerPixel");
    QTest::addColumn<double>("time");
    QTest::newRow("unit") << 0.0 << 1.0 << 12345.0;
    QTest::newRow("zoomed out") << -5e6 << 2.5e5 << 1.8e8;
    QTest::newRow("zoomed in") << 1e9 << 0.01 << 1e9 + 3.21;
    QTest::newRow("seconds") << 3e12 << 1e7 << 3.5e12;
  }
  void mappingRoundTrip() {
    QFETCH(double, start);
    QFETCH(double, nsPerPixel);
    QFETCH(double, time);
    const TimeMapping m(start, nsPerPixel);
    QVERIFY(std::abs(m.toTime(m.toPixel(time)) - time) <= 1e-6 * std::max(1.0, std::abs(time)));
    QVERIFY(std::abs(m.toPixel(m.toTime(123.5)) - 123.5) < 1e-3);
    QCOMPARE(m.toPixel(start), 0.0);
  }

  void mappingZoomAndRange() {
    TimeMapping m;
    m.showRange(100'000, 900'000, 800);
    QCOMPARE(m.toPixel(100'000), 0.0);
    QCOMPARE(m.toPixel(900'000), 800.0);
    const double anchor = m.toTime(200);
    m.zoomAt(200, 4);
    QCOMPARE(m.toTime(200), anchor);
    QCOMPARE(m.nsPerPixel(), 250.0);
    m.panPixels(10);
    QCOMPARE(m.toTime(190), anchor);
  }

  void axisTicksHaveReadableUnits() {
    QCOMPARE(tickStepNs(1000, 80), 100'000.0);  // 80 us wanted -> 100 us
    QCOMPARE(tickStepNs(1.5e6, 80), 2e8);       // 120 ms wanted -> 200 ms
    const TimeMapping m(0, 1000);               // 1 us per pixel
    const auto ticks = axisTicks(m, 500, 0);
    QStringList labels;
    for (const auto& t : ticks) labels << t.label;
    QCOMPARE(labels, (QStringList{"0", "0.1 ms", "0.2 ms", "0.3 ms", "0.4 ms", "0.5 ms"}));
    const auto small = axisTicks(TimeMapping(0, 10), 250, 0);  // 1 us steps
    QCOMPARE(small.at(2).label, QStringLiteral("2 \u00b5s"));
    const auto half = axisTicks(TimeMapping(0, 6250), 400, 0);  // 500 us steps
    QCOMPARE(half.at(1).label, QStringLiteral("0.5 ms"));
    QCOMPARE(formatDuration(850), QStringLiteral("850 ns"));
    QCOMPARE(formatDuration(1.5e6), QStringLiteral("1.500 ms"));
    QCOMPARE(formatDuration(2e9), QStringLiteral("2.000 s"));
    QCOMPARE(formatBytes(1 << 20), QStringLiteral("1.0 MiB"));
  }

  void tooltipOfKnownSpan() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    QVERIFY(model);
    // The second send of gpu0: microbatch 1.
    const TraceRow& send = model->rows()[static_cast<std::size_t>(rowOf(*model, QStringLiteral("gpu0 send")))];
    QCOMPARE(model->tooltipText(send.spans[1]),
             QStringLiteral("<b>send</b><br>microbatch 1, chunk 0, stage 0<br>start 200.000 \u00b5s<br>"
                            "duration 10.000 \u00b5s<br>bytes 1.0 MiB (1048576)<br>node0 / gpu0 send"));
    const TraceRow& gpu1 = model->rows()[static_cast<std::size_t>(rowOf(*model, QStringLiteral("gpu1 compute")))];
    QCOMPARE(model->tooltipText(gpu1.spans[2]),
             QStringLiteral("<b>backward</b><br>microbatch 0, chunk 0, stage 1<br>start 320.000 \u00b5s<br>"
                            "duration 80.000 \u00b5s<br>node1 / gpu1 compute"));
  }

  void bubbleUnderTheCursor() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    QVERIFY(model);
    const int gpu0 = rowOf(*model, QStringLiteral("gpu0 compute"));
    const auto bubble = model->bubbleAt(gpu0, 250'000);
    QVERIFY(bubble.has_value());
    QCOMPARE(bubble->startNs, 200'000);
    QCOMPARE(bubble->endNs, 400'000);
    QVERIFY(!model->bubbleAt(gpu0, 450'000).has_value());
    QVERIFY(!model->bubbleAt(gpu0, 400'000).has_value());
    QCOMPARE(
        model->bubbleTooltipText(*bubble),
        QStringLiteral("<b>bubble</b> (idle)<br>from 200.000 \u00b5s to 400.000 \u00b5s<br>duration 200.000 \u00b5s"));
  }

  void microbatchHighlightSelectsExactlyItsSpans() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    QVERIFY(model);
    const auto spans = model->microbatchSpans(1);
    std::set<std::uint32_t> expected;
    for (std::uint32_t i = 0; i < model->timeline().spans.size(); ++i) {
      if (model->span(i).microbatch == 1) expected.insert(i);
    }
    QCOMPARE(expected.size(), std::size_t{5});  // F1 and B1 on both stages, and one send
    QCOMPARE(std::set<std::uint32_t>(spans.begin(), spans.end()), expected);
    QVERIFY(std::is_sorted(spans.begin(), spans.end(),
                           [&](auto a, auto b) { return model->span(a).start_ns < model->span(b).start_ns; }));
    QVERIFY(model->microbatchSpans(-1).empty());
    QVERIFY(model->microbatchSpans(7).empty());
  }

  void clickingABarHighlightsItsMicrobatch() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    QVERIFY(model);
    TimelineWidget widget;
    widget.resize(1200, 400);
    widget.setTraces({model.get()}, false);
    QSignalSpy spy(&widget, &TimelineWidget::microbatchHighlighted);
    const TimelineScene& scene = widget.scene();
    // Centre of gpu1's F1 (microbatch 1, [220, 320) us).
    const auto& rows = scene.rows();
    const auto it = std::find_if(rows.begin(), rows.end(), [&](const VisualRow& v) {
      return v.type == RowType::Lane && model->rows()[static_cast<std::size_t>(v.row)].thread == "gpu1 compute";
    });
    QVERIFY(it != rows.end());
    const QRectF plot = scene.plotRect(widget.viewSize());
    const QPoint pos(static_cast<int>(plot.left() + scene.mapping().toPixel(270'000)),
                     static_cast<int>(scene.rowsRect(widget.viewSize()).top() + it->y + it->height / 2));
    const Hit hit = scene.hitTest(pos, widget.viewSize());
    QVERIFY(hit.span.has_value());
    QCOMPARE(model->span(*hit.span).microbatch, 1);
    // Hovering shows the span's tooltip.
    QHelpEvent help(QEvent::ToolTip, pos, widget.mapToGlobal(pos));
    QApplication::sendEvent(&widget, &help);
    QTRY_COMPARE(QToolTip::text(), model->tooltipText(*hit.span));
    QTest::mouseClick(&widget, Qt::LeftButton, {}, pos);
    QCOMPARE(scene.highlightedMicrobatch(), 1);
    QCOMPARE(spy.count(), 1);
    // Clicking it again clears the highlight.
    QTest::mouseClick(&widget, Qt::LeftButton, {}, pos);
    QCOMPARE(scene.highlightedMicrobatch(), -1);
  }

  void memoryRowUnderItsComputeRow() {
    QTemporaryDir dir;
    QString error;
    const auto model = TraceModel::load(testing::writeKnownTraceWithMemory(dir), &error);
    QVERIFY2(model, qPrintable(error));
    QStringList threads;
    for (const auto& r : model->rows()) threads << r.thread;
    // gpu1's report has no timeline: no memory row for it.
    QCOMPARE(threads,
             (QStringList{"gpu0 compute", "gpu0 memory", "gpu0 send", "gpu1 compute", "node0/nic0-node1/nic0"}));
    const TraceRow& memory = model->rows()[1];
    QCOMPARE(memory.memoryDevice, 0);
    QVERIFY(memory.spans.empty());
    QVERIFY(!memory.showsBubbles);
    QCOMPARE(memory.label, QStringLiteral("gpu0 memory ") + formatBytes(std::int64_t{1} << 30));  // its peak
    QCOMPARE(model->memoryRange().lowBytes, std::int64_t{512} << 20);
    QCOMPARE(model->memoryRange().highBytes, std::int64_t{1} << 30);
    TimelineScene scene;
    scene.setTraces({model.get()});
    const auto row =
        std::find_if(scene.rows().begin(), scene.rows().end(), [](const VisualRow& v) { return v.row == 1; });
    QVERIFY(row != scene.rows().end());
    QCOMPARE(row->height, scene.metrics().memoryLaneHeight);
    QCOMPARE(row->group, 0);  // node0's
  }

  void collapsingAGroupHidesItsRows() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    TimelineScene scene;
    scene.setTraces({model.get()});
    const auto before = scene.rows().size();
    QCOMPARE(before, std::size_t{1 + 3 + 4});  // trace header, 3 groups, 4 lanes
    scene.setCollapsed(0, 0, true);
    QCOMPARE(scene.rows().size(), before - 2);
    scene.setCollapsed(0, 0, false);
    QCOMPARE(scene.rows().size(), before);
  }

  void consecutiveCollapsedGroupsShareOneRow() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    TimelineScene scene;
    scene.setTraces({model.get()});
    const int height = scene.contentHeight();
    const int header = scene.metrics().groupHeaderHeight;
    // All three groups collapsed: one header row for the run, after the trace header.
    for (int g = 0; g < 3; ++g) scene.setCollapsed(0, g, true);
    QCOMPARE(scene.rows().size(), std::size_t{1 + 1});
    QCOMPARE(scene.rows()[1].group, 0);
    QCOMPARE(scene.rows()[1].last_group, 2);
    QCOMPARE(scene.contentHeight(), scene.metrics().traceHeaderHeight + header + scene.metrics().gap);
    // The first and the last collapsed are not consecutive: a header each, and the middle group's lanes.
    scene.setCollapsed(0, 1, false);
    QCOMPARE(scene.rows()[1].last_group, 0);
    QVERIFY(scene.contentHeight() < height);
  }

  void reportPanelShowsDevicesAndLinks() {
    QTemporaryDir dir;
    const auto model = loadKnown(dir);
    const QString html = reportHtml({model.get()}, -1);
    QVERIFY(html.contains(QStringLiteral("800.000 \u00b5s")));
    QVERIFY(html.contains(QStringLiteral("node1/gpu1")));
    QVERIFY(html.contains(QStringLiteral("55.0%")));
    QVERIFY(html.contains(QStringLiteral("3.00 GiB / 8.00 GiB")));
    QVERIFY(html.contains(QStringLiteral("node0/nic0-node1/nic0")));
  }

  void brokenFilesAreReported_data() {
    QTest::addColumn<QByteArray>("text");
    QTest::addColumn<QString>("message");
    const std::string full = mpsim::trace::chrome_trace(testing::knownTimeline(), testing::knownReport());
    QTest::newRow("truncated") << QByteArray::fromStdString(full.substr(0, full.size() / 2))
                               << QStringLiteral("unexpected end of input");
    QTest::newRow("foreign") << QByteArray(R"({"name":"not a trace"})") << QStringLiteral("no \"traceEvents\"");
    QTest::newRow("empty") << QByteArray() << QStringLiteral("empty file");
    QTest::newRow("binary") << QByteArray("\x89PNG\r\n\x1a\n", 8) << QStringLiteral("not a trace");
    QTest::newRow("truncated gzip") << QByteArray::fromStdString(mpsim::gzip_compress(full).substr(0, 100))
                                    << QStringLiteral("truncated gzip data");
  }
  void brokenFilesAreReported() {
    QFETCH(QByteArray, text);
    QFETCH(QString, message);
    QTemporaryDir dir;
    const QString path = testing::writeFile(dir, QStringLiteral("broken.json"), text.toStdString());
    QString error;
    QVERIFY(!TraceModel::load(path, &error));
    QVERIFY2(error.startsWith(path + QStringLiteral(": ")), qPrintable(error));
    QVERIFY2(error.contains(message), qPrintable(error));

    MainWindow window;
    window.openFiles({path});
    QVERIFY(window.openPaths().isEmpty());
    QCOMPARE(window.errorText(), error);
    // A good file clears the message; a broken one afterwards keeps the good trace on screen.
    const QString good = testing::writeKnownTrace(dir);
    window.openFiles({good});
    QCOMPARE(window.openPaths(), QStringList{good});
    QVERIFY(window.errorText().isEmpty());
    window.openFiles({path});
    QCOMPARE(window.openPaths(), QStringList{good});
    QVERIFY(!window.errorText().isEmpty());
  }

  void opensGzipTracesByContent() {
    QTemporaryDir dir;
    const auto plain = loadKnown(dir);
    QVERIFY(plain);
    const std::string gz =
        mpsim::gzip_compress(mpsim::trace::chrome_trace(testing::knownTimeline(), testing::knownReport()));
    // A renamed file (no .gz) opens too: the magic bytes decide, not the name.
    for (const QString& name : {QStringLiteral("known.json.gz"), QStringLiteral("renamed.json")}) {
      QString error;
      const auto model = TraceModel::load(testing::writeFile(dir, name, gz), &error);
      QVERIFY2(model, qPrintable(error));
      QCOMPARE(model->timeline().spans.size(), plain->timeline().spans.size());
      QCOMPARE(model->rows().size(), plain->rows().size());
      QCOMPARE(model->stepTimeNs(), plain->stepTimeNs());
    }
    MainWindow window;
    const QString path = dir.filePath(QStringLiteral("known.json.gz"));
    window.openFiles({path});
    QCOMPARE(window.openPaths(), QStringList{path});
    QVERIFY(window.errorText().isEmpty());
  }

  void comparisonAndReloadOnChange() {
    QTemporaryDir dir;
    const QString a = testing::writeKnownTrace(dir, QStringLiteral("a.json"));
    const QString b = testing::writeKnownTrace(dir, QStringLiteral("b.json"));
    MainWindow window;
    window.openFiles({a, b});
    QCOMPARE(window.openPaths(), (QStringList{a, b}));
    QCOMPARE(window.timeline()->scene().traces().size(), std::size_t{2});
    // Rewrite b with one span less: the watcher reloads it.
    auto timeline = testing::knownTimeline();
    timeline.spans.pop_back();
    testing::writeFile(dir, QStringLiteral("b.json"), mpsim::trace::chrome_trace(timeline, testing::knownReport()));
    QTRY_COMPARE_WITH_TIMEOUT(window.timeline()->scene().traces().at(1)->timeline().spans.size(), std::size_t{11},
                              5000);
    QCOMPARE(window.timeline()->scene().traces().at(0)->timeline().spans.size(), std::size_t{12});
    window.closeComparison();
    QCOMPARE(window.openPaths(), QStringList{a});
  }
};

QTEST_MAIN(ViewModelTest)
#include "view_model_test.moc"
