// calibrate() against the simulator itself: runs whose "measured" steps are the simulator's own
// predictions under known factors, so the fit has an exact answer to recover.
#include "sim/calibration/calibrate.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "calibration_test_support.h"

namespace mpsim::calibration {
namespace {

using testing::gpt3_13b_row;
using testing::runs_from;

/// GPT-3 13B on 4 p4d at its shipped plan (tensor parallel in the node, two pipeline stages across
/// nodes): the step is mostly GEMMs.
MeasuredRun compute_bound_run() { return runs_from(gpt3_13b_row("compute-bound", "{step_time_s: 1}")).front(); }

/// The same job on p4d nodes whose NICs run at a fortieth of their rate: the pipeline's sends and the
/// gradient reduction between nodes take most of the step.
MeasuredRun network_bound_run() {
  return runs_from(gpt3_13b_row("network-bound", "{step_time_s: 1}", "p4d.24xlarge.yaml",
                                "  topology_set: {node.nics.bandwidth: \"2.5 Gb/s\"}\n"))
      .front();
}

/// `run` with its measured step what the simulator predicts under `truth`.
MeasuredRun measured_under(MeasuredRun run, const std::vector<Factor>& truth) {
  run.figure = FigureKind::StepTime;
  run.measured = predict(run, truth).step_time_s;
  return run;
}

/// The fitted value of `kind`, or 0 when the profile has no such factor (so a comparison with the
/// expected value fails visibly).
double fitted(const SoftwareProfile& profile, FactorKind kind) {
  for (const Factor& f : profile.factors) {
    if (f.kind == kind) return f.value;
  }
  return 0;
}

/// GPT-3 1.3B at tensor 4 on one g4dn.12xlarge (four T4 on PCIe, no NVLink): the tensor-parallel
/// all-reduces run over PCIe.
MeasuredRun pcie_run() {
  const std::string row = "- id: pcie-tensor\n"
                          "  topology: g4dn.12xlarge.yaml\n"
                          "  gpus: 4\n"
                          "  model: configs/models/gpt3-1.3b.yaml\n"
                          "  plan: {parallelism: {tensor: 4, pipeline: 1, data: 1}, batch: {global: 8, micro: 1}, "
                          "precision: fp16, allow_tensor_across_nodes: true}\n"
                          "  measured: {step_time_s: 1}\n";
  return runs_from(row).front();
}

class Calibrate : public ::testing::Test {
 protected:
  // Read once for the suite: each test copies what it changes.
  static void SetUpTestSuite() {
    compute_bound_.emplace(compute_bound_run());
    network_bound_.emplace(network_bound_run());
  }
  static void TearDownTestSuite() {
    compute_bound_.reset();
    network_bound_.reset();
  }
  static inline std::optional<MeasuredRun> compute_bound_;
  static inline std::optional<MeasuredRun> network_bound_;
};

TEST_F(Calibrate, TheTwoRunsAreBoundByDifferentRates) {
  // What the two-factor test below relies on: a 0.8 GEMM rate moves the first run more than the
  // second, a 0.8 network rate the second more than the first.
  const double compute_base = predict(*compute_bound_, {}).step_time_s;
  const double network_base = predict(*network_bound_, {}).step_time_s;
  const auto elasticity = [](double base, double probed) { return std::log(probed / base) / std::log(1 / 0.8); };
  const double gemm_on_compute = elasticity(compute_base, predict(*compute_bound_, {{FactorKind::Gemm, 0.8}}).step_time_s);
  const double gemm_on_network = elasticity(network_base, predict(*network_bound_, {{FactorKind::Gemm, 0.8}}).step_time_s);
  const double net_on_compute =
      elasticity(compute_base, predict(*compute_bound_, {{FactorKind::NetworkTransfers, 0.8}}).step_time_s);
  const double net_on_network =
      elasticity(network_base, predict(*network_bound_, {{FactorKind::NetworkTransfers, 0.8}}).step_time_s);
  EXPECT_GT(gemm_on_compute, 0.5);
  EXPECT_GT(net_on_network, 0.5);
  EXPECT_GT(gemm_on_compute, net_on_compute);
  EXPECT_GT(net_on_network, gemm_on_network);
}

TEST_F(Calibrate, OneRunRecoversTheGemmFactorItWasSlowedBy) {
  const MeasuredRun run = measured_under(*compute_bound_, {{FactorKind::Gemm, 0.8}});
  CalibrationOptions gemm_only;
  gemm_only.factors = {FactorKind::Gemm};
  const SoftwareProfile profile = calibrate({run}, "gemm-only", gemm_only);
  ASSERT_EQ(profile.factors.size(), 1u);
  EXPECT_EQ(profile.factors.front().kind, FactorKind::Gemm);
  EXPECT_NEAR(profile.factors.front().value, 0.8, 0.005 * 0.8);
  ASSERT_EQ(profile.residuals.size(), 1u);
  const FitResidual& residual = profile.residuals.front();
  EXPECT_EQ(residual.run, "compute-bound");
  EXPECT_DOUBLE_EQ(residual.measured_step_s, run.measured);
  EXPECT_DOUBLE_EQ(residual.uncalibrated_step_s, predict(*compute_bound_, {}).step_time_s);
  EXPECT_LT(std::abs(residual.error()), 1e-3);
  // The residual's prediction is the run simulated with the fitted profile.
  EXPECT_NEAR(residual.predicted_step_s, predict(run, profile.factors).step_time_s, 1e-9 * run.measured);
  EXPECT_EQ(profile.gpu_kinds, std::vector<std::string>{"a100-40gb"});
}

TEST_F(Calibrate, OneRunFitsOneFactor) {
  // With every factor allowed, one run sets one factor, all_rates: one step cannot say which work was
  // slow, and every rate alike is what its elasticity is largest for (1, less the latencies). A run
  // slowed in its GEMMs alone is matched with every rate less slowed than its GEMMs were.
  const MeasuredRun run = measured_under(*compute_bound_, {{FactorKind::Gemm, 0.8}});
  const SoftwareProfile profile = calibrate({run}, "one-run");
  ASSERT_EQ(profile.factors.size(), 1u);
  EXPECT_EQ(profile.factors.front().kind, FactorKind::AllRates);
  EXPECT_GT(profile.factors.front().value, 0.8);
  EXPECT_LT(profile.factors.front().value, 1.0);
  EXPECT_LT(std::abs(profile.residuals.front().error()), 1e-3);
}

TEST_F(Calibrate, AFactorAtItsCeilingMakesWayForTheNext) {
  // The exception to one factor per run: a run faster than every rate alike can explain pins all_rates
  // at its bound (the tightest rate's), and the rates' own factors take on the rest, each up to its own
  // bound. Beside them all_rates may only slow (at most 1, so that no rate passes its bound through the
  // product): here it ends at 1 and is left out, and the GEMMs' factor stops at the GEMMs' peak.
  MeasuredRun run = *compute_bound_;
  run.measured = predict(run, {}).step_time_s / 3;
  const SoftwareProfile alone = calibrate({run}, "every-rate-alike", [] {
    CalibrationOptions o;
    o.factors = {FactorKind::AllRates};
    return o;
  }());
  ASSERT_EQ(alone.factors.size(), 1u);
  EXPECT_NEAR(alone.factors.front().value, factor_ceiling(FactorKind::AllRates, run.cluster), 1e-9);
  const SoftwareProfile profile = calibrate({run}, "too-fast-for-every-rate");
  ASSERT_GE(profile.factors.size(), 2u);
  EXPECT_DOUBLE_EQ(profile.factor(FactorKind::AllRates), 1.0);
  EXPECT_EQ(profile.factors.front().kind, FactorKind::Gemm);
  EXPECT_NEAR(profile.factors.front().value, factor_ceiling(FactorKind::Gemm, run.cluster), 1e-9);
  EXPECT_LT(std::abs(profile.residuals.front().error()), std::abs(alone.residuals.front().error()));
}

TEST_F(Calibrate, AllRatesIsBoundedByTheTightestRate) {
  const topology::Cluster& cluster = compute_bound_->cluster;
  const double ceiling = factor_ceiling(FactorKind::AllRates, cluster);
  EXPECT_DOUBLE_EQ(ceiling, std::min({factor_ceiling(FactorKind::Gemm, cluster),
                                      factor_ceiling(FactorKind::Attention, cluster),
                                      factor_ceiling(FactorKind::NvlinkTransfers, cluster)}));
}

TEST_F(Calibrate, TwoRunsOfDifferentShapesRecoverTwoFactors) {
  // Given the rates' own factors, runs whose steps lean on different rates tell them apart.
  const std::vector<Factor> truth = {{FactorKind::Gemm, 0.8}, {FactorKind::NetworkTransfers, 0.6}};
  const std::vector<MeasuredRun> runs = {measured_under(*compute_bound_, truth), measured_under(*network_bound_, truth)};
  CalibrationOptions rates;
  rates.factors = {FactorKind::Gemm, FactorKind::NetworkTransfers};
  const SoftwareProfile profile = calibrate(runs, "two-runs", rates);
  ASSERT_EQ(profile.factors.size(), 2u);
  EXPECT_NEAR(fitted(profile, FactorKind::Gemm), 0.8, 0.02 * 0.8);
  EXPECT_NEAR(fitted(profile, FactorKind::NetworkTransfers), 0.6, 0.02 * 0.6);
  ASSERT_EQ(profile.residuals.size(), 2u);
  for (const FitResidual& r : profile.residuals) EXPECT_LT(std::abs(r.error()), 1e-2) << r.run;
}

TEST_F(Calibrate, MaxFactorsLimitsTheFit) {
  const std::vector<Factor> truth = {{FactorKind::Gemm, 0.8}, {FactorKind::NetworkTransfers, 0.6}};
  const std::vector<MeasuredRun> runs = {measured_under(*compute_bound_, truth), measured_under(*network_bound_, truth)};
  CalibrationOptions one_factor;
  one_factor.max_factors = 1;
  const SoftwareProfile profile = calibrate(runs, "one-factor", one_factor);
  ASSERT_EQ(profile.factors.size(), 1u);
  // One factor cannot explain two runs slowed by two: some run is left off by more than the fit's 0.1 %.
  double worst = 0;
  for (const FitResidual& r : profile.residuals) worst = std::max(worst, std::abs(r.error()));
  EXPECT_GT(worst, 1e-2);
}

TEST_F(Calibrate, AnEfficiencyStopsAtThePeak) {
  // A step a third of the prediction would need GEMMs faster than the GPU's peak: the fit stops at
  // the ceiling and the residual says what is left.
  MeasuredRun run = *compute_bound_;
  run.measured = predict(run, {}).step_time_s / 3;
  CalibrationOptions gemm_only;
  gemm_only.factors = {FactorKind::Gemm};
  const SoftwareProfile profile = calibrate({run}, "too-fast", gemm_only);
  ASSERT_EQ(profile.factors.size(), 1u);
  EXPECT_NEAR(profile.factors.front().value, factor_ceiling(FactorKind::Gemm, run.cluster), 1e-9);
  EXPECT_GT(profile.residuals.front().error(), 0.01);
}

TEST_F(Calibrate, TheCeilingHoldsOnEveryRunsGpus) {
  // An H100 run listed before an A100 one: H100's GEMMs are further from their peak (0.61 against
  // 0.66), so its ceiling is the higher. Both runs asking for more than either peak, the fit must
  // stop where the A100s reach theirs: the factor applies to every run's GPUs.
  MeasuredRun h100 = runs_from(gpt3_13b_row("h100", "{step_time_s: 1}", "16x-dgx-h100.yaml")).front();
  MeasuredRun a100 = *compute_bound_;
  ASSERT_GT(factor_ceiling(FactorKind::Gemm, h100.cluster), factor_ceiling(FactorKind::Gemm, a100.cluster) * 1.05);
  h100.measured = predict(h100, {}).step_time_s / 3;
  a100.measured = predict(a100, {}).step_time_s / 3;
  CalibrationOptions gemm_only;
  gemm_only.factors = {FactorKind::Gemm};
  const SoftwareProfile profile = calibrate({h100, a100}, "two-gpu-kinds", gemm_only);
  ASSERT_EQ(profile.factors.size(), 1u);
  EXPECT_LE(profile.factors.front().value, factor_ceiling(FactorKind::Gemm, a100.cluster) * (1 + 1e-9));
  topology::Cluster applied = a100.cluster;
  apply_profile(profile, applied);
  EXPECT_LE(applied.gpu_kinds().front().matmul_efficiency, 1.0 + 1e-9);
  EXPECT_EQ(profile.gpu_kinds, (std::vector<std::string>{"a100-40gb", "h100-sxm"}));
}

TEST_F(Calibrate, AFactorListedTwiceIsFittedOnce) {
  // Pinned at its ceiling, a factor makes way for the next candidate: that must not be the same
  // factor again (applied twice, it would pass the peak, and the profile would not read back).
  MeasuredRun run = *compute_bound_;
  run.measured = predict(run, {}).step_time_s / 3;
  CalibrationOptions gemm_twice;
  gemm_twice.factors = {FactorKind::Gemm, FactorKind::Gemm};
  const SoftwareProfile profile = calibrate({run}, "gemm-twice", gemm_twice);
  ASSERT_EQ(profile.factors.size(), 1u);
  EXPECT_NEAR(profile.factors.front().value, factor_ceiling(FactorKind::Gemm, run.cluster), 1e-9);
  EXPECT_NEAR(profile.residuals.front().predicted_step_s, predict(run, profile.factors).step_time_s, 1e-9);
}

TEST_F(Calibrate, NoFactorThatMovesTheRunsGivesAnEmptyProfile) {
  // FP8 GEMMs are not in a BF16 run: the one factor allowed cannot move it, so nothing is fitted and
  // the runs' calibrated predictions are their uncalibrated ones.
  MeasuredRun run = *compute_bound_;
  const double uncalibrated_s = predict(run, {}).step_time_s;
  run.measured = 1.2 * uncalibrated_s;
  CalibrationOptions fp8_only;
  fp8_only.factors = {FactorKind::Fp8Gemm};
  const SoftwareProfile profile = calibrate({run}, "nothing-moves", fp8_only);
  EXPECT_TRUE(profile.factors.empty());
  ASSERT_EQ(profile.residuals.size(), 1u);
  EXPECT_DOUBLE_EQ(profile.residuals.front().predicted_step_s, uncalibrated_s);
  EXPECT_NEAR(profile.residuals.front().error(), 1 / 1.2 - 1, 1e-12);
}

TEST(CalibrateInputs, RunsWithOnlyAPeakMemoryGiveNoStepToFit) {
  const auto runs = runs_from(gpt3_13b_row("memory-only", "{peak_memory_gib: 30}"));
  CalibrationOptions rates_only;
  rates_only.factors.assign(kRateFactorKinds.begin(), kRateFactorKinds.end());
  EXPECT_THROW((void)calibrate(runs, "none", rates_only), std::invalid_argument);
  // By default such a run sets activation_memory alone, and no rate factor.
  const SoftwareProfile memory = calibrate(runs, "memory");
  ASSERT_EQ(memory.factors.size(), 1u);
  EXPECT_EQ(memory.factors.front().kind, FactorKind::ActivationMemory);
  EXPECT_TRUE(memory.residuals.empty());
  ASSERT_EQ(memory.peak_residuals.size(), 1u);
}

/// `run` measured at the largest over its devices of (weights + gradients + optimizer [+ runtime]) +
/// `factor` x the activations at the device's peak, in GiB: what a stack whose activations take
/// `factor` x mpsim's count peaks at.
MeasuredRun peak_measured_under(MeasuredRun run, double factor, PeakKind kind, std::optional<int> stage = {}) {
  const trace::Report r = predict(run, {});
  double peak = 0;
  for (const trace::DeviceReport& d : r.devices) {
    if (stage && d.stage != *stage) continue;
    const trace::MemoryBreakdown& m = d.memory;
    const double fixed = static_cast<double>(m.weights + m.gradients + m.optimizer) +
                         (kind == PeakKind::Reserved ? static_cast<double>(m.reserved) : 0.0);
    peak = std::max(peak, fixed + factor * static_cast<double>(m.activations));
  }
  run.measured_peak_gib = peak / (1024.0 * 1024.0 * 1024.0);
  run.peak_kind = kind;
  run.peak_stage = stage;
  return run;
}

TEST(CalibrateMemory, RecoversTheActivationFactorOfAMeasuredPeak) {
  // GPT-3 13B on 4 p4d (two pipeline stages: the first holds more stashes, the last the logits) whose
  // stack's activations take 1.2 x mpsim's count, measured as reserved and as allocated.
  for (const PeakKind kind : {PeakKind::Reserved, PeakKind::Allocated}) {
    const MeasuredRun run = peak_measured_under(runs_from(gpt3_13b_row("peak", "{step_time_s: 1}")).front(), 1.2, kind);
    CalibrationOptions memory_only;
    memory_only.factors = {FactorKind::ActivationMemory};
    const SoftwareProfile profile = calibrate({run}, "memory", memory_only);
    ASSERT_EQ(profile.factors.size(), 1u);
    EXPECT_NEAR(profile.factors.front().value, 1.2, 1e-9);
    ASSERT_EQ(profile.peak_residuals.size(), 1u);
    EXPECT_NEAR(profile.peak_residuals.front().error(), 0.0, 1e-9);
    EXPECT_LT(profile.peak_residuals.front().uncalibrated_gib, profile.peak_residuals.front().measured_gib);
    // The profile applied: the simulator's own peak (the whole one for reserved, less its runtime part
    // for allocated) is the measured one.
    const trace::Report calibrated = predict(run, profile.factors);
    double predicted = 0;
    for (const trace::DeviceReport& d : calibrated.devices) {
      predicted = std::max(predicted, static_cast<double>(d.peak_memory_bytes - (kind == PeakKind::Allocated ? d.memory.reserved : 0)));
    }
    EXPECT_NEAR(predicted / (1024.0 * 1024.0 * 1024.0) / *run.measured_peak_gib, 1.0, 1e-6);
  }
}

TEST(CalibrateMemory, APeakLoggedOnOneStageIsThatStagesPredictedPeak) {
  // GPT-3 13B on two pipeline stages, its stack's activations 1.2 x mpsim's count, the peak logged on
  // the last stage (as Megatron-Bridge's loggers wrote it): the factor is recovered from that stage.
  // Read as the largest over every GPU, the same figure gives another factor: the first stage, holding
  // more stashes, reaches it first.
  const MeasuredRun base = runs_from(gpt3_13b_row("peak", "{step_time_s: 1}")).front();
  ASSERT_EQ(base.plan.degrees[plan::Axis::Pipeline], 2);
  const MeasuredRun last = peak_measured_under(base, 1.2, PeakKind::Allocated, 1);
  CalibrationOptions memory_only;
  memory_only.factors = {FactorKind::ActivationMemory};
  const SoftwareProfile profile = calibrate({last}, "memory", memory_only);
  EXPECT_NEAR(fitted(profile, FactorKind::ActivationMemory), 1.2, 1e-9);
  ASSERT_EQ(profile.peak_residuals.size(), 1u);
  EXPECT_NEAR(profile.peak_residuals.front().predicted_gib, *last.measured_peak_gib, 1e-9);
  EXPECT_EQ(profile.peak_residuals.front().stage, 1);  // the profile says which stage it was
  MeasuredRun every_gpu = last;
  every_gpu.peak_stage.reset();
  EXPECT_LT(fitted(calibrate({every_gpu}, "memory", memory_only), FactorKind::ActivationMemory), 1.15);
}

TEST(CalibrateMemory, TheMedianOfTheRunsFactorsIsFitted) {
  // Three runs of one stack at 1.1, 1.3 and 1.25: the median, 1.25; each run's residual is its own
  // factor's distance from it, the middle one's none.
  const MeasuredRun base = runs_from(gpt3_13b_row("peak", "{step_time_s: 1}")).front();
  std::vector<MeasuredRun> runs;
  for (const double factor : {1.1, 1.3, 1.25}) runs.push_back(peak_measured_under(base, factor, PeakKind::Reserved));
  CalibrationOptions memory_only;
  memory_only.factors = {FactorKind::ActivationMemory};
  const SoftwareProfile profile = calibrate(runs, "memory", memory_only);
  EXPECT_NEAR(fitted(profile, FactorKind::ActivationMemory), 1.25, 1e-9);
  ASSERT_EQ(profile.peak_residuals.size(), 3u);
  EXPECT_GT(profile.peak_residuals[0].error(), 0.0);  // measured at 1.1, predicted at 1.25: over
  EXPECT_LT(profile.peak_residuals[1].error(), 0.0);
  EXPECT_NEAR(profile.peak_residuals[2].error(), 0.0, 1e-9);
}

/// GPT-2 medium as AMP ran it on its cluster with the T4 node first (topologies/amp-g4-p3-mixed.yaml):
/// pipeline 4 x data 4, so stage 0 is the T4 node and stages 1-3 the V100 nodes; `partition` sets how
/// much of the step the T4 stage holds.
std::string amp_row(const std::string& id, const std::string& partition) {
  return "- id: " + id +
         "\n  topology: amp-g4-p3-mixed.yaml\n  gpus: 16\n  model: configs/models/gpt2-medium-amp.yaml\n"
         "  plan: {parallelism: {tensor: 1, pipeline: 4, data: 4}, batch: {global: 32, micro: 1}, partition: " +
         partition +
         ", schedule: 1f1b, recompute: none, attention: standard, precision: fp16, zero: 0, placement: tp-dp-pp}\n"
         "  measured: {step_time_s: 1}\n";
}

/// The fitted value of `kind` on `gpu_kind` alone (0 when the profile has none).
double fitted_on_kind(const SoftwareProfile& profile, FactorKind kind, const std::string& gpu_kind) {
  for (const Factor& f : profile.factors) {
    if (f.kind == kind && f.gpu_kind == gpu_kind) return f.value;
  }
  return 0;
}

TEST(CalibratePerKind, RecoversEachKindsGemmFactor) {
  // Three splits, from a T4 stage of one block (the V100 stages set the step) to one of six (the T4
  // stage sets it), "measured" with the V100's GEMMs at 0.5 of the catalogue's rate and the T4's at 0.9.
  const std::vector<MeasuredRun> base = runs_from(amp_row("t4-light", "[0, 1, 9, 17, 24]") +
                                                  amp_row("t4-middle", "[0, 3, 10, 17, 24]") +
                                                  amp_row("t4-heavy", "[0, 6, 12, 18, 24]"));
  ASSERT_EQ(base.front().gpu_kinds(), (std::vector<std::string>{"t4-16gb", "v100-16gb"}));
  const std::vector<Factor> truth = {{FactorKind::Gemm, 0.5, "v100-16gb"}, {FactorKind::Gemm, 0.9, "t4-16gb"}};
  std::vector<MeasuredRun> runs;
  for (const MeasuredRun& run : base) runs.push_back(measured_under(run, truth));
  CalibrationOptions options;
  options.factors = {FactorKind::Gemm};
  options.per_kind = true;
  const SoftwareProfile profile = calibrate(runs, "amp", options);
  ASSERT_EQ(profile.factors.size(), 2u);
  EXPECT_NEAR(fitted_on_kind(profile, FactorKind::Gemm, "v100-16gb"), 0.5, 0.01 * 0.5);
  EXPECT_NEAR(fitted_on_kind(profile, FactorKind::Gemm, "t4-16gb"), 0.9, 0.01 * 0.9);
  EXPECT_EQ(profile.gpu_kinds, (std::vector<std::string>{"t4-16gb", "v100-16gb"}));
  for (const FitResidual& r : profile.residuals) EXPECT_NEAR(r.error(), 0.0, 2e-3) << r.run;
  // Each factor says which runs set it: the T4's at least the run its stage bounds, the V100's at
  // least the run their stages bound.
  ASSERT_EQ(profile.set_by.size(), 2u);
  for (const FactorRuns& set : profile.set_by) {
    const std::string must = set.gpu_kind == "t4-16gb" ? "t4-heavy" : "t4-light";
    EXPECT_NE(std::find(set.runs.begin(), set.runs.end(), must), set.runs.end()) << set.gpu_kind;
  }
  // A shared GEMM factor cannot explain both: its best fit leaves an error the per-kind fit does not.
  CalibrationOptions shared = options;
  shared.per_kind = false;
  const SoftwareProfile one = calibrate(runs, "amp-shared", shared);
  ASSERT_EQ(one.factors.size(), 1u);
  double worst = 0;
  for (const FitResidual& r : one.residuals) worst = std::max(worst, std::abs(r.error()));
  EXPECT_GT(worst, 0.02);
}

TEST(CalibratePerKind, OneKindsRunsSetOnlyThatKindsFactor) {
  // Runs on p4d nodes alone give an a100 factor that a mixed cluster's other kinds do not take.
  const MeasuredRun run = measured_under(runs_from(gpt3_13b_row("a100", "{step_time_s: 1}")).front(),
                                         {{FactorKind::Gemm, 0.8}});
  CalibrationOptions options;
  options.factors = {FactorKind::Gemm};
  options.per_kind = true;
  const SoftwareProfile profile = calibrate({run}, "a100", options);
  ASSERT_EQ(profile.factors.size(), 1u);
  EXPECT_EQ(profile.factors.front().gpu_kind, run.gpu_kind());
  EXPECT_NEAR(profile.factors.front().value, 0.8, 0.005 * 0.8);
  EXPECT_DOUBLE_EQ(profile.factor(FactorKind::Gemm), 1.0);  // no shared factor
}

TEST(CalibratePcie, APcieRunRecoversItsPcieFactorAndAnNvlinkRunNeverHasOne) {
  // The T4s' tensor all-reduces slowed to 0.3 of PCIe's rate: the run's one factor is PCIe's.
  const MeasuredRun run = measured_under(pcie_run(), {{FactorKind::PcieTransfers, 0.3}});
  CalibrationOptions links;
  links.factors = {FactorKind::NvlinkTransfers, FactorKind::NetworkTransfers, FactorKind::PcieTransfers};
  const SoftwareProfile profile = calibrate({run}, "pcie", links);
  ASSERT_EQ(profile.factors.size(), 1u);
  EXPECT_EQ(profile.factors.front().kind, FactorKind::PcieTransfers);
  EXPECT_NEAR(profile.factors.front().value, 0.3, 0.02 * 0.3);
  // On p4d nodes (NVLink inside, PCIe only to the NICs) the network's slowness is never put on PCIe,
  // even with PCIe the only link factor allowed.
  const MeasuredRun network = measured_under(network_bound_run(), {{FactorKind::NetworkTransfers, 0.6}});
  CalibrationOptions pcie_only;
  pcie_only.factors = {FactorKind::PcieTransfers};
  EXPECT_TRUE(calibrate({network}, "nvlink-nodes", pcie_only).factors.empty());
}

}  // namespace
}  // namespace mpsim::calibration
