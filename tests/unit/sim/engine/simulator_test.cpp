#include "sim/engine/simulator.h"

#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "engine_test_support.h"
#include "sim/engine/collective_tuning.h"
#include "sim/trace/trace_json.h"

namespace mpsim::engine {
namespace {

using namespace testing;

TimeNs step_time(const Prediction& p) { return TimeNs::seconds(p.report.step_time_s); }

struct PipelineCase {
  const char* schedule;
  int stages;
  int microbatches;
};

class UniformPipeline : public ::testing::TestWithParam<PipelineCase> {};

// Uniform stages and zero-cost links: gpipe and 1f1b take (m + p - 1)(t_f + t_b), to the nanosecond.
TEST_P(UniformPipeline, ClosedForm) {
  const auto [schedule, p, m] = GetParam();
  const auto cluster = pcie_box(p);
  const auto model = timed_layers(p, "3 ms", "4 ms", "2 ms");  // t_b = 4 + 2 = 6 ms
  const auto plan = plan_yaml(fmt::format("parallelism: {{ pipeline: {} }}\nbatch: {{ microbatches: {} }}\nschedule: {}\n",
                                          p, m, schedule),
                              cluster, model);
  const Prediction prediction = simulate(cluster, model, plan);
  EXPECT_EQ(step_time(prediction), TimeNs::ms(9) * (m + p - 1)) << schedule << " p=" << p << " m=" << m;
  // Megatron's bubble: (p - 1) / m of the ideal time; Zero Bubble's rate: (p - 1) / (m + p - 1).
  EXPECT_NEAR(prediction.report.bubble_rate, static_cast<double>(p - 1) / (m + p - 1), 1e-12);
}

INSTANTIATE_TEST_SUITE_P(Schedules, UniformPipeline,
                         ::testing::Values(PipelineCase{"gpipe", 4, 8}, PipelineCase{"gpipe", 2, 1},
                                           PipelineCase{"1f1b", 4, 8}, PipelineCase{"1f1b", 4, 2},
                                           PipelineCase{"1f1b", 8, 32}, PipelineCase{"1f1b", 1, 4},
                                           PipelineCase{"sagemaker-simple", 3, 5}));

// Interleaved 1F1B: the bubble shrinks by v, to (p - 1)/(v m) of ideal when m is a multiple of p.
TEST(Simulator, InterleavedBubbleIsDividedByVirtualStages) {
  for (const auto& [p, v, m] : {std::tuple{4, 2, 8}, std::tuple{4, 4, 8}, std::tuple{2, 2, 4}, std::tuple{4, 2, 12}}) {
    const auto cluster = pcie_box(p);
    const auto model = timed_layers(p * v, "3 ms", "4 ms", "2 ms");  // one layer per chunk
    const auto plan = plan_yaml(fmt::format("parallelism: {{ pipeline: {}, virtual_stages: {} }}\n"
                                            "batch: {{ microbatches: {} }}\nschedule: interleaved-1f1b\n",
                                            p, v, m),
                                cluster, model);
    const Prediction prediction = simulate(cluster, model, plan);
    const TimeNs chunk = TimeNs::ms(9);
    const TimeNs ideal = chunk * (m * v);
    EXPECT_EQ(step_time(prediction), ideal + chunk * (p - 1)) << "p=" << p << " v=" << v << " m=" << m;
    // bubble / ideal = (p - 1) / (v m)
    EXPECT_NEAR((step_time(prediction) - ideal) / ideal, static_cast<double>(p - 1) / (v * m), 1e-12);
  }
}

// One transfer costs latency + bytes / bandwidth: a 2-stage pipeline with one microbatch sends one
// activation and one gradient, each 64 MB (2^20 samples... here: 64e6 bytes) at 10 GB/s with 5 us.
TEST(Simulator, OneTransferIsLatencyPlusBytesOverBandwidth) {
  const auto cluster = pcie_box(2, "10 GB/s", "5 us");
  const auto model = timed_layers(2, "3 ms", "4 ms", "2 ms", 64'000'000);
  const auto plan = plan_yaml("parallelism: { pipeline: 2 }\nbatch: { microbatches: 1 }\nschedule: 1f1b\n", cluster, model);
  const TimeNs transfer = TimeNs::us(5) + transfer_time(Bytes::mb(64), BytesPerSec::gigabytes_per_sec(10));
  EXPECT_EQ(transfer, TimeNs::us(6405));
  EXPECT_EQ(step_time(simulate(cluster, model, plan)), TimeNs::ms(3) * 2 + TimeNs::ms(6) * 2 + transfer * 2);
}

// A ring all-reduce of S bytes over n GPUs with link bandwidth B and latency alpha takes
// 2(n - 1)/n * S/(e B) + 2(n - 1) alpha, e = 0.79 the ring's achievable share of NVLink
// (collective_tuning.h): the 2(n - 1) rounds move as one flow of 2(n - 1) S/n bytes at 79 GB/s.
TEST(Simulator, RingAllReduceClosedForm) {
  for (const int n : {2, 4, 8}) {
    const auto cluster = cluster_yaml(fmt::format(
        "cluster: {{ gpus_per_node: {}, gpu: a100-80gb, intra_node: {{ kind: nvswitch, bandwidth: \"100 GB/s\", "
        "latency: \"3 us\" }} }}\n", n));
    // One layer of 100M parameters: 400 MB of fp32 gradients in one bucket.
    const auto model = model_yaml("model:\n  layers:\n    - { name: dense, forward_time: \"1 ms\", backward_time: \"2 ms\", "
                                  "params: 100000000 }\n");
    const auto plan = plan_yaml("parallelism: { data: " + std::to_string(n) + " }\n", cluster, model);
    EngineOptions options;
    options.record_timeline = true;
    options.grad_bucket = Bytes::gb(1);
    const Prediction prediction = simulate(cluster, model, plan, options);
    const auto& spans = prediction.timeline.spans;
    const auto it = std::find_if(spans.begin(), spans.end(),
                                 [](const trace::Span& s) { return s.kind == trace::SpanKind::AllReduce; });
    ASSERT_NE(it, spans.end());
    const std::int64_t flow_bytes = 2 * (n - 1) * (400'000'000 / n);
    const TimeNs expected = TimeNs::us(3) * (2 * (n - 1)) + TimeNs::ns((flow_bytes + 78) / 79);  // ceil(bytes / 79)
    EXPECT_EQ(TimeNs::ns(it->end_ns - it->start_ns), expected) << "n=" << n;
    EXPECT_NEAR(expected.to_seconds(), 2.0 * (n - 1) / n * 400e6 / (kNvlinkRingEfficiency * 100e9) + 2.0 * (n - 1) * 3e-6,
                1e-8);
  }
}

/// The data-parallel all-reduce's duration in a one-layer, pure data-parallel step.
TimeNs allreduce_time(int n, const std::string& params, CollectiveAlgorithm algorithm) {
  const auto cluster = cluster_yaml(fmt::format(
      "cluster: {{ gpus_per_node: {}, gpu: a100-80gb, intra_node: {{ kind: nvswitch, bandwidth: \"100 GB/s\", "
      "latency: \"3 us\" }} }}\n", n));
  const auto model = model_yaml("model:\n  layers:\n    - { name: dense, forward_time: \"1 ms\", backward_time: \"2 ms\", "
                                "params: " + params + " }\n");
  const auto plan = plan_yaml("parallelism: { data: " + std::to_string(n) + " }\n", cluster, model);
  EngineOptions options;
  options.record_timeline = true;
  options.grad_bucket = Bytes::gb(1);
  options.collective = algorithm;
  const auto spans = simulate(cluster, model, plan, options).timeline.spans;
  const auto it = std::find_if(spans.begin(), spans.end(),
                               [](const trace::Span& s) { return s.kind == trace::SpanKind::AllReduce; });
  return it == spans.end() ? TimeNs{} : TimeNs::ns(it->end_ns - it->start_ns);
}

// A tree pays a latency per level, 2 log2(n), where a ring pays 2(n - 1): it wins on small buffers and
// loses on large ones (each tree edge carries the whole buffer, a ring edge 2(n-1)/n of it).
TEST(Simulator, TreeWinsOnLatencyRingOnBandwidth) {
  EXPECT_LT(allreduce_time(8, "1000", CollectiveAlgorithm::Tree), allreduce_time(8, "1000", CollectiveAlgorithm::Ring));
  EXPECT_GT(allreduce_time(8, "100000000", CollectiveAlgorithm::Tree),
            allreduce_time(8, "100000000", CollectiveAlgorithm::Ring));
  // 8 members: depth 3, so 6 latencies of 3 us for a tiny buffer (4 KB moves in well under 1 us).
  EXPECT_NEAR(allreduce_time(8, "1000", CollectiveAlgorithm::Tree).to_seconds(), 6 * 3e-6, 1e-6);
}

// Activations are held from F to B: on 1f1b rank i the peak holds min(p - i, m) microbatches, on
// gpipe all m.
TEST(Simulator, PeakActivationMemoryFollowsInFlightMicrobatches) {
  const int p = 4;
  for (const auto& [schedule, m] : {std::pair{"1f1b", 8}, std::pair{"1f1b", 2}, std::pair{"gpipe", 6}}) {
    const auto cluster = pcie_box(p);
    const auto model = timed_layers(p, "3 ms", "4 ms", "2 ms", 0, 1'000'000);
    const auto plan = plan_yaml(fmt::format("parallelism: {{ pipeline: {} }}\nbatch: {{ microbatches: {} }}\nschedule: {}\n",
                                            p, m, schedule),
                                cluster, model);
    const Prediction prediction = simulate(cluster, model, plan);
    for (int i = 0; i < p; ++i) {
      const int in_flight = std::string(schedule) == "gpipe" ? m : std::min(p - i, m);
      const trace::DeviceReport& d = prediction.report.devices[static_cast<std::size_t>(i)];
      EXPECT_EQ(d.memory.activations, in_flight * 1'000'000LL) << schedule << " rank " << i;
      // The rest of the peak is what the GPU holds all step: no parameters here, so the reserve alone.
      EXPECT_EQ(d.peak_memory_bytes - d.memory.activations, d.memory.reserved) << schedule << " rank " << i;
    }
  }
}

// Same inputs, same bytes: twice in a row and from several threads at once.
TEST(Simulator, DeterministicAcrossRunsAndThreads) {
  const auto cluster = topology::load_topology_file(repo_path("topologies/4x-p4d.yaml"));
  const auto model = model::load_model_file(repo_path("configs/models/gpt3-13b.yaml"));
  const auto plan = plan_yaml("parallelism: { tensor: 8, pipeline: 2 }\nbatch: { global: 32, micro: 1 }\n", cluster, model);
  EngineOptions options;
  options.record_timeline = true;
  const auto render = [&] {
    const Prediction p = simulate(cluster, model, plan, options);
    return trace::chrome_trace(p.timeline, p.report);
  };
  const std::string first = render();
  EXPECT_EQ(first, render());
  std::vector<std::string> results(4);
  std::vector<std::thread> threads;
  for (std::size_t i = 0; i < results.size(); ++i) threads.emplace_back([&, i] { results[i] = render(); });
  for (auto& t : threads) t.join();
  for (const auto& r : results) EXPECT_EQ(r, first);
}

// Folding symmetric data-parallel replicas into one actor gives the full simulation's answer.
TEST(Simulator, FoldedReplicasMatchFullSimulation) {
  const auto cluster = topology::load_topology_file(repo_path("topologies/4x-p4d.yaml"));
  const auto model = model::load_model_file(repo_path("configs/models/gpt3-1.3b.yaml"));
  for (const char* yaml : {"parallelism: { tensor: 4, pipeline: 2 }\nbatch: { global: 64, micro: 2 }\n",
                           "parallelism: { tensor: 2, pipeline: 4 }\nbatch: { global: 32, micro: 1 }\nzero: 1\n",
                           "parallelism: { tensor: 8, pipeline: 2 }\nbatch: { global: 16, micro: 1 }\nschedule: zb-h1\n"}) {
    const auto plan = plan_yaml(yaml, cluster, model);
    EngineOptions folded;
    EngineOptions full;
    full.fold_replicas = false;
    const Prediction a = simulate(cluster, model, plan, folded);
    const Prediction b = simulate(cluster, model, plan, full);
    EXPECT_EQ(trace::report_json(a.report).dump(), trace::report_json(b.report).dump()) << yaml;
  }
}

}  // namespace
}  // namespace mpsim::engine
