// The report JSON (docs/simulator.md, "The report") and the Chrome trace writer, on small hand-built inputs.
#include "sim/trace/trace_json.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace mpsim::trace {
namespace {

Report small_report() {
  Report r;
  r.step_time_s = 0.5;
  r.bubble_fraction = 0.25;
  r.bubble_rate = 0.125;
  r.tflops_per_gpu = 150.5;
  r.hardware_tflops_per_gpu = 160.25;
  r.mfu = 0.48;
  r.peak_memory_bytes = 41'231'231'231LL;
  r.oom = false;
  r.devices.push_back({"node0/gpu0", 0, 0.375, 0.125, 0.25, 41'231'231'231LL, 42'949'672'960LL, false,
                        {8'000'000'000LL, 16'000'000'000LL, 6'000'000'000LL, 9'231'231'231LL, 2'000'000'000LL}});
  r.devices.push_back({"node1/gpu0", 1, 0.25, 0.25, 0.5, 1'000, 42'949'672'960LL, true, {}});
  r.devices.back().communication_wait_s = 0.125;
  r.communication_wait_fraction = 0.0625;
  r.links.push_back({"node0/nvlink:gpu0-gpu1", 123'456, 0.01});
  r.plan.document = R"({"parallelism":{"tensor":8,"pipeline":2,"data":2},"batch":{"global":32,"micro":1,)"
                    R"("microbatches":16},"schedule":"1f1b","zero":1})";
  return r;
}

/// Two processes (node0 with two lanes, node1 with one) and a link lane in a third process.
Timeline small_timeline() {
  Timeline t;
  t.lanes = {{"node0", "gpu0 compute"}, {"node0", "gpu0 p2p"}, {"node1", "gpu0 compute"}, {"links", "node0/nic0"}};
  Span f;
  f.lane = 0;
  f.kind = SpanKind::Forward;
  f.start_ns = 1'234'567;
  f.end_ns = 3'234'567;
  f.microbatch = 3;
  f.chunk = 1;
  f.stage = 0;
  t.spans.push_back(f);
  Span send;
  send.lane = 1;
  send.kind = SpanKind::Send;
  send.start_ns = 3'234'567;
  send.end_ns = 3'240'000;
  send.microbatch = 3;
  send.chunk = 1;
  send.stage = 0;
  send.bytes = 25'165'824;
  t.spans.push_back(send);
  Span b;
  b.lane = 2;
  b.kind = SpanKind::Backward;
  b.start_ns = 5;
  b.end_ns = 1'000'000'005;
  b.microbatch = 0;
  b.chunk = 0;
  b.stage = 1;
  t.spans.push_back(b);
  Span w;
  w.lane = 2;
  w.kind = SpanKind::BackwardWeight;
  w.start_ns = 1'000'000'005;
  w.end_ns = 1'000'000'999;
  w.microbatch = 12;
  w.chunk = 0;
  w.stage = 1;
  t.spans.push_back(w);
  Span ar;
  ar.lane = 2;
  ar.kind = SpanKind::AllReduce;
  ar.start_ns = 2'000'000'000;
  ar.end_ns = 2'000'000'001;
  ar.stage = 1;
  ar.bytes = 1'000;
  t.spans.push_back(ar);
  Span xfer;
  xfer.lane = 3;
  xfer.kind = SpanKind::Transfer;
  xfer.start_ns = 0;
  xfer.end_ns = 999;
  xfer.bytes = 4'096;
  t.spans.push_back(xfer);
  return t;
}

std::vector<nlohmann::json> events_with(const nlohmann::json& trace, const std::string& ph) {
  std::vector<nlohmann::json> out;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == ph) out.push_back(e);
  }
  return out;
}

TEST(ReportJson, InterfaceKeysInOrder) {
  const nlohmann::ordered_json j = report_json(small_report());
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  const std::vector<std::string> contract = {"step_time_s", "bubble_fraction", "tflops_per_gpu", "mfu",
                                             "devices",     "links",           "plan"};
  std::size_t last = 0;
  for (const std::string& key : contract) {
    const auto it = std::find(keys.begin(), keys.end(), key);
    ASSERT_NE(it, keys.end()) << key;
    const auto at = static_cast<std::size_t>(it - keys.begin());
    EXPECT_GE(at, last) << key << " is out of order";
    last = at;
  }
  EXPECT_EQ(keys.front(), "step_time_s");
}

TEST(ReportJson, Values) {
  const nlohmann::ordered_json j = report_json(small_report());
  EXPECT_DOUBLE_EQ(j["step_time_s"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(j["bubble_fraction"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(j["tflops_per_gpu"].get<double>(), 150.5);
  EXPECT_DOUBLE_EQ(j["mfu"].get<double>(), 0.48);
  ASSERT_EQ(j["devices"].size(), 2u);
  const auto& d = j["devices"][1];
  EXPECT_EQ(d["id"], "node1/gpu0");
  EXPECT_EQ(d["stage"], 1);
  EXPECT_DOUBLE_EQ(d["busy_s"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(d["idle_s"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(d["bubble_fraction"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(d["communication_wait_s"].get<double>(), 0.125);
  EXPECT_DOUBLE_EQ(j["communication_wait_fraction"].get<double>(), 0.0625);
  EXPECT_EQ(d["peak_memory_bytes"].get<std::int64_t>(), 1000);
  EXPECT_EQ(d["oom"], true);
  EXPECT_TRUE(d["oom"].is_boolean());
  EXPECT_EQ(j["devices"][0]["peak_memory_bytes"].get<std::int64_t>(), 41'231'231'231LL);
  EXPECT_TRUE(j["devices"][0]["peak_memory_bytes"].is_number_integer());
  // The memory breakdown is written where it is known, in bytes, and left out where it is not.
  const auto& memory = j["devices"][0]["memory"];
  EXPECT_EQ(memory["weights"].get<std::int64_t>(), 8'000'000'000LL);
  EXPECT_EQ(memory["activations"].get<std::int64_t>(), 9'231'231'231LL);
  EXPECT_EQ(memory["reserved"].get<std::int64_t>(), 2'000'000'000LL);
  EXPECT_FALSE(d.contains("memory"));
  std::vector<std::string> device_keys;
  for (const auto& [key, value] : d.items()) device_keys.push_back(key);
  const std::vector<std::string> expected_device_keys = {"id", "stage", "busy_s", "idle_s", "bubble_fraction",
                                                         "peak_memory_bytes"};
  EXPECT_TRUE(std::equal(expected_device_keys.begin(), expected_device_keys.end(), device_keys.begin()))
      << d.dump();
  EXPECT_TRUE(d.contains("oom"));
  ASSERT_EQ(j["links"].size(), 1u);
  EXPECT_EQ(j["links"][0]["id"], "node0/nvlink:gpu0-gpu1");
  EXPECT_EQ(j["links"][0]["bytes"].get<std::int64_t>(), 123'456);
  EXPECT_DOUBLE_EQ(j["links"][0]["busy_s"].get<double>(), 0.01);
  // The plan is its document as written, keys in the document's order.
  const nlohmann::ordered_json document = nlohmann::ordered_json::parse(small_report().plan.document);
  EXPECT_EQ(j["plan"], document);
  EXPECT_EQ(j["plan"].dump(), document.dump());
  EXPECT_FALSE(j.contains("expert_load"));  // dense: no routing to report
}

// Memory over time: [[t_s, bytes], ...] where the report has it, nothing where it has not.
TEST(ReportJson, MemoryTimelineAsPairs) {
  Report r = small_report();
  r.devices.front().memory_timeline = {{0.0, 100}, {0.25, 300}, {0.5, 100}};
  const nlohmann::ordered_json j = report_json(r);
  EXPECT_EQ(j["devices"][0]["memory_timeline"].dump(), "[[0.0,100],[0.25,300],[0.5,100]]");
  EXPECT_FALSE(j["devices"][1].contains("memory_timeline"));
}

TEST(ReportJson, EmptyReportHasEmptyLists) {
  const nlohmann::ordered_json j = report_json(Report{});
  EXPECT_TRUE(j["devices"].is_array());
  EXPECT_TRUE(j["devices"].empty());
  EXPECT_TRUE(j["links"].is_array());
  EXPECT_TRUE(j["links"].empty());
  EXPECT_FALSE(j.contains("plan"));  // a report without a plan (a measured step) has none to write
}

TEST(ChromeTrace, ParsesWithExactEventCount) {
  const std::string text = chrome_trace(small_timeline(), small_report());
  const auto j = nlohmann::json::parse(text);
  ASSERT_TRUE(j.contains("traceEvents"));
  ASSERT_TRUE(j["traceEvents"].is_array());
  // 6 spans; 3 processes and 4 threads, each with a name event and a sort-index event.
  EXPECT_EQ(events_with(j, "X").size(), 6u);
  const auto meta = events_with(j, "M");
  EXPECT_EQ(meta.size(), 2u * 3 + 2u * 4);
  EXPECT_EQ(j["traceEvents"].size(), 6u + meta.size());
  for (const auto& e : j["traceEvents"]) {
    const std::string ph = e["ph"];
    EXPECT_TRUE(ph == "X" || ph == "M") << e.dump();
  }
}

// A counter track per traced GPU with a memory timeline, under its node's process; GPUs the trace has
// no lanes for (folded replicas) get none.
TEST(ChromeTrace, MemoryCountersForTracedGpus) {
  Report r = small_report();
  r.devices.front().memory_timeline = {{0.0, 100}, {0.001234567, 300}};
  r.devices.push_back(r.devices.front());
  r.devices.back().id = "node0/gpu1";
  const auto j = nlohmann::json::parse(chrome_trace(small_timeline(), r));
  const auto counters = events_with(j, "C");
  ASSERT_EQ(counters.size(), 2u);
  int node0 = 0;
  for (const auto& e : events_with(j, "M")) {
    if (e["name"] == "process_name" && e["args"]["name"] == "node0") node0 = e["pid"];
  }
  for (const auto& e : counters) {
    EXPECT_EQ(e["name"], "gpu0 memory");
    EXPECT_EQ(e["pid"], node0);
  }
  EXPECT_EQ(counters[0]["ts"].get<double>(), 0.0);
  EXPECT_EQ(counters[0]["args"]["bytes"], 100);
  EXPECT_NE(chrome_trace(small_timeline(), r).find(R"("ts":1234.567,"args":{"bytes":300})"), std::string::npos);
  EXPECT_TRUE(events_with(nlohmann::json::parse(chrome_trace(small_timeline(), small_report())), "C").empty());
}

// A trace embeds the memory timelines of the devices it draws: node0/gpu0 has lanes, node0/gpu1 (a data
// replica in a real job) has none and loses its timeline; everything else stays.
TEST(ChromeTrace, EmbedsTheMemoryTimelinesOfTracedDevicesOnly) {
  Report r = small_report();
  r.devices.front().memory_timeline = {{0.0, 100}, {0.5, 300}};
  r.devices.push_back(r.devices.front());
  r.devices.back().id = "node0/gpu1";
  const Report embedded = with_traced_memory_timelines(r, small_timeline());
  ASSERT_EQ(embedded.devices.size(), r.devices.size());
  EXPECT_EQ(embedded.devices[0].memory_timeline, r.devices[0].memory_timeline);
  EXPECT_TRUE(embedded.devices[2].memory_timeline.empty());
  EXPECT_EQ(embedded.devices[2].peak_memory_bytes, r.devices[2].peak_memory_bytes);
  r.devices[2].memory_timeline.clear();
  EXPECT_EQ(report_json(embedded), report_json(r));
}

// Written in pieces, the trace is the same bytes, and a large one never comes as one piece.
TEST(ChromeTrace, WrittenInPiecesOfWholeEvents) {
  Timeline t = small_timeline();
  const Span forward = t.spans.front();
  for (int i = 0; i < 40'000; ++i) t.spans.push_back(forward);
  const Report report = small_report();
  std::vector<std::string> pieces;
  write_chrome_trace(t, report, report_json(report), [&](std::string_view piece) { pieces.emplace_back(piece); });
  std::string joined;
  for (const std::string& piece : pieces) joined += piece;
  EXPECT_EQ(joined, chrome_trace(t, report));
  ASSERT_GT(pieces.size(), 2u);
  for (std::size_t i = 0; i + 1 < pieces.size(); ++i) {
    EXPECT_LE(pieces[i].size(), std::size_t{1} << 21) << "piece " << i;
    EXPECT_EQ(pieces[i].back(), '}') << "piece " << i << " ends inside an event";
  }
}

TEST(ChromeTrace, ProcessAndThreadNamesOnceEach) {
  const auto j = nlohmann::json::parse(chrome_trace(small_timeline(), small_report()));
  std::vector<std::string> processes;
  std::vector<std::pair<int, int>> threads;
  std::vector<std::string> thread_names;
  std::map<std::string, int> pid_of;
  for (const auto& e : events_with(j, "M")) {
    if (e["name"] == "process_name") {
      processes.push_back(e["args"]["name"]);
      pid_of[e["args"]["name"]] = e["pid"];
    }
    if (e["name"] == "thread_name") {
      threads.emplace_back(e["pid"].get<int>(), e["tid"].get<int>());
      thread_names.push_back(e["args"]["name"]);
    }
  }
  std::vector<std::string> sorted = processes;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"links", "node0", "node1"}));
  EXPECT_EQ(thread_names, (std::vector<std::string>{"gpu0 compute", "gpu0 p2p", "gpu0 compute", "node0/nic0"}));
  // Every (pid, tid) names one thread; the two node0 lanes share a pid, node1's lane has another.
  std::vector<std::pair<int, int>> unique = threads;
  std::sort(unique.begin(), unique.end());
  EXPECT_EQ(std::unique(unique.begin(), unique.end()), unique.end());
  ASSERT_EQ(threads.size(), 4u);
  EXPECT_EQ(threads[0].first, pid_of["node0"]);
  EXPECT_EQ(threads[1].first, pid_of["node0"]);
  EXPECT_EQ(threads[2].first, pid_of["node1"]);
  EXPECT_EQ(threads[3].first, pid_of["links"]);
  EXPECT_NE(pid_of["node0"], pid_of["node1"]);
  EXPECT_NE(pid_of["node1"], pid_of["links"]);
  // Every X event sits on a named thread.
  for (const auto& e : events_with(j, "X")) {
    const std::pair<int, int> at{e["pid"].get<int>(), e["tid"].get<int>()};
    EXPECT_NE(std::find(threads.begin(), threads.end(), at), threads.end()) << e.dump();
  }
}

TEST(ChromeTrace, SpanFieldsAndNames) {
  const auto j = nlohmann::json::parse(chrome_trace(small_timeline(), small_report()));
  const auto xs = events_with(j, "X");
  ASSERT_EQ(xs.size(), 6u);
  for (const auto& e : xs) {
    for (const char* key : {"name", "cat", "ts", "dur", "pid", "tid", "args"}) EXPECT_TRUE(e.contains(key)) << key;
    for (const char* key : {"mb", "chunk", "stage", "bytes"}) EXPECT_TRUE(e["args"].contains(key)) << key;
  }
  EXPECT_EQ(xs[0]["name"], "F3.1");
  EXPECT_EQ(xs[0]["cat"], "forward");
  EXPECT_EQ(xs[0]["args"]["mb"], 3);
  EXPECT_EQ(xs[0]["args"]["chunk"], 1);
  EXPECT_EQ(xs[0]["args"]["stage"], 0);
  EXPECT_EQ(xs[0]["args"]["bytes"], 0);
  EXPECT_EQ(xs[1]["cat"], "send");
  EXPECT_EQ(xs[1]["args"]["bytes"], 25'165'824);
  EXPECT_NE(xs[1]["name"].get<std::string>().find("3.1"), std::string::npos) << xs[1]["name"];
  EXPECT_EQ(xs[2]["name"], "B0.0");
  EXPECT_EQ(xs[2]["cat"], "backward");
  EXPECT_EQ(xs[2]["args"]["stage"], 1);
  EXPECT_EQ(xs[3]["name"], "W12.0");
  EXPECT_EQ(xs[3]["cat"], "backward-weight");
  EXPECT_EQ(xs[4]["cat"], "allreduce");
  EXPECT_EQ(xs[4]["args"]["mb"], -1);
  EXPECT_EQ(xs[4]["args"]["bytes"], 1'000);
  EXPECT_EQ(xs[5]["cat"], "transfer");
}

TEST(ChromeTrace, MicrosecondsPrintedExactly) {
  const std::string text = chrome_trace(small_timeline(), small_report());
  EXPECT_NE(text.find(R"("ts":1234.567,"dur":2000.000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts":3234.567,"dur":5.433)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts":0.005,"dur":1000000.000)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts":1000000.005,"dur":0.994)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts":2000000.000,"dur":0.001)"), std::string::npos) << text;
  EXPECT_NE(text.find(R"("ts":0.000,"dur":0.999)"), std::string::npos) << text;
  const auto j = nlohmann::json::parse(text);
  const auto xs = events_with(j, "X");
  EXPECT_DOUBLE_EQ(xs[0]["ts"].get<double>(), 1234.567);
  EXPECT_DOUBLE_EQ(xs[0]["dur"].get<double>(), 2000.0);
}

TEST(ChromeTrace, CarriesTheReport) {
  const Report report = small_report();
  const auto j = nlohmann::ordered_json::parse(chrome_trace(small_timeline(), report));
  ASSERT_TRUE(j.contains("mpsim"));
  EXPECT_EQ(j["mpsim"], report_json(report));
  EXPECT_EQ(j["mpsim"].dump(), report_json(report).dump());  // key order kept too
}

TEST(ChromeTrace, Deterministic) {
  const std::string a = chrome_trace(small_timeline(), small_report());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(chrome_trace(small_timeline(), small_report()), a);
}

TEST(ChromeTrace, ProcessIdsFollowFirstAppearance) {
  // "zeta" comes first in lane order, so it gets the first pid although it sorts last by name.
  Timeline t;
  t.lanes = {{"zeta", "a"}, {"alpha", "b"}, {"zeta", "c"}};
  const auto j = nlohmann::json::parse(chrome_trace(t, Report{}));
  std::map<std::string, int> pid_of;
  for (const auto& e : events_with(j, "M")) {
    if (e["name"] == "process_name") pid_of[e["args"]["name"]] = e["pid"];
  }
  ASSERT_EQ(pid_of.size(), 2u);
  EXPECT_LT(pid_of["zeta"], pid_of["alpha"]);
}

TEST(ChromeTrace, EmptyTimelineIsValidJson) {
  const auto j = nlohmann::json::parse(chrome_trace(Timeline{}, Report{}));
  EXPECT_TRUE(j["traceEvents"].is_array());
  EXPECT_TRUE(j["traceEvents"].empty());
  EXPECT_TRUE(j.contains("mpsim"));
}

TEST(ChromeTrace, NamesAreEscaped) {
  Timeline t;
  t.lanes = {{"node \"0\"", "gpu\\0"}};
  Span s;
  s.start_ns = 0;
  s.end_ns = 1000;
  t.spans.push_back(s);
  const auto j = nlohmann::json::parse(chrome_trace(t, Report{}));
  std::vector<std::string> names;
  for (const auto& e : events_with(j, "M")) {
    if (e["name"] == "process_name" || e["name"] == "thread_name") names.push_back(e["args"]["name"]);
  }
  EXPECT_EQ(names, (std::vector<std::string>{"node \"0\"", "gpu\\0"}));
}

TEST(SpanKindNames, CatWords) {
  EXPECT_EQ(to_string(SpanKind::Forward), "forward");
  EXPECT_EQ(to_string(SpanKind::Backward), "backward");
  EXPECT_EQ(to_string(SpanKind::BackwardInput), "backward-input");
  EXPECT_EQ(to_string(SpanKind::BackwardWeight), "backward-weight");
  EXPECT_EQ(to_string(SpanKind::Send), "send");
  EXPECT_EQ(to_string(SpanKind::Recv), "recv");
  EXPECT_EQ(to_string(SpanKind::AllReduce), "allreduce");
  EXPECT_EQ(to_string(SpanKind::ReduceScatter), "reducescatter");
  EXPECT_EQ(to_string(SpanKind::AllGather), "allgather");
  EXPECT_EQ(to_string(SpanKind::Optimizer), "optimizer");
  EXPECT_EQ(to_string(SpanKind::Transfer), "transfer");
}

}  // namespace
}  // namespace mpsim::trace
