// Factors read from kernel traces: predicted / measured per class, within the factors' bounds; FP8
// GEMMs apart from 16-bit ones only where both sides have both; the fit holds the read factors.
#include "sim/calibration/kernel_rates.h"

#include <gtest/gtest.h>

#include "sim/calibration/calibrate.h"
#include "tests/unit/sim/calibration/calibration_test_support.h"

namespace mpsim::calibration {
namespace {

using engine::KernelClass;

MeasuredRun gpt3_13b(double measured_step_s) {
  return runs_from(gpt3_13b_row("gpt3-13b", "{step_time_s: " + std::to_string(measured_step_s) + "}")).at(0);
}

const ReadFactor* find(const std::vector<ReadFactor>& read, FactorKind kind) {
  for (const ReadFactor& r : read) {
    if (r.kind == kind) return &r;
  }
  return nullptr;
}

TEST(KernelRates, EachClassIsPredictedOverMeasured) {
  const MeasuredRun run = gpt3_13b(10);
  const std::vector<ReadFactor> read = read_kernel_factors(
      {{KernelClass::Gemm, 100, 2.0, 1.6}, {KernelClass::Attention, 10, 0.5, 0.3}, {KernelClass::MemoryBound, 50, 0.0, 0.2}},
      run.cluster);
  ASSERT_EQ(read.size(), 2U);  // nothing measured of the memory-bound class: nothing read
  ASSERT_NE(find(read, FactorKind::Gemm), nullptr);
  EXPECT_DOUBLE_EQ(find(read, FactorKind::Gemm)->value, 0.8);
  EXPECT_EQ(find(read, FactorKind::Gemm)->kernels, 100);
  EXPECT_FALSE(find(read, FactorKind::Gemm)->clamped);
  ASSERT_NE(find(read, FactorKind::Attention), nullptr);
  EXPECT_DOUBLE_EQ(find(read, FactorKind::Attention)->value, 0.6);
  EXPECT_EQ(find(read, FactorKind::MemoryBound), nullptr);
}

// Kernels faster than the GPU's peak allows (a prediction far above them) stop at the factor's ceiling.
TEST(KernelRates, AFactorPastItsCeilingIsClampedAndSaysSo) {
  const MeasuredRun run = gpt3_13b(10);
  const std::vector<ReadFactor> read = read_kernel_factors({{KernelClass::Gemm, 1, 1.0, 100.0}}, run.cluster);
  ASSERT_EQ(read.size(), 1U);
  EXPECT_TRUE(read[0].clamped);
  EXPECT_DOUBLE_EQ(read[0].value, factor_ceiling(FactorKind::Gemm, run.cluster));
  EXPECT_LT(read[0].value, 100.0);
}

// FP8 GEMMs named so on both sides: gemm from the 16-bit ones, fp8_gemm beyond it. A trace whose GEMMs
// are all 16-bit by name, against a prediction with FP8 ones: every GEMM together sets gemm alone.
TEST(KernelRates, Fp8GemmsApartOnlyWhereBothSidesHaveThem) {
  const MeasuredRun run = gpt3_13b(10);
  const std::vector<ReadFactor> apart =
      read_kernel_factors({{KernelClass::Gemm, 10, 1.0, 0.9}, {KernelClass::Fp8Gemm, 20, 2.0, 1.08}}, run.cluster);
  ASSERT_EQ(apart.size(), 2U);
  EXPECT_DOUBLE_EQ(find(apart, FactorKind::Gemm)->value, 0.9);
  EXPECT_NEAR(find(apart, FactorKind::Fp8Gemm)->value, 0.6, 1e-12);  // 0.54 / 0.9
  const std::vector<ReadFactor> pooled =
      read_kernel_factors({{KernelClass::Gemm, 30, 3.0, 0.9}, {KernelClass::Fp8Gemm, 0, 0.0, 1.5}}, run.cluster);
  ASSERT_EQ(pooled.size(), 1U);
  EXPECT_DOUBLE_EQ(pooled[0].value, 0.8);  // 2.4 / 3
  EXPECT_EQ(pooled[0].kernels, 30);
}

// The readings compare each traced rank with its own pipeline rank's prediction; a rank the plan
// lacks is an error.
TEST(KernelRates, ReadingsAreMeansOverTheTracedRanks) {
  const MeasuredRun run = gpt3_13b(10);
  const std::vector<engine::ClassTimes> predicted = predicted_kernel_times(run);
  ASSERT_EQ(predicted.size(), static_cast<std::size_t>(run.plan.degrees[plan::Axis::Pipeline]));
  MeasuredKernels first;
  first.stage = 0;
  first.kernels[0] = 7;
  first.seconds_per_step[0] = 1.0;
  MeasuredKernels last = first;
  last.stage = static_cast<int>(predicted.size()) - 1;
  last.seconds_per_step[0] = 3.0;
  const std::vector<KernelReading> readings = kernel_readings(run, {first, last});
  ASSERT_EQ(readings.size(), engine::kKernelClasses.size());
  EXPECT_EQ(readings[0].kernel_class, KernelClass::Gemm);
  EXPECT_EQ(readings[0].kernels, 14);
  EXPECT_DOUBLE_EQ(readings[0].measured_s, 2.0);
  EXPECT_DOUBLE_EQ(readings[0].predicted_s,
                   (predicted.front()[KernelClass::Gemm].to_seconds() + predicted.back()[KernelClass::Gemm].to_seconds()) / 2);
  EXPECT_GT(readings[0].predicted_s, 0);
  last.stage = static_cast<int>(predicted.size());
  EXPECT_THROW((void)kernel_readings(run, {last}), std::invalid_argument);
}

// The fit holds a read factor at its value and fits the others to the step; the profile lists it as read.
TEST(KernelRates, TheFitHoldsTheReadFactors) {
  const MeasuredRun plain = gpt3_13b(1);
  const double uncalibrated = predict(plain, {}).step_time_s;
  const std::vector<MeasuredRun> runs{gpt3_13b(1.3 * uncalibrated)};
  CalibrationOptions options;
  options.read = {{FactorKind::Gemm, 0.9, 12, 1.0, 0.9, false}};
  const SoftwareProfile profile = calibrate(runs, "read", options);
  EXPECT_DOUBLE_EQ(profile.factor(FactorKind::Gemm), 0.9);
  ASSERT_EQ(profile.read_factors.size(), 1U);
  EXPECT_NE(profile.factor_source(FactorKind::Gemm).find("read from kernel traces: 12 kernels"), std::string::npos);
  ASSERT_EQ(profile.residuals.size(), 1U);
  EXPECT_DOUBLE_EQ(profile.residuals[0].uncalibrated_step_s, uncalibrated);
  // Some other factor took the rest of the 30 %: the calibrated step is the measured one.
  ASSERT_GE(profile.factors.size(), 2U);
  EXPECT_EQ(profile.factor_source(profile.factors[1].kind), "fitted to the runs' steps");
  EXPECT_NEAR(profile.residuals[0].error(), 0.0, 0.01);
}

}  // namespace
}  // namespace mpsim::calibration
