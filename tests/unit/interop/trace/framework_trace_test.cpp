// Frameworks' measured runs as `compare` reads them: the step time is the median of the logged or
// profiled steps, a rank's busy time the union of its kernels per step, and its collectives and
// ranges become spans of the simulator's kinds.
#include "interop/trace/framework_trace.h"

#include <gtest/gtest.h>

#include <string>

#include <fmt/format.h>

#include "sim/trace/trace_reader.h"

namespace mpsim::interop {
namespace {

TEST(StepTimeLog, MedianOfMegatronAndNemoLines) {
  const std::string megatron =
      " iteration 1 | elapsed time per iteration (ms): 1500.0 | lm loss 9\n"
      " iteration 2 | elapsed time per iteration (ms): 1000.0 |\n"
      " iteration 3 | elapsed time per iteration (ms): 1200.5 |\n";
  ASSERT_TRUE(is_step_time_log(megatron));
  EXPECT_DOUBLE_EQ(read_step_time_log(megatron, "m.log").report.step_time_s, 1.2005);
  const std::string nemo = "train_step_timing in s: 2.0\ntrain_step_timing in s=4.0\n";
  ASSERT_TRUE(is_step_time_log(nemo));
  EXPECT_DOUBLE_EQ(read_step_time_log(nemo, "n.log").report.step_time_s, 3.0);  // the mean of the middle two
  EXPECT_FALSE(is_step_time_log("loss 2.3\n"));
  EXPECT_THROW((void)read_step_time_log("loss 2.3\n", "x.log"), trace::TraceReadError);
}

// Megatron's throughput and memory lines: the median throughput; the memory line with the largest max
// allocated over ranks and iterations (MB being 2^20 bytes), with its max reserved only where that line
// gives one (older Megatron-LM prints none).
TEST(StepTimeLog, ThroughputAndTheLargestMemoryLine) {
  const std::string log =
      " iteration 1 | elapsed time per iteration (ms): 900.0 | throughput per GPU (TFLOP/s/GPU): 300.0 |\n"
      "[Rank 0] (after 1 iterations) memory (MB) | allocated: 10.0 | max allocated: 20.5 | reserved: 30.0 | "
      "max reserved: 32.0\n"
      "[Rank 6] (after 1 iterations) memory (MB) | allocated: 12.0 | max allocated: 40.0 | reserved: 45.0\n"
      " iteration 2 | elapsed time per iteration (ms): 1000.0 | throughput per GPU (TFLOP/s/GPU): 410.5 |\n"
      " iteration 3 | elapsed time per iteration (ms): 1100.0 | throughput per GPU (TFLOP/s/GPU): 400.0 |\n";
  const StepLog read = read_step_log(log, "m.log");
  EXPECT_DOUBLE_EQ(read.step_time_s, 1.0);
  EXPECT_EQ(read.steps, 3);
  ASSERT_TRUE(read.tflops_per_gpu.has_value());
  EXPECT_DOUBLE_EQ(*read.tflops_per_gpu, 400.0);
  ASSERT_TRUE(read.max_allocated_bytes.has_value());
  EXPECT_EQ(*read.max_allocated_bytes, 40LL << 20);
  EXPECT_EQ(read.max_allocated_rank, 6);
  EXPECT_FALSE(read.max_reserved_bytes.has_value());  // rank 6's line gives none; rank 0's is not its

  const StepLog bare = read_step_log(" iteration 1 | elapsed time per iteration (ms): 900.0 |\n", "b.log");
  EXPECT_FALSE(bare.tflops_per_gpu.has_value());
  EXPECT_FALSE(bare.max_allocated_bytes.has_value());
}

/// One rank's trace: `rank` in distributedInfo, profiler steps of `step_us` microseconds back to back,
/// and in each step an all-reduce kernel of `kernel_us` and a forward range.
std::string kineto_rank(int rank, const std::vector<int>& step_us, int kernel_us) {
  std::string events;
  long start = 1000;
  for (std::size_t i = 0; i < step_us.size(); ++i) {
    events += fmt::format(R"({{"ph": "X", "name": "ProfilerStep#{}", "ts": {}, "dur": {}}},)", i, start, step_us[i]);
    events += fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", )"
                          R"("ts": {}, "dur": {}}},)",
                          start + 1, kernel_us);
    events += fmt::format(R"({{"ph": "X", "cat": "gpu_user_annotation", "name": "forward", "ts": {}, "dur": 1}},)",
                          start + 1);
    start += step_us[i];
  }
  events.pop_back();
  return fmt::format(R"({{"schemaVersion": 1, "distributedInfo": {{"rank": {}}}, "traceEvents": [{}]}})", rank, events);
}

TEST(KinetoTrace, StepIsTheMedianStepOfEveryRankAndBusyTheKernelsPerStep) {
  const std::string r0 = kineto_rank(0, {100, 300, 200}, 50);
  const std::string r1 = kineto_rank(1, {400, 200, 200}, 20);
  ASSERT_TRUE(is_kineto_trace(r0));
  // Files in either order: the rank comes from distributedInfo.
  const trace::StepRecord s = read_kineto_step({{"b.json", r1}, {"a.json", r0}}, 1, 1);
  EXPECT_DOUBLE_EQ(s.report.step_time_s, 200e-6);  // median of 100, 300, 200, 400, 200, 200 us
  ASSERT_EQ(s.report.devices.size(), 2U);
  EXPECT_EQ(s.report.devices[0].id, "node0/gpu0");
  EXPECT_EQ(s.report.devices[1].id, "node1/gpu0");
  EXPECT_EQ(s.report.devices[1].stage, 1);
  EXPECT_NEAR(s.report.devices[0].busy_s, 50e-6, 1e-12);
  EXPECT_NEAR(s.report.devices[1].busy_s, 20e-6, 1e-12);
  EXPECT_NEAR(s.report.bubble_fraction, ((200 - 50) + (200 - 20)) / (2.0 * 200), 1e-9);
  std::size_t all_reduces = 0;
  std::size_t forwards = 0;
  ASSERT_TRUE(s.timeline.has_value());
  for (const trace::Span& span : s.timeline->spans) {
    all_reduces += span.kind == trace::SpanKind::AllReduce ? 1 : 0;
    forwards += span.kind == trace::SpanKind::Forward ? 1 : 0;
  }
  EXPECT_EQ(all_reduces, 6U);
  EXPECT_EQ(forwards, 6U);
  EXPECT_THROW((void)read_kineto_step({{"a.json", r0}, {"c.json", r0}}, 8, 1), trace::TraceReadError);  // rank 0 twice
}

}  // namespace
}  // namespace mpsim::interop
