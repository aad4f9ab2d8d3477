// A step to a whole run: steps, time, GPU-hours, cost and energy consistent with the step, and
// Llama 3's reported effective training time from its failure rate alone.
#include "sim/training/training_estimate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mpsim::training {
namespace {

TrainingJob job() {
  TrainingJob j;
  j.tokens = 1e12;
  j.tokens_per_step = 4'194'304;  // 1024 sequences of 4096
  j.step_time = TimeNs::seconds(6.5);
  j.gpus = 1024;
  j.busy_fraction = 0.8;
  j.gpu_tdp = Watts::watts(700.0 * 1024);
  j.checkpoint_bytes = Bytes::gb(70.0 * 14);  // 70B parameters: bf16 weights and Adam's fp32 state
  return j;
}

TEST(TrainingEstimate, FiguresFollowFromTheStep) {
  TrainingAssumptions a;
  a.gpu_hour_price = 2.5;
  const TrainingEstimate e = estimate_training(job(), a);
  EXPECT_EQ(e.steps, static_cast<std::int64_t>(std::ceil(1e12 / 4'194'304.0)));
  EXPECT_NEAR(e.compute.to_seconds(), 6.5 * static_cast<double>(e.steps), 1e-3);
  EXPECT_GT(e.wall_time, e.compute);
  EXPECT_NEAR(e.effective_time_fraction, e.compute.to_seconds() / e.wall_time.to_seconds(), 1e-12);
  EXPECT_NEAR(e.gpu_hours, e.wall_time.to_seconds() / 3600 * 1024, 1e-6 * e.gpu_hours);
  ASSERT_TRUE(e.cost.has_value());
  EXPECT_NEAR(*e.cost, 2.5 * e.gpu_hours, 1e-6 * *e.cost);
  // The job's MTBF is the per-GPU figure over its GPUs; the checkpoint is written by all of them.
  EXPECT_NEAR(e.mtbf.to_seconds(), a.gpu_hours_per_interruption * 3600 / 1024, 1e-3);
  EXPECT_NEAR(e.checkpoint_write.to_seconds(), 70e9 * 14 / (a.checkpoint_bandwidth_per_gpu.in_bytes_per_sec() * 1024),
              1e-6);
  EXPECT_NEAR(e.expected_interruptions, e.wall_time / e.mtbf, 1e-9);
}

TEST(TrainingEstimate, WithoutFailuresOrDumpsTheRunIsItsSteps) {
  // An interruption every 2e9 GPU-hours: 220 years for this job (the clock's range is 292 years).
  TrainingAssumptions a;
  a.gpu_hours_per_interruption = 2e9;
  a.gpu_hours_per_planned_restart = 2e9;
  TrainingJob j = job();
  j.checkpoint_bytes = Bytes::bytes(0);
  const TrainingEstimate e = estimate_training(j, a);
  EXPECT_NEAR(e.wall_time.to_seconds(), e.compute.to_seconds(), 1e-6 * e.compute.to_seconds());
  // Energy: each GPU at idle + (TDP - idle) x busy share, plus the host, for the whole run.
  const double per_gpu = 70 + (700 - 70) * 0.8 + a.host_power_per_gpu.in_watts();
  ASSERT_TRUE(e.energy_joules.has_value());
  EXPECT_NEAR(*e.energy_joules, per_gpu * 1024 * e.compute.to_seconds(), 1e-6 * *e.energy_joules);
}

TEST(TrainingEstimate, NoEnergyWithoutTheTdpNorCostWithoutAPrice) {
  TrainingJob j = job();
  j.gpu_tdp = Watts::watts(0);
  const TrainingEstimate e = estimate_training(j, {});
  EXPECT_FALSE(e.energy_joules.has_value());
  EXPECT_FALSE(e.cost.has_value());
}

// Llama 3 (Dubey et al. 2024, section 3.3.4): 16,384 H100, "higher than 90%" effective training time
// despite 419 unexpected interruptions in 54 days. From that failure rate, the default restart and
// checkpoint bandwidth, and Llama 3 405B's checkpoint (bf16 weights, Adam's fp32 state): 92.1 %.
TEST(TrainingEstimate, ReproducesLlama3EffectiveTrainingTime) {
  TrainingJob j;
  j.tokens = 15.6e12;
  j.tokens_per_step = 16'777'216;  // 2048 sequences of 8192
  j.step_time = TimeNs::seconds(12);
  j.gpus = 16384;
  j.busy_fraction = 0.8;
  j.checkpoint_bytes = Bytes::bytes(static_cast<std::int64_t>(405e9 * (2 + 12)));
  const TrainingEstimate e = estimate_training(j, {});
  EXPECT_NEAR(e.mtbf.to_seconds() / 3600, 54.0 * 24 / 419, 1e-6);  // one every 3.1 hours
  EXPECT_GT(e.effective_time_fraction, 0.90);
  EXPECT_LT(e.effective_time_fraction, 0.925);
  // The fraction does not depend on the run's length: the same with a tenth of the tokens.
  j.tokens /= 10;
  EXPECT_NEAR(estimate_training(j, {}).effective_time_fraction, e.effective_time_fraction, 1e-4);
}

}  // namespace
}  // namespace mpsim::training
