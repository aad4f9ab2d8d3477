// Reading traces back: chrome_trace() output round-trips exactly, other valid layouts are read, and
// truncated or foreign files are rejected with a message that names the file.
#include "sim/trace/trace_reader.h"

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/core/gzip.h"
#include "sim/trace/trace_json.h"

namespace mpsim::trace {
namespace {

Report sample_report() {
  Report r;
  r.step_time_s = 0.123456789012345;
  r.bubble_fraction = 1.0 / 3.0;
  r.bubble_rate = 0.125;
  r.tflops_per_gpu = 150.5;
  r.hardware_tflops_per_gpu = 160.25;
  r.mfu = 0.48;
  r.peak_memory_bytes = 41'231'231'231LL;
  r.oom = true;
  r.devices.push_back({"node0/gpu0", 0, 0.375, 0.125, 0.25, 41'231'231'231LL, 42'949'672'960LL, false,
                        {8'000'000'000LL, 16'000'000'000LL, 6'000'000'000LL, 9'231'231'231LL, 2'000'000'000LL,
                         3'000'000'000LL}});  // optimizer_step: its fp32 gradient copies
  r.devices.front().memory_timeline = {
      {0.0, 39'231'231'231LL}, {0.001234567, 41'231'231'231LL}, {0.1, 39'231'231'231LL}};
  r.devices.push_back({"node1/gpu0", 1, 0.1, 0.2, 2.0 / 3.0, 1'000, 42'949'672'960LL, true, {}});
  r.devices.back().communication_wait_s = 0.0625;
  r.communication_wait_fraction = 1.0 / 7.0;
  r.links.push_back({"node0/nvlink:gpu0-gpu1", 123'456, 0.01});
  r.links.push_back({"node0/nic0", 0, 0.0});
  r.plan.document = R"({"parallelism":{"tensor":8,"pipeline":2,"data":2,"virtual_stages":2,"context":2,"expert":4,)"
                    R"("expert_tensor":2},"batch":{"global":128,"micro":4,"microbatches":16},"schedule":"interleaved",)"
                    R"("recompute":"selective","zero":1,"precision":"fp8","attention":"flash","attention_kernel":"fa3"})";
  // What the reader takes from the document (and expert_load from beside it).
  r.plan.tensor = 8;
  r.plan.pipeline = 2;
  r.plan.data = 2;
  r.plan.virtual_stages = 2;
  r.plan.microbatches = 16;
  r.plan.micro_batch_size = 4;
  r.plan.global_batch = 128;
  r.plan.schedule = "interleaved";
  r.plan.recompute = "selective";
  r.plan.zero = 1;
  r.plan.precision = "fp8";
  r.plan.attention = "flash";
  r.plan.attention_kernel = "fa3";
  r.plan.context = 2;
  r.plan.expert = 4;
  r.plan.expert_tensor = 2;
  r.plan.expert_load = 1.375;
  // Two classes of replicas that run apart (uneven shares on two kinds), two pipeline ranks each.
  ReplicaClassReport fast;
  fast.replicas = {0, 2};
  fast.microbatches = 11;
  fast.stages.push_back({"node0/gpu0", 0, 0.375, 0.0625, 1.0 / 7.0, 13'000'000'001LL, 85'899'345'920LL, false,
                         {1'000LL, 2'000LL, 3'000LL, 4'000LL, 0}});
  fast.stages.push_back({"node1/gpu0", 1, 0.4, 0.0375, 0.1, 12'000'000'000LL, 85'899'345'920LL, false, {}});
  fast.stages.back().communication_wait_s = 0.003;
  fast.gpu_kinds = {"h100-sxm", "h100-sxm"};
  fast.gpus_per_stage = 16;
  ReplicaClassReport slow;
  slow.replicas = {1};
  slow.microbatches = 5;
  slow.stages.push_back({"node2/gpu0", 0, 0.41, 0.0275, 1.0 / 3.0, 13'000'000'001LL, 42'949'672'960LL, true, {}});
  slow.stages.push_back({"node3/gpu0", 1, 0.42, 0.0175, 0.04, 12'000'000'000LL, 42'949'672'960LL, false, {}});
  slow.gpu_kinds = {"a100-40gb", "a100-40gb"};
  slow.gpus_per_stage = 8;
  r.replica_classes = {fast, slow};
  return r;
}

/// Lanes in two processes interleaved (node1 lanes between node0 ones), a lane with no spans, a
/// name that needs escaping, negative and sub-microsecond times, every kind.
Timeline sample_timeline() {
  Timeline t;
  t.lanes = {{"node0", "gpu0 compute"},
             {"node1", "gpu0 compute"},
             {"node0", "gpu0 p2p"},
             {"links", "node0/nvlink:gpu0-nvswitch0"},
             {"links", "node0/nic0 \"quoted\" \\ é"},
             {"node1", "gpu0 p2p"}};
  const SpanKind kinds[] = {SpanKind::Forward,   SpanKind::Backward,  SpanKind::BackwardInput, SpanKind::BackwardWeight,
                            SpanKind::Send,      SpanKind::Recv,      SpanKind::AllReduce,     SpanKind::ReduceScatter,
                            SpanKind::AllGather, SpanKind::Optimizer, SpanKind::Transfer};
  std::int64_t t0 = -1'500;
  int i = 0;
  for (const SpanKind k : kinds) {
    Span s;
    s.lane = static_cast<std::uint32_t>(i % 6 == 4 ? 3 : i % 6);
    s.kind = k;
    s.start_ns = t0;
    s.end_ns = t0 + 999 + i * 1'000'003;
    s.microbatch = k == SpanKind::Optimizer ? -1 : i;
    s.chunk = i % 2;
    s.stage = i % 3 - 1;
    s.bytes = i * 1'234'567'891LL;
    s.op = k == SpanKind::Transfer ? -1 : 3 * i;  // link traffic carries no op
    t.spans.push_back(s);
    t0 = s.end_ns + 7;
    ++i;
  }
  Span late;
  late.lane = 1;
  late.kind = SpanKind::Forward;
  late.start_ns = 3'000'000'000'001LL;
  late.end_ns = 3'000'000'000'002LL;
  t.spans.push_back(late);
  return t;
}

void expect_same(const Timeline& a, const Timeline& b) {
  ASSERT_EQ(a.lanes.size(), b.lanes.size());
  for (std::size_t i = 0; i < a.lanes.size(); ++i) {
    EXPECT_EQ(a.lanes[i].process, b.lanes[i].process) << i;
    EXPECT_EQ(a.lanes[i].thread, b.lanes[i].thread) << i;
  }
  ASSERT_EQ(a.spans.size(), b.spans.size());
  for (std::size_t i = 0; i < a.spans.size(); ++i) {
    const Span& x = a.spans[i];
    const Span& y = b.spans[i];
    EXPECT_EQ(x.lane, y.lane) << i;
    EXPECT_EQ(x.kind, y.kind) << i;
    EXPECT_EQ(x.start_ns, y.start_ns) << i;
    EXPECT_EQ(x.end_ns, y.end_ns) << i;
    EXPECT_EQ(x.microbatch, y.microbatch) << i;
    EXPECT_EQ(x.chunk, y.chunk) << i;
    EXPECT_EQ(x.stage, y.stage) << i;
    EXPECT_EQ(x.op, y.op) << i;
    EXPECT_EQ(x.bytes, y.bytes) << i;
  }
}

void expect_same(const DeviceReport& x, const DeviceReport& y) {
  EXPECT_EQ(x.id, y.id);
  EXPECT_EQ(x.stage, y.stage) << x.id;
  EXPECT_EQ(x.busy_s, y.busy_s) << x.id;
  EXPECT_EQ(x.idle_s, y.idle_s) << x.id;
  EXPECT_EQ(x.bubble_fraction, y.bubble_fraction) << x.id;
  EXPECT_EQ(x.communication_wait_s, y.communication_wait_s) << x.id;
  EXPECT_EQ(x.peak_memory_bytes, y.peak_memory_bytes) << x.id;
  EXPECT_EQ(x.memory_capacity_bytes, y.memory_capacity_bytes) << x.id;
  EXPECT_EQ(x.oom, y.oom) << x.id;
  EXPECT_EQ(x.memory, y.memory) << x.id;
  EXPECT_EQ(x.memory_timeline, y.memory_timeline) << x.id;
}

void expect_same(const Report& a, const Report& b) {
  // Exact comparisons: the report's doubles are written shortest-round-trip.
  EXPECT_EQ(a.step_time_s, b.step_time_s);
  EXPECT_EQ(a.bubble_fraction, b.bubble_fraction);
  EXPECT_EQ(a.bubble_rate, b.bubble_rate);
  EXPECT_EQ(a.communication_wait_fraction, b.communication_wait_fraction);
  EXPECT_EQ(a.tflops_per_gpu, b.tflops_per_gpu);
  EXPECT_EQ(a.hardware_tflops_per_gpu, b.hardware_tflops_per_gpu);
  EXPECT_EQ(a.mfu, b.mfu);
  EXPECT_EQ(a.peak_memory_bytes, b.peak_memory_bytes);
  EXPECT_EQ(a.oom, b.oom);
  ASSERT_EQ(a.devices.size(), b.devices.size());
  for (std::size_t i = 0; i < a.devices.size(); ++i) expect_same(a.devices[i], b.devices[i]);
  ASSERT_EQ(a.replica_classes.size(), b.replica_classes.size());
  for (std::size_t i = 0; i < a.replica_classes.size(); ++i) {
    const ReplicaClassReport& x = a.replica_classes[i];
    const ReplicaClassReport& y = b.replica_classes[i];
    EXPECT_EQ(x.replicas, y.replicas) << i;
    EXPECT_EQ(x.microbatches, y.microbatches) << i;
    EXPECT_EQ(x.gpu_kinds, y.gpu_kinds) << i;
    EXPECT_EQ(x.gpus_per_stage, y.gpus_per_stage) << i;
    ASSERT_EQ(x.stages.size(), y.stages.size()) << i;
    for (std::size_t s = 0; s < x.stages.size(); ++s) expect_same(x.stages[s], y.stages[s]);
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i) {
    EXPECT_EQ(a.links[i].id, b.links[i].id);
    EXPECT_EQ(a.links[i].bytes, b.links[i].bytes);
    EXPECT_EQ(a.links[i].busy_s, b.links[i].busy_s);
  }
  // The same plan document, whatever the order of its keys (none when the report has no plan).
  const auto document = [](const std::string& text) { return text.empty() ? nlohmann::json() : nlohmann::json::parse(text); };
  EXPECT_EQ(document(a.plan.document), document(b.plan.document));
  EXPECT_EQ(a.plan.tensor, b.plan.tensor);
  EXPECT_EQ(a.plan.pipeline, b.plan.pipeline);
  EXPECT_EQ(a.plan.data, b.plan.data);
  EXPECT_EQ(a.plan.virtual_stages, b.plan.virtual_stages);
  EXPECT_EQ(a.plan.microbatches, b.plan.microbatches);
  EXPECT_EQ(a.plan.micro_batch_size, b.plan.micro_batch_size);
  EXPECT_EQ(a.plan.global_batch, b.plan.global_batch);
  EXPECT_EQ(a.plan.schedule, b.plan.schedule);
  EXPECT_EQ(a.plan.recompute, b.plan.recompute);
  EXPECT_EQ(a.plan.zero, b.plan.zero);
  EXPECT_EQ(a.plan.precision, b.plan.precision);
  EXPECT_EQ(a.plan.attention, b.plan.attention);
  EXPECT_EQ(a.plan.attention_kernel, b.plan.attention_kernel);
  EXPECT_EQ(a.plan.context, b.plan.context);
  EXPECT_EQ(a.plan.expert, b.plan.expert);
  EXPECT_EQ(a.plan.expert_tensor, b.plan.expert_tensor);
  EXPECT_EQ(a.plan.expert_load, b.plan.expert_load);
}

std::string error_of(std::string_view text) {
  try {
    (void)parse_trace(text, "bad.json");
  } catch (const TraceReadError& e) {
    return e.what();
  }
  return "";
}

TEST(TraceReader, RoundTripsChromeTraceExactly) {
  const Timeline timeline = sample_timeline();
  const Report report = sample_report();
  const TraceFile back = parse_trace(chrome_trace(timeline, report), "sample.json");
  expect_same(timeline, back.timeline);
  ASSERT_TRUE(back.report.has_value());
  expect_same(report, *back.report);
}

TEST(TraceReader, RoundTripsEmptyTimeline) {
  const TraceFile back = parse_trace(chrome_trace(Timeline{}, Report{}), "empty.json");
  EXPECT_TRUE(back.timeline.lanes.empty());
  EXPECT_TRUE(back.timeline.spans.empty());
  ASSERT_TRUE(back.report.has_value());
  expect_same(Report{}, *back.report);
}

TEST(TraceReader, ParseReportInvertsReportJson) {
  const Report report = sample_report();
  expect_same(report, parse_report(nlohmann::json::parse(report_json(report).dump())));
}

TEST(TraceReader, ParseReportReadsBackTheReplicaClasses) {
  // Written, parsed, equal: every class, its replicas, count, GPU kinds and GPUs, and each stage's figures.
  const Report report = sample_report();
  ASSERT_EQ(report.replica_classes.size(), 2U);
  const Report back = parse_report(nlohmann::json::parse(report_json(report).dump()));
  EXPECT_TRUE(back.replica_classes == report.replica_classes);
  EXPECT_EQ(back.replica_classes[1].stages[0].oom, true);
  EXPECT_EQ(back.replica_classes[0].gpus_per_stage, 16);
  // Written again, the same JSON.
  EXPECT_EQ(report_json(back)["replica_classes"].dump(), report_json(report)["replica_classes"].dump());
  // A report of replicas that run alike has no classes, and reads back none.
  Report alike = report;
  alike.replica_classes.clear();
  EXPECT_FALSE(report_json(alike).contains("replica_classes"));
  EXPECT_TRUE(parse_report(nlohmann::json::parse(report_json(alike).dump())).replica_classes.empty());
}

TEST(TraceReader, MalformedReplicaClassesNameTheField) {
  const auto error = [](const char* text) {
    try {
      (void)parse_report(nlohmann::json::parse(text));
    } catch (const TraceReadError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(R"({"replica_classes": [{"replicas": [0, "one"]}]})"),
            "report: replica_classes[0].replicas[1] is not an integer");
  EXPECT_EQ(error(R"({"replica_classes": [{"microbatches": 2, "stages": [{"gpu_kind": 7}]}]})"),
            "report: replica_classes[0].stages[0].gpu_kind is not a string");
  EXPECT_EQ(error(R"({"replica_classes": [3]})"), "report: replica_classes[0] is not an object");
  EXPECT_EQ(error(R"({"replica_classes": [{"stages": [{"busy_s": "x"}]}]})"),
            "report: replica_classes[0].stages[0].busy_s is not a number");
}

TEST(TraceReader, ReadsTheFlatPlanOfOlderReports) {
  // Reports wrote their plan flat, expert_load inside it, before they wrote the plan file's schema.
  const Report r = parse_report(nlohmann::json::parse(
      R"({"step_time_s": 1, "plan": {"tensor": 4, "pipeline": 2, "data": 3, "context": 2, "microbatches": 12,
          "micro_batch_size": 2, "global_batch": 72, "schedule": "zb-h1", "expert": 2, "expert_load": 1.5}})"));
  EXPECT_EQ(r.plan.tensor, 4);
  EXPECT_EQ(r.plan.pipeline, 2);
  EXPECT_EQ(r.plan.data, 3);
  EXPECT_EQ(r.plan.context, 2);
  EXPECT_EQ(r.plan.microbatches, 12);
  EXPECT_EQ(r.plan.micro_batch_size, 2);
  EXPECT_EQ(r.plan.global_batch, 72);
  EXPECT_EQ(r.plan.schedule, "zb-h1");
  EXPECT_EQ(r.plan.expert, 2);
  EXPECT_EQ(r.plan.expert_load, 1.5);
}

TEST(TraceReader, ReadsTheFileFromDisk) {
  const auto path = std::filesystem::temp_directory_path() / "mpsim_trace_reader_test.json";
  {
    std::ofstream out(path, std::ios::binary);
    out << chrome_trace(sample_timeline(), sample_report());
  }
  const TraceFile back = read_trace_file(path.string());
  std::filesystem::remove(path);
  expect_same(sample_timeline(), back.timeline);
}

/// Writes `bytes` to a fresh file in the temporary folder and returns its path.
std::filesystem::path temporary_file(const std::string& name, const std::string& bytes) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream out(path, std::ios::binary);
  out << bytes;
  return path;
}

TEST(TraceReader, ReadsGzipByContentNotName) {
  const std::string gz = mpsim::gzip_compress(chrome_trace(sample_timeline(), sample_report()));
  for (const std::string name : {"mpsim_trace_reader_test.json.gz", "mpsim_trace_reader_test_renamed.json"}) {
    const auto path = temporary_file(name, gz);
    const TraceFile back = read_trace_file(path.string());
    std::filesystem::remove(path);
    expect_same(sample_timeline(), back.timeline);
    ASSERT_TRUE(back.report.has_value());
    expect_same(sample_report(), *back.report);
  }
}

TEST(TraceReader, CorruptGzipIsOneLineNamingTheFile) {
  const std::string gz = mpsim::gzip_compress(chrome_trace(sample_timeline(), sample_report()));
  const auto path = temporary_file("mpsim_trace_reader_test_truncated.json.gz", gz.substr(0, gz.size() / 2));
  try {
    (void)read_trace_file(path.string());
    FAIL() << "no error";
  } catch (const TraceReadError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind(path.string() + ": truncated gzip data", 0), 0u) << what;
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
  }
  std::filesystem::remove(path);
}

TEST(TraceReader, MissingFileNamesIt) {
  try {
    (void)read_trace_file("/nonexistent/dir/trace.json");
    FAIL() << "no error";
  } catch (const TraceReadError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/trace.json: "), std::string::npos) << e.what();
  }
}

TEST(TraceReader, AcceptsOtherValidLayouts) {
  // Keys in another order, whitespace, unknown keys and phases, no report, exponent times,
  // a bare array and "idle" spans skipped.
  const std::string text = R"( {
    "otherTopLevel": [1, {"a": null}],
    "traceEvents": [
      {"args": {"name": "gpu1 compute"}, "tid": 7, "pid": 2, "name": "thread_name", "ph": "M"},
      {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "node1"}},
      {"ph": "i", "pid": 2, "tid": 7, "ts": 5, "name": "instant"},
      {"ph": "X", "cat": "idle", "pid": 2, "tid": 7, "ts": 0, "dur": 1},
      {"dur": 2.5e1, "ts": 1e3, "tid": 7, "pid": 2, "cat": "backward", "ph": "X", "name": "B1",
       "args": {"stage": 1, "mb": 1, "extra": [true, false], "chunk": 0}},
      {"ph": "X", "cat": "send", "pid": 3, "tid": 1, "ts": 0.0005, "dur": 1.23456}
    ]
  } )";
  const TraceFile f = parse_trace(text, "other.json");
  EXPECT_FALSE(f.report.has_value());
  ASSERT_EQ(f.timeline.lanes.size(), 2u);
  EXPECT_EQ(f.timeline.lanes[0].process, "pid 3");  // tid 1 sorts first
  EXPECT_EQ(f.timeline.lanes[0].thread, "tid 1");
  EXPECT_EQ(f.timeline.lanes[1].process, "node1");
  EXPECT_EQ(f.timeline.lanes[1].thread, "gpu1 compute");
  ASSERT_EQ(f.timeline.spans.size(), 2u);
  const Span& b = f.timeline.spans[0];
  EXPECT_EQ(b.lane, 1u);
  EXPECT_EQ(b.kind, SpanKind::Backward);
  EXPECT_EQ(b.start_ns, 1'000'000);
  EXPECT_EQ(b.end_ns, 1'025'000);
  EXPECT_EQ(b.microbatch, 1);
  EXPECT_EQ(b.chunk, 0);
  EXPECT_EQ(b.stage, 1);
  EXPECT_EQ(b.bytes, 0);
  const Span& s = f.timeline.spans[1];
  EXPECT_EQ(s.lane, 0u);
  EXPECT_EQ(s.start_ns, 1);  // 0.5 ns rounds up
  EXPECT_EQ(s.end_ns, 1 + 1'235);
  EXPECT_EQ(s.microbatch, -1);

  const TraceFile bare = parse_trace(R"([{"ph":"X","cat":"forward","pid":1,"tid":1,"ts":1,"dur":2}])", "bare.json");
  ASSERT_EQ(bare.timeline.spans.size(), 1u);
  EXPECT_EQ(bare.timeline.spans[0].end_ns, 3'000);
}

TEST(TraceReader, RejectsTruncatedFilesAtEveryLength) {
  const std::string full = chrome_trace(sample_timeline(), sample_report());
  // Every prefix that ends the document early must fail with a message, never crash.
  for (std::size_t n = 0; n + 2 < full.size(); n += 7) {
    const std::string message = error_of(std::string_view(full).substr(0, n));
    EXPECT_FALSE(message.empty()) << "prefix of " << n << " bytes was accepted";
    EXPECT_EQ(message.rfind("bad.json: ", 0), 0u) << message;
  }
  const std::string message = error_of(std::string_view(full).substr(0, full.size() / 2));
  EXPECT_NE(message.find("unexpected end of input"), std::string::npos) << message;
  EXPECT_NE(message.find(std::to_string(full.size() / 2)), std::string::npos) << message;
}

TEST(TraceReader, RejectsSyntaxErrorsWithTheByteOffset) {
  const std::string message = error_of(R"({"traceEvents":[{"ph":"X" "cat":"forward"}]})");
  EXPECT_EQ(message, "bad.json: invalid JSON at byte 26: expected ',' or '}'");
  EXPECT_NE(error_of(R"({"traceEvents":[]} trailing)").find("after the end"), std::string::npos);
  EXPECT_NE(error_of("{\"traceEvents\":[{\"ph\":\"X\x01\"}]}").find("control character"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[{"ts":01}]})").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[{"foo":tru}]})").find("invalid JSON"), std::string::npos);
  EXPECT_NE(error_of(std::string(100'000, '[')).find("invalid JSON"), std::string::npos);
}

TEST(TraceReader, RejectsForeignJson) {
  EXPECT_NE(error_of("").find("empty file"), std::string::npos);
  EXPECT_NE(error_of(R"({"name": "a package.json", "version": "1.0"})").find("no \"traceEvents\""), std::string::npos);
  EXPECT_NE(error_of("42").find("not a trace"), std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents": {"a": 1}})").find("not an array"), std::string::npos);
  const std::string foreign =
      error_of(R"({"traceEvents":[{"ph":"X","cat":"cuda_kernel","pid":1,"tid":1,"ts":0,"dur":1}]})");
  EXPECT_NE(foreign.find("unknown category \"cuda_kernel\""), std::string::npos) << foreign;
  EXPECT_NE(foreign.find("event at byte 16"), std::string::npos) << foreign;
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"X","cat":"forward","pid":"a","ts":0,"dur":1}]})").find("not a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[{"ph":"X","cat":"forward","pid":1,"tid":1}]})").find("without"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[],"mpsim":{"step_time_s":"slow"}})").find("step_time_s is not a number"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"traceEvents":[],"mpsim":[1]})").find("report: not a JSON object"), std::string::npos);
}

}  // namespace
}  // namespace mpsim::trace
