// Tensor-parallel collectives as flows over the links: closed forms on an idle NVSwitch, contention
// with data-parallel traffic on a shared NIC, overlap as a plan choice.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/collective_tuning.h"
#include "sim/plan/layout.h"
#include "sim/schedule/ops.h"

namespace mpsim::engine {
namespace {

using namespace testing;
using schedule::OpKind;

TimeNs comm_step_time(const Prediction& p) { return TimeNs::seconds(p.report.step_time_s); }

/// 8 GPUs on one NVSwitch: 100 GB/s per GPU link, 1 us from GPU to GPU.
topology::Cluster nvswitch_box() {
  return cluster_yaml(
      "cluster: { gpus_per_node: 8, gpu: a100-80gb, intra_node: { kind: nvswitch, bandwidth: \"100 GB/s\", latency: \"1 us\" } }\n");
}

/// Three layers of 3 / 4 / 2 ms (a pass: 9 ms forward, 18 ms backward), each with two tensor-parallel
/// all-reduces of its 8 MB output.
model::Model three_layers() {
  return model_yaml(
      "model:\n  name: tp\n  layers:\n    - { name: block, repeat: 3, forward_time: \"3 ms\", backward_input_time: \"4 ms\", "
      "backward_weight_time: \"2 ms\", params: 0, activation_bytes: 0, output_bytes: 8000000, tp_allreduces: 2 }\n");
}

// Ring all-reduce of S over n = 8 on idle links: 2(n-1) rounds of latency + (S/n) / (e B), e = 0.79
// the ring's achievable share of NVLink (collective_tuning.h): 14 x (1 us + 1 MB / 79 GB/s). Six per
// pass (3 layers x 2), blocking, back to back: one flow of 84 MB after 84 latencies,
// 84 us + ceil(84e6 / 79) ns = 84 us + 1,063,292 ns.
TEST(TensorComm, AllReducesOnIdleNvSwitchTakeTheRingClosedForm) {
  const auto cluster = nvswitch_box();
  const auto model = three_layers();
  const auto plan = plan_yaml("parallelism: { tensor: 8 }\nbatch: { microbatches: 2 }\nschedule: 1f1b\n", cluster, model);
  EngineOptions options;
  options.record_timeline = true;
  const Prediction prediction = simulate(cluster, model, plan, options);
  const TimeNs six_all_reduces = TimeNs::us(84) + TimeNs::ns(1'063'292);
  EXPECT_NEAR(six_all_reduces.to_seconds(), 6 * 14 * (1e-6 + 1e6 / (kNvlinkRingEfficiency * 100e9)), 1e-9);
  const TimeNs per_microbatch = TimeNs::ms(9) + six_all_reduces + TimeNs::ms(18) + six_all_reduces;
  EXPECT_EQ(comm_step_time(prediction), per_microbatch * 2);

  // The trace shows the collectives as spans on the in-layer lane, one per pass and microbatch.
  const auto& tl = prediction.timeline;
  int layer_spans = 0;
  for (const trace::Span& s : tl.spans) {
    if (s.kind != trace::SpanKind::AllReduce) continue;
    EXPECT_NE(tl.lanes[s.lane].thread.find("layer comm"), std::string::npos);
    EXPECT_EQ(s.end_ns - s.start_ns, six_all_reduces.base());
    EXPECT_EQ(s.bytes, 6 * 8'000'000);
    ++layer_spans;
  }
  EXPECT_EQ(layer_spans, 2 * 2);

  // Every GPU's NVSwitch link carries its ring traffic both ways: per all-reduce 14 rounds of 1 MB
  // out and 14 in; 12 all-reduces per microbatch, 2 microbatches.
  ASSERT_EQ(prediction.report.links.size(), 8u);
  for (const trace::LinkReport& link : prediction.report.links) {
    EXPECT_EQ(link.bytes, 2LL * 14 * 1'000'000 * 12 * 2) << link.id;
  }
  // Busy time counts the blocking collectives, as the compute stream waits for them.
  EXPECT_NEAR(prediction.report.devices.front().busy_s, prediction.report.step_time_s, 1e-9);
}

// With --tp-comm-overlap the collectives run beside the compute: each pass takes max(compute, comm).
TEST(TensorComm, OverlapMakesEachPassTheLongerOfComputeAndComm) {
  const auto cluster = nvswitch_box();
  const auto model = three_layers();
  const auto plan = plan_yaml("parallelism: { tensor: 8 }\nbatch: { microbatches: 2 }\nschedule: 1f1b\n"
                              "overlap: { tensor_comm: true }\n",
                              cluster, model);
  EXPECT_EQ(comm_step_time(simulate(cluster, model, plan)), (TimeNs::ms(9) + TimeNs::ms(18)) * 2);
  // Slow links: comm (6 x 14 x (1 us + 1 MB / 0.79 GB/s) = 84 us + ceil(84e6 / 0.79) ns = 106.4 ms per
  // pass) outlasts compute.
  const auto slow = cluster_yaml(
      "cluster: { gpus_per_node: 8, gpu: a100-80gb, intra_node: { kind: nvswitch, bandwidth: \"1 GB/s\", latency: \"1 us\" } }\n");
  const auto slow_plan = plan_yaml("parallelism: { tensor: 8 }\nbatch: { microbatches: 2 }\nschedule: 1f1b\n"
                                   "overlap: { tensor_comm: true }\n",
                                   slow, model);
  const TimeNs per_pass = TimeNs::us(84) + TimeNs::ns(106'329'114);
  EXPECT_NEAR(per_pass.to_seconds(), 84 * (1e-6 + 1e6 / (kNvlinkRingEfficiency * 1e9)), 1e-9);
  EXPECT_EQ(comm_step_time(simulate(slow, model, slow_plan)), per_pass * 2 * 2);
}

// Tensor and data parallelism across nodes with one NIC each: a TP all-reduce alone, then the same
// while a data-parallel all-reduce of the same size crosses the same NIC. Alone, a collective moves at
// the network's achievable 0.95 x 12.5 GB/s; shared, max-min fairness gives each half the NIC, 6.25
// GB/s, so the TP all-reduce takes about 2 x 0.95 = 1.9 times as long.
TEST(TensorComm, TensorAndDataCollectivesSharingANicSlowEachOther) {
  const auto cluster = cluster_yaml(
      "cluster:\n  nodes: 4\n  gpus_per_node: 1\n  gpu: a100-80gb\n"
      "  intra_node: { kind: nvswitch, bandwidth: \"300 GB/s\", latency: \"1 us\" }\n"
      "  inter_node: { kind: infiniband, bandwidth: \"100 Gb/s\", latency: \"5 us\", nics_per_node: 1 }\n");
  const auto model = timed_layers(1, "1 us", "1 us", "1 us");
  const auto plan = plan_yaml("parallelism: { tensor: 2, data: 2 }\nbatch: { microbatches: 1 }\nschedule: 1f1b\n"
                              "allow_tensor_across_nodes: true\n",
                              cluster, model);
  const CostModel costs = build_cost_model(cluster, model, plan, plan::Layout(plan));
  const Bytes size = Bytes::mb(100);
  const auto tensor_all_reduce = schedule::layer_collective_op(OpKind::AllReduce, plan::Axis::Tensor, size, 1,
                                                               schedule::CommStream::Blocking, 0, 0);
  const auto run = [&](bool with_data_parallel) {
    schedule::Program program;
    program.shape = schedule::shape_of(plan);
    std::vector<schedule::Op> stream;
    if (with_data_parallel) stream.push_back(schedule::collective_op(OpKind::AllReduce, plan::Axis::Data, size));
    stream.push_back(schedule::compute_op(OpKind::Forward, 0));
    stream.push_back(tensor_all_reduce);
    stream.push_back(schedule::compute_op(OpKind::Backward, 0));
    stream.push_back(schedule::optimizer_step_op());
    program.streams = {stream};
    EngineOptions options;
    options.record_timeline = true;
    const Prediction p = simulate(cluster, model, plan, program, costs, options);
    for (const trace::Span& s : p.timeline.spans) {
      if (s.kind == trace::SpanKind::AllReduce && p.timeline.lanes[s.lane].thread.find("layer comm") != std::string::npos) {
        return TimeNs::ns(s.end_ns - s.start_ns);
      }
    }
    return TimeNs{};
  };
  const TimeNs alone = run(false);
  const TimeNs shared = run(true);
  // Alone: 2 rounds of 5 us + 100 MB at 11.875 GB/s = 8.43 ms.
  EXPECT_EQ(alone, TimeNs::us(10) + TimeNs::ns(8'421'053));  // ceil(1e8 / 11.875) ns
  EXPECT_NEAR(alone.to_seconds(), 2 * (5e-6 + 50e6 / (kNetworkEfficiency * 12.5e9)), 1e-9);
  EXPECT_GT(shared.to_seconds(), 1.85 * alone.to_seconds());
  EXPECT_LT(shared.to_seconds(), 2.0 * alone.to_seconds());
}

}  // namespace
}  // namespace mpsim::engine
