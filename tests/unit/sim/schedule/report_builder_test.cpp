#include "sim/schedule/report_builder.h"

#include <gtest/gtest.h>

#include "sim/model/model_loader.h"

namespace mpsim::schedule {
namespace {

TEST(ReportBuilder, FiguresFollowFromWhatEachDeviceDid) {
  plan::Plan plan;
  plan.degrees.set(plan::Axis::Pipeline, 2);
  std::vector<DeviceActivity> devices(2);
  devices[0] = {"node0/gpu0", 0, 8'000'000'000, 7'000'000'000, 0, 9'000'000'000, 30, 100, true, {}};
  devices[1] = {"node0/gpu1", 1, 6'000'000'000, 6'000'000'000, 1'000'000'000, 10'000'000'000, 120, 100, true, {}};
  const StepFlops flops{Flops::flop(4e15), Flops::flop(5e15)};
  const trace::Report r = build_report(10.0, devices, flops, FlopsPerSec::flop_per_sec(1e15), plan,
                                       {{"node0/nvlink:gpu0-gpu1", 42, 0.5}});
  EXPECT_DOUBLE_EQ(r.step_time_s, 10.0);
  EXPECT_DOUBLE_EQ(r.devices[0].idle_s, 2.0);
  EXPECT_DOUBLE_EQ(r.devices[1].bubble_fraction, 0.4);
  EXPECT_DOUBLE_EQ(r.bubble_fraction, 6.0 / 20.0);
  // Zero Bubble: 1 - (7 + 6) / (2 ranks x the longest span, 9 s).
  EXPECT_DOUBLE_EQ(r.bubble_rate, 1.0 - 13.0 / 18.0);
  EXPECT_DOUBLE_EQ(r.tflops_per_gpu, 4e15 / 10 / 2 * 1e-12);
  EXPECT_DOUBLE_EQ(r.hardware_tflops_per_gpu, 5e15 / 10 / 2 * 1e-12);
  EXPECT_DOUBLE_EQ(r.mfu, 0.2);
  EXPECT_TRUE(r.devices[1].oom);
  EXPECT_FALSE(r.devices[0].oom);
  EXPECT_TRUE(r.oom);
  EXPECT_EQ(r.peak_memory_bytes, 120);
  ASSERT_EQ(r.links.size(), 1u);
  EXPECT_EQ(r.plan.pipeline, 2);
  EXPECT_EQ(build_report(10.0, devices, flops, std::nullopt, plan).mfu, 0.0);
}

// Korthikanti et al.: full recomputation runs every block's forward again; selective runs the
// attention scores again, 4 s^2 h FLOPs per block and sample.
TEST(ReportBuilder, StepFlopsCountRecomputation) {
  const model::Model m = model::load_model_file(std::string(MPSIM_SOURCE_DIR) + "/configs/models/gpt3-1.3b.yaml");
  plan::Plan plan;
  plan.global_batch = 8;
  plan.attention = plan::AttentionKernel::Standard;  // selective recomputation replays the scores it stores
  const StepFlops none = step_flops(m, plan);
  EXPECT_DOUBLE_EQ(none.model.count(), m.training_flops_per_sample().count() * 8);
  EXPECT_EQ(none.executed, none.model);
  plan.recompute = model::Recompute::Selective;
  const StepFlops selective = step_flops(m, plan);
  EXPECT_DOUBLE_EQ(selective.executed.count() - selective.model.count(), 24 * 4.0 * 2048 * 2048 * 2048 * 8);
  // FlashAttention stores no scores: selective recomputation has nothing to replay.
  plan::Plan flash = plan;
  flash.attention = plan::AttentionKernel::Flash;
  EXPECT_EQ(step_flops(m, flash).executed, step_flops(m, flash).model);
  plan.recompute = model::Recompute::Full;
  double blocks_forward = 0;
  for (const model::Layer& l : m.layers) {
    if (l.kind == model::LayerKind::Transformer) blocks_forward += l.forward_flops.count();
  }
  EXPECT_DOUBLE_EQ(step_flops(m, plan).executed.count() - none.model.count(), blocks_forward * 8);
  // Megatron's block method checkpoints the first 2 of the 24 blocks (one chunk): their forwards alone.
  plan.recompute_method = model::RecomputeMethod::Block;
  plan.recompute_num_layers = 2;
  EXPECT_DOUBLE_EQ(step_flops(m, plan).executed.count() - none.model.count(), blocks_forward / 24 * 2 * 8);
}

}  // namespace
}  // namespace mpsim::schedule
