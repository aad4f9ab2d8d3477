// Frameworks' measured runs as `compare` reads them: the step time is the median of the logged or
// profiled steps, a rank's busy time the union of its kernels per step, and its collectives and
// ranges become spans of the simulator's kinds.
#include "interop/trace/framework_trace.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

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

// Real kernel names (as PyTorch profiler and Nsight tables print them) read into their classes.
TEST(KernelNames, RealNamesReadIntoTheirClasses) {
  EXPECT_EQ(kernel_kind("ncclDevKernel_AllReduce_Sum_bf16_RING_LL"), KernelKind{UnpricedKernel::Nccl});
  EXPECT_EQ(kernel_kind("nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT"), KernelKind{KernelClass::Gemm});
  EXPECT_EQ(kernel_kind("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"),
            KernelKind{KernelClass::Gemm});
  EXPECT_EQ(kernel_kind("ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn"), KernelKind{KernelClass::Gemm});
  EXPECT_EQ(kernel_kind("splitKreduce_kernel"), KernelKind{KernelClass::Gemm});
  EXPECT_EQ(kernel_kind("sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_cgasize1x2x1_stage4_gmmastage2"),
            KernelKind{KernelClass::Fp8Gemm});
  EXPECT_EQ(kernel_kind("void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>"),
            KernelKind{KernelClass::Attention});
  EXPECT_EQ(kernel_kind("flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel"), KernelKind{KernelClass::Attention});
  // FlashAttention 3 is a CUTLASS device kernel: attention, not a GEMM.
  EXPECT_EQ(kernel_kind("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2>>>>"),
            KernelKind{KernelClass::Attention});
  EXPECT_EQ(kernel_kind("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0"),
            KernelKind{KernelClass::Attention});
  EXPECT_EQ(kernel_kind("fmha_cutlassF_bf16_aligned_64x128_rf_sm80"), KernelKind{KernelClass::Attention});
  EXPECT_EQ(kernel_kind("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>"),
            KernelKind{KernelClass::MemoryBound});
  EXPECT_EQ(kernel_kind("triton_poi_fused_mul_silu_0"), KernelKind{KernelClass::MemoryBound});
  EXPECT_EQ(kernel_kind("void multi_tensor_apply_kernel<TensorListMetadata<4>, AdamFunctor<float>>"), KernelKind{KernelClass::MemoryBound});
  EXPECT_EQ(kernel_kind("gdr_decode_batch_kernel"), KernelKind{UnpricedKernel::Other});
}

/// A rank's trace with two 1000-us steps; in each, `kernels` as {name, start offset, duration} (us).
std::string kernel_trace(int rank, const std::vector<std::tuple<std::string, int, int>>& kernels) {
  std::string events;
  for (int step = 0; step < 2; ++step) {
    const int start = 1000 + step * 1000;
    events += fmt::format(R"({{"ph": "X", "name": "ProfilerStep#{}", "ts": {}, "dur": 1000}},)", step, start);
    for (const auto& [name, offset, dur] : kernels) {
      events += fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "{}", "ts": {}, "dur": {}}},)", name, start + offset, dur);
    }
  }
  events += R"({"ph": "X", "cat": "kernel", "name": "nvjet_tst_after_the_steps", "ts": 5000, "dur": 100})";
  return fmt::format(R"({{"schemaVersion": 1, "distributedInfo": {{"rank": {}}}, "traceEvents": [{}]}})", rank, events);
}

// A class's time is its kernels' summed durations per step: two GEMMs overlapping on two streams
// count both; a kernel outside the steps counts nowhere; unknown names are other, listed by name.
TEST(KinetoKernels, ClassTimesAreSummedKernelsPerStep) {
  const std::string r0 = kernel_trace(0, {{"nvjet_tst_a", 10, 100}, {"sm90_xmma_gemm_bf16", 50, 100},
                                          {"flash_fwd_kernel", 300, 40}, {"my_kernel", 400, 5}});
  const std::string r1 = kernel_trace(1, {{"nvjet_tst_a", 10, 30}, {"elementwise_kernel", 100, 20}});
  TraceKernels kernels;
  const trace::StepRecord s = read_kineto_step({{"r1.json", r1}, {"r0.json", r0}}, 8, 1, &kernels);
  ASSERT_EQ(kernels.ranks.size(), 2U);
  const RankKernels& rank0 = kernels.ranks[0];
  EXPECT_EQ(rank0.rank, 0);
  EXPECT_EQ(rank0.stage, 0);
  EXPECT_EQ(rank0.steps, 2);
  EXPECT_EQ(rank0[KernelClass::Gemm].kernels, 4);
  EXPECT_NEAR(rank0[KernelClass::Gemm].seconds, 400e-6, 1e-12);  // summed, though they overlap
  EXPECT_NEAR(rank0[KernelClass::Attention].seconds, 80e-6, 1e-12);
  EXPECT_EQ(rank0[UnpricedKernel::Other].kernels, 2);
  EXPECT_EQ(kernels.ranks[1].stage, 1);
  EXPECT_NEAR(kernels.ranks[1][KernelClass::Gemm].seconds, 60e-6, 1e-12);
  EXPECT_NEAR(kernels.ranks[1][KernelClass::MemoryBound].seconds, 40e-6, 1e-12);
  ASSERT_EQ(kernels.other_names.size(), 1U);
  EXPECT_EQ(kernels.other_names.begin()->first, "my_kernel");
  EXPECT_EQ(kernels.other_names.begin()->second.kernels, 2);
  // The busy time is still the union of the kernels: 185 us of rank 0's step, not the 245 summed.
  EXPECT_NEAR(s.report.devices[0].busy_s, 185e-6, 1e-12);
}

std::string read_error(const std::string& text) {
  try {
    TraceKernels kernels;
    (void)read_kineto_step({{"t.json", text}}, 8, 1, &kernels);
  } catch (const trace::TraceReadError& e) {
    return e.what();
  }
  return "<no error>";
}

// A malformed kernel event names the file, the event's index and the field.
TEST(KinetoKernels, MalformedKernelEventsNameTheEventAndField) {
  const std::string step = R"({"ph": "X", "name": "ProfilerStep#0", "ts": 0, "dur": 100})";
  EXPECT_EQ(read_error(R"({"schemaVersion": 1, "traceEvents": [)" + step +
                       R"(, {"ph": "X", "cat": "kernel", "name": "nvjet_tst", "ts": 1, "dur": "5"}]})"),
            "t.json: traceEvents[1].dur is not a number");
  EXPECT_EQ(read_error(R"({"schemaVersion": 1, "traceEvents": [)" + step + R"(, {"ph": "X", "cat": "kernel", "ts": 1, "dur": 5}]})"),
            "t.json: traceEvents[1]: a kernel event without a \"name\" string");
  EXPECT_EQ(read_error(R"({"schemaVersion": 1, "traceEvents": [)" + step +
                       R"(, {"ph": "X", "cat": "kernel", "name": "nvjet_tst", "ts": 1, "dur": -5}]})"),
            "t.json: traceEvents[1]: \"dur\" is negative");
}

}  // namespace
}  // namespace mpsim::interop
