// mpsim-view at scale: opening a trace of one million spans (read + parse + rows and bubbles) and
// painting one frame of it at several zoom levels, on the offscreen platform. Frames are painted
// into a 1600x900 image with the same code the window uses; each zoom level is centred on the
// middle of the step. Also: opening the default trace of GPT-3 175B on 1024 A100 as `simulate
// --trace` writes it (run that one alone for its peak memory: --benchmark_filter=175B).
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QTemporaryDir>

#include <sys/resource.h>

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include <benchmark/benchmark.h>

#include "gui/canvas.h"
#include "gui/timeline_painter.h"
#include "gui/timeline_scene.h"
#include "gui/trace_model.h"
#include "sim/core/yaml_field.h"
#include "sim/engine/simulator.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"
#include "sim/trace/link_lanes.h"
#include "sim/trace/report.h"
#include "sim/trace/trace_json.h"

namespace {

using namespace mpsim;

/// 8 nodes x 8 GPUs, a compute and a send stream each: 800,000 compute spans (forward/backward
/// with small gaps, so there are bubbles everywhere) and 200,000 sends; plus link traffic lanes.
trace::Timeline millionSpans() {
  trace::Timeline t;
  constexpr int kGpus = 64;
  for (int g = 0; g < kGpus; ++g) {
    const std::string node = "node" + std::to_string(g / 8);
    t.lanes.push_back({node, "gpu" + std::to_string(g % 8) + " compute"});
    t.lanes.push_back({node, "gpu" + std::to_string(g % 8) + " send"});
  }
  t.spans.reserve(1'000'000);
  for (int g = 0; g < kGpus; ++g) {
    std::int64_t clock = g * 1'000;
    for (int i = 0; i < 12'500; ++i) {
      trace::Span s;
      s.lane = static_cast<std::uint32_t>(2 * g);
      s.kind = i % 2 == 0 ? trace::SpanKind::Forward : trace::SpanKind::Backward;
      s.start_ns = clock + (i % 7) * 300;
      s.end_ns = s.start_ns + (i % 2 == 0 ? 20'000 : 40'000);
      s.microbatch = i / 2;
      s.chunk = 0;
      s.stage = g % 8;
      t.spans.push_back(s);
      if (i % 4 == 0) {
        trace::Span send = s;
        send.lane = static_cast<std::uint32_t>(2 * g + 1);
        send.kind = trace::SpanKind::Send;
        send.start_ns = s.end_ns;
        send.end_ns = s.end_ns + 5'000;
        send.bytes = 16 << 20;
        t.spans.push_back(send);
      }
      clock = s.end_ns;
    }
  }
  return t;
}

/// The trace file, written once per process.
const std::string& tracePath() {
  static QTemporaryDir dir;
  static const std::string path = [] {
    const std::string p = dir.filePath(QStringLiteral("million.json")).toStdString();
    trace::Report report;
    report.step_time_s = 0.4;
    std::ofstream(p, std::ios::binary) << trace::chrome_trace(millionSpans(), report);
    return p;
  }();
  return path;
}

std::int64_t fileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  return static_cast<std::int64_t>(in.tellg());
}

void BM_OpenTrace1M(benchmark::State& state) {
  const std::string& path = tracePath();
  const std::int64_t bytes = fileBytes(path);
  for (auto _ : state) {
    QString error;
    auto model = view::TraceModel::load(QString::fromStdString(path), &error);
    if (!model) state.SkipWithError(error.toStdString().c_str());
    benchmark::DoNotOptimize(model.get());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["spans"] = 1e6;
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_OpenTrace1M)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

std::string repoPath(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// GPT-3 175B on Selene cut to 128 nodes (1024 A100), configs/plans/megatron-175b-interleaved.yaml
/// (TP 8 x PP 8 x DP 16, interleaved 1F1B): the trace `mpsim simulate --trace` writes by default (one
/// data-parallel replica, the busiest links), written once per process.
const std::string& gpt3On1024Path() {
  static QTemporaryDir dir;
  static const std::string path = [] {
    YamlDocument topology = YamlDocument::load(repoPath("topologies/selene.yaml"));
    topology.apply(Override{"topology", "nodes", "128", "bench"});
    const auto cluster = topology::build_cluster(topology::load_topology_spec(topology.root()));
    const auto model = model::load_model_file(repoPath("configs/models/gpt3-175b.yaml"));
    const auto plan =
        plan::resolve_plan(plan::load_plan_file(repoPath("configs/plans/megatron-175b-interleaved.yaml")), cluster, model);
    engine::EngineOptions options;
    options.record_timeline = true;
    const auto prediction = engine::simulate(cluster, model, plan, options);
    const std::string p = dir.filePath(QStringLiteral("gpt3-175b-1024.json")).toStdString();
    std::ofstream(p, std::ios::binary)
        << trace::chrome_trace(trace::select_link_lanes(prediction.timeline, trace::LinkLanes::Busiest), prediction.report);
    return p;
  }();
  return path;
}

void BM_OpenTrace175B1024(benchmark::State& state) {
  const std::string& path = gpt3On1024Path();
  const std::int64_t bytes = fileBytes(path);
  std::size_t rows = 0;
  for (auto _ : state) {
    QString error;
    auto model = view::TraceModel::load(QString::fromStdString(path), &error);
    if (!model) state.SkipWithError(error.toStdString().c_str());
    else rows = model->rows().size();
    benchmark::DoNotOptimize(model.get());
  }
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["rows"] = static_cast<double>(rows);
  state.counters["peak_rss_MB"] = static_cast<double>(usage.ru_maxrss) / 1e3;  // of the process so far
}
BENCHMARK(BM_OpenTrace175B1024)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(3);

/// One frame at zoom `state.range(0)` (1 = whole step, 1000 = a thousandth of it).
void BM_PaintFrame1M(benchmark::State& state) {
  static const std::unique_ptr<view::TraceModel> model = [] {
    QString error;
    return view::TraceModel::load(QString::fromStdString(tracePath()), &error);
  }();
  const QSize size(1600, 900);
  view::TimelineScene scene;
  scene.setTraces({model.get()});
  scene.fit(size);
  const double width = scene.plotRect(size).width();
  scene.mapping().zoomAt(width / 2, static_cast<double>(state.range(0)));
  QImage image(size, QImage::Format_RGB32);
  int frame = 0;
  for (auto _ : state) {
    // Pan a little each frame, as a user dragging would.
    scene.mapping().panPixels(frame++ % 2 == 0 ? 40 : -40);
    QPainter painter(&image);
    view::PainterCanvas canvas(painter);
    view::paintTimeline(canvas, scene, size);
    painter.end();
    benchmark::DoNotOptimize(image.constBits());
  }
  state.counters["ns_per_px"] = scene.mapping().nsPerPixel();
}
BENCHMARK(BM_PaintFrame1M)->Arg(1)->Arg(10)->Arg(100)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  QGuiApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
