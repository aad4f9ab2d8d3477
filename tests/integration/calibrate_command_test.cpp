// mpsim calibrate end to end: a runs file whose measured step is 20 % slower than the uncalibrated
// prediction becomes a profile with which `simulate --profile` predicts that step; the JSON output;
// a Megatron-LM log as the measurement; bad input.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>
#include <system_error>
#include <utility>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

namespace fs = std::filesystem;
using mpsim::testing::CommandResult;
using mpsim::testing::repo;
using nlohmann::json;

fs::path calibrate_scratch() { return mpsim::testing::scratch("calibrate"); }

class RemoveCalibrateScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(fs::temp_directory_path() / ("mpsim-calibrate-" + std::to_string(::getpid())), ignored);
  }
};
[[maybe_unused]] const auto* const remove_calibrate_scratch = ::testing::AddGlobalTestEnvironment(new RemoveCalibrateScratch);

CommandResult mpsim_calibrate(const std::string& args) { return mpsim::testing::run_mpsim("calibrate " + args); }

/// GPT-3 13B on 4 p4d, the shipped plan: the run every test here measures.
const std::string kRunInputs = "--topology " + repo("topologies/4x-p4d.yaml") + " --model " +
                               repo("configs/models/gpt3-13b.yaml") + " --plan " + repo("configs/plans/gpt3-13b-4x-p4d.yaml");

std::string file_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// The run's row: the topology by name among the shipped ones, the model and plan by path.
std::string run_row(double step_time_s, const std::string& extra = "") {
  return "- id: gpt3-13b-p4d\n"
         "  topology: 4x-p4d.yaml\n"
         "  gpus: 32\n"
         "  model: " + repo("configs/models/gpt3-13b.yaml") + "\n" +
         "  plan: " + repo("configs/plans/gpt3-13b-4x-p4d.yaml") + "\n" + extra +
         "  measured: {step_time_s: " + std::to_string(step_time_s) + "}\n";
}

/// The uncalibrated prediction, a runs file measuring 1.2 x it, and the profile calibrate writes for it.
class CalibrateCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const CommandResult plain = mpsim::testing::run_mpsim("simulate " + kRunInputs + " --json");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    uncalibrated_s_ = json::parse(plain.out).at("step_time_s").get<double>();
    ASSERT_GT(uncalibrated_s_, 0);
    measured_s_ = 1.2 * uncalibrated_s_;
    runs_ = calibrate_scratch() / "runs.yaml";
    std::ofstream(runs_) << run_row(measured_s_);
    profile_ = calibrate_scratch() / "p.yaml";
    calibrated_ = mpsim_calibrate(runs_.string() + " -o " + profile_.string());
  }
  static inline double uncalibrated_s_ = 0, measured_s_ = 0;
  static inline fs::path runs_, profile_;
  static inline CommandResult calibrated_;
};

TEST_F(CalibrateCommand, WritesAProfile) {
  ASSERT_EQ(calibrated_.exit_code, 0) << calibrated_.err;
  EXPECT_NE(calibrated_.out.find("wrote " + profile_.string()), std::string::npos) << calibrated_.out;
  const std::string profile = file_text(profile_);
  EXPECT_EQ(profile.rfind("profile:\n", 0), 0u) << profile;
  EXPECT_NE(profile.find("name: \"p\""), std::string::npos) << profile;  // the output file's stem
  EXPECT_NE(profile.find("id: \"gpt3-13b-p4d\""), std::string::npos) << profile;
  // One run measured 1.2 x its prediction sets one factor, every rate alike, and the table says so.
  EXPECT_NE(profile.find("    all_rates: 0.8"), std::string::npos) << profile;
  EXPECT_NE(calibrated_.out.find("against the catalogue's rates, every one alike"), std::string::npos) << calibrated_.out;
}

TEST_F(CalibrateCommand, SimulateWithTheProfilePredictsTheMeasuredStep) {
  ASSERT_EQ(calibrated_.exit_code, 0) << calibrated_.err;
  const CommandResult r = mpsim::testing::run_mpsim("simulate " + kRunInputs + " --profile " + profile_.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double predicted = json::parse(r.out).at("step_time_s").get<double>();
  EXPECT_NEAR(predicted, measured_s_, 0.01 * measured_s_);
  // Without the profile the prediction is 20 % off: the profile is what closes the gap.
  EXPECT_GT(std::abs(uncalibrated_s_ - measured_s_), 0.1 * measured_s_);
}

TEST_F(CalibrateCommand, ATopologyThatNamesTheProfileAppliesIt) {
  // A cluster file of the same nodes naming the profile (a path beside it): simulate takes the profile
  // without --profile, and --profile still wins.
  ASSERT_EQ(calibrated_.exit_code, 0) << calibrated_.err;
  const fs::path topology = calibrate_scratch() / "calibrated-p4d.yaml";
  std::ofstream(topology) << "name: calibrated\nprofile: p.yaml\nnode_from: " << repo("topologies/p4d.24xlarge.yaml")
                          << "\nnodes: 4\nfabric: { kind: single-switch, network: efa }\n";
  const std::string inputs = "--topology " + topology.string() + " --model " + repo("configs/models/gpt3-13b.yaml") +
                             " --plan " + repo("configs/plans/gpt3-13b-4x-p4d.yaml") + " --json";
  const CommandResult named = mpsim::testing::run_mpsim("simulate " + inputs);
  ASSERT_EQ(named.exit_code, 0) << named.err;
  const CommandResult given = mpsim::testing::run_mpsim("simulate " + kRunInputs + " --profile " + profile_.string() + " --json");
  ASSERT_EQ(given.exit_code, 0) << given.err;
  EXPECT_EQ(json::parse(named.out).at("step_time_s"), json::parse(given.out).at("step_time_s"));
  // An empty profile (no factors) given on the command line replaces the topology's.
  const fs::path neutral = calibrate_scratch() / "neutral.yaml";
  std::ofstream(neutral) << "profile:\n  name: neutral\n  factors: {}\n";
  const CommandResult replaced = mpsim::testing::run_mpsim("simulate " + inputs + " --profile " + neutral.string());
  ASSERT_EQ(replaced.exit_code, 0) << replaced.err;
  EXPECT_NEAR(json::parse(replaced.out).at("step_time_s").get<double>(), uncalibrated_s_, 1e-9 * uncalibrated_s_);
  // A profile that is not there: the error names the topology's field.
  const fs::path missing = calibrate_scratch() / "missing-profile.yaml";
  std::ofstream(missing) << "name: x\nprofile: nowhere.yaml\nnode_from: " << repo("topologies/p4d.24xlarge.yaml")
                         << "\nnodes: 4\nfabric: { kind: single-switch, network: efa }\n";
  const CommandResult bad = mpsim::testing::run_mpsim("simulate --topology " + missing.string() + " --model " +
                                                      repo("configs/models/gpt3-13b.yaml") + " --plan " +
                                                      repo("configs/plans/gpt3-13b-4x-p4d.yaml"));
  EXPECT_NE(bad.exit_code, 0);
  EXPECT_NE(bad.err.find("missing-profile.yaml:2"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("no such profile file"), std::string::npos) << bad.err;
}

TEST_F(CalibrateCommand, PlanWithTheProfileSimulatesItsBaselineAtTheMeasuredStep) {
  // The planner reads the same rates: the plan run today, as its baseline, at the measured step.
  ASSERT_EQ(calibrated_.exit_code, 0) << calibrated_.err;
  const CommandResult r = mpsim::testing::run_mpsim(
      "plan --topology " + repo("topologies/4x-p4d.yaml") + " --model " + repo("configs/models/gpt3-13b.yaml") +
      " --baseline " + repo("configs/plans/gpt3-13b-4x-p4d.yaml") + " --profile " + profile_.string() + " --top 1 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const double baseline = json::parse(r.out).at("baseline").at("step_time_s").get<double>();
  EXPECT_NEAR(baseline, measured_s_, 0.01 * measured_s_);
}

TEST_F(CalibrateCommand, JsonGivesTheFactorsAndTheRuns) {
  const CommandResult r = mpsim_calibrate(runs_.string() + " --json --name stack-a");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json profile = json::parse(r.out);
  EXPECT_EQ(profile.at("name"), "stack-a");
  EXPECT_EQ(profile.at("gpu_kinds"), json::array({"a100-40gb"}));
  ASSERT_TRUE(profile.at("factors").is_object());
  ASSERT_EQ(profile.at("factors").size(), 1u);  // one run sets one factor
  for (const auto& [name, value] : profile.at("factors").items()) {
    EXPECT_GT(value.get<double>(), 0) << name;
    EXPECT_LT(value.get<double>(), 1) << name;  // the measured run is slower than the catalogue's rates
  }
  ASSERT_EQ(profile.at("runs").size(), 1u);
  const json& run = profile.at("runs").at(0);
  EXPECT_EQ(run.at("id"), "gpt3-13b-p4d");
  EXPECT_NEAR(run.at("measured_step_s").get<double>(), measured_s_, 1e-6 * measured_s_);
  EXPECT_NEAR(run.at("uncalibrated_step_s").get<double>(), uncalibrated_s_, 1e-9 * uncalibrated_s_);
  EXPECT_LT(std::abs(run.at("error").get<double>()), 1e-2);
}

TEST_F(CalibrateCommand, ABadRunsFileIsOneLineNamingFileAndLine) {
  const fs::path bad = calibrate_scratch() / "bad-runs.yaml";
  // Line 6: the misspelt field.
  std::ofstream(bad) << run_row(10, "  measuredd: {step_time_s: 10}\n");
  const CommandResult r = mpsim_calibrate(bad.string() + " -o " + (calibrate_scratch() / "never.yaml").string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(bad.string() + ":6:"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("measuredd"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(calibrate_scratch() / "never.yaml"));
}

// Runs with only peak memories set activation_memory alone; asked for rate factors only, they give
// nothing to fit, an input error naming the file.
TEST_F(CalibrateCommand, RunsWithOnlyPeakMemoriesSetTheActivationFactorAlone) {
  const fs::path memory_only = calibrate_scratch() / "memory-only.yaml";
  std::string row = run_row(10);
  row.replace(row.find("step_time_s: "), std::string::npos, "peak_memory_gib: 12, kind: allocated}\n");  // 10.8 GiB predicted
  std::ofstream(memory_only) << row;
  const CommandResult fitted = mpsim_calibrate(memory_only.string() + " --json");
  ASSERT_EQ(fitted.exit_code, 0) << fitted.err;
  const auto profile = nlohmann::json::parse(fitted.out);
  ASSERT_EQ(profile["factors"].size(), 1u) << fitted.out;
  EXPECT_GT(profile["factors"]["activation_memory"].get<double>(), 0.0);
  ASSERT_EQ(profile["peak_runs"].size(), 1u);
  EXPECT_EQ(profile["peak_runs"][0]["kind"], "allocated");
  EXPECT_NEAR(profile["peak_runs"][0]["predicted_gib"].get<double>(), 12.0, 1e-6);
  const CommandResult r = mpsim_calibrate(memory_only.string() + " --factors gemm,network_transfers");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.err.rfind("mpsim: error: " + memory_only.string() + ": ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("no run gives a step time"), std::string::npos) << r.err;
}

// --only fits on the named rows: of two rows of one run measured 1.2 x and 2 x its prediction, the
// profile fitted on the second predicts 2 x; an id no row has is one line naming the flag.
TEST_F(CalibrateCommand, OnlyFitsOnTheNamedRows) {
  const fs::path two = calibrate_scratch() / "two-runs.yaml";
  std::string slow = run_row(2.0 * uncalibrated_s_);
  slow.replace(slow.find("gpt3-13b-p4d"), std::string("gpt3-13b-p4d").size(), "gpt3-13b-p4d-slow");
  std::ofstream(two) << run_row(measured_s_) << slow;
  const CommandResult r = mpsim_calibrate(two.string() + " --only gpt3-13b-p4d-slow --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json profile = json::parse(r.out);
  ASSERT_EQ(profile.at("runs").size(), 1u);
  EXPECT_EQ(profile.at("runs").at(0).at("id"), "gpt3-13b-p4d-slow");
  EXPECT_NEAR(profile.at("runs").at(0).at("predicted_step_s").get<double>(), 2.0 * uncalibrated_s_,
              0.01 * uncalibrated_s_);
  const CommandResult unknown = mpsim_calibrate(two.string() + " --only gpt3-13b-p4d,nosuch-run");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_EQ(std::count(unknown.err.begin(), unknown.err.end(), '\n'), 1) << unknown.err;
  EXPECT_NE(unknown.err.find("--only nosuch-run"), std::string::npos) << unknown.err;
}

TEST_F(CalibrateCommand, AnUnknownFactorExits2) {
  const CommandResult r = mpsim_calibrate(runs_.string() + " --factors gemm,nosuch");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("nosuch"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("network_transfers"), std::string::npos) << r.err;  // the known ones are listed
}

TEST_F(CalibrateCommand, FactorsThatCannotMoveTheRunGiveAnEmptyProfile) {
  // A BF16 run has no FP8 GEMMs.
  const CommandResult r = mpsim_calibrate(runs_.string() + " --factors fp8_gemm");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("the profile is empty"), std::string::npos) << r.out;
}

TEST_F(CalibrateCommand, PerKindWritesTheRunsKindsOwnFactorWhichSimulateApplies) {
  const fs::path per_kind = calibrate_scratch() / "per-kind.yaml";
  const CommandResult r = mpsim_calibrate(runs_.string() + " --per-kind --factors gemm -o " + per_kind.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("a100-40gb"), std::string::npos) << r.out;  // the factor's kind, in the table
  EXPECT_NE(r.out.find("set by 1 run(s): gpt3-13b-p4d"), std::string::npos) << r.out;
  const std::string text = file_text(per_kind);
  EXPECT_NE(text.find("  factors: {}\n  # factors of one GPU kind"), std::string::npos) << text;
  EXPECT_NE(text.find("    \"a100-40gb\":\n      gemm: "), std::string::npos) << text;
  EXPECT_NE(text.find("set_by:"), std::string::npos) << text;
  const CommandResult simulated =
      mpsim::testing::run_mpsim("simulate " + kRunInputs + " --profile " + per_kind.string() + " --json");
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  EXPECT_NEAR(json::parse(simulated.out).at("step_time_s").get<double>(), measured_s_, 0.01 * measured_s_);
}

// On a cluster of two GPU kinds (AMP's V100 and T4 nodes) a prediction is calibrated when the profile
// was fitted on runs of both kinds, not of one of them alone.
TEST(CalibrateProfile, AMixedClustersBandIsCalibratedByAProfileOfEveryKind) {
  const std::string inputs = "--topology " + repo("topologies/amp-p3-g4-mixed.yaml") + " --model " +
                             repo("configs/models/gpt2-medium-amp.yaml") + " --plan " +
                             repo("configs/plans/amp-gpt2-het-best.yaml") + " --json";
  const auto calibrated_with = [&](const std::string& name, const std::string& kinds) {
    const fs::path profile = calibrate_scratch() / name;
    std::ofstream(profile) << "profile:\n  gpu_kinds: [" << kinds << "]\n  factors:\n    gemm: 0.9\n";
    const CommandResult r = mpsim::testing::run_mpsim("simulate " + inputs + " --profile " + profile.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out).at("calibrated").get<bool>();
  };
  EXPECT_TRUE(calibrated_with("both-kinds.yaml", "\"t4-16gb\", \"v100-16gb\""));
  EXPECT_FALSE(calibrated_with("v100-only.yaml", "\"v100-16gb\""));
}

TEST(CalibrateProfile, AKindsOwnFactorAboveItsCeilingIsRefusedAndAnotherKindsIsPassedOver) {
  const fs::path profile = calibrate_scratch() / "per-kind-above-peak.yaml";
  std::ofstream(profile) << "profile:\n  per_kind:\n    a100-40gb: {gemm: 3}\n    t4-16gb: {gemm: 9}\n";
  const CommandResult r = mpsim::testing::run_mpsim("simulate " + kRunInputs + " --profile " + profile.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("gemm on a100-40gb 3 is above what this cluster allows"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("t4-16gb"), std::string::npos) << r.err;
}

// A profile that would run the GPUs above their peak (here, edited by hand) is refused where it is
// applied, naming the file and the factor, rather than predicting a step faster than the hardware.
TEST(CalibrateProfile, AFactorAboveTheClustersCeilingIsRefused) {
  const fs::path profile = calibrate_scratch() / "above-peak.yaml";
  std::ofstream(profile) << "profile:\n  factors:\n    gemm: 3\n";
  const CommandResult r = mpsim::testing::run_mpsim("simulate " + kRunInputs + " --profile " + profile.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(profile.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("gemm 3 is above what this cluster allows"), std::string::npos) << r.err;
}

TEST(CalibrateMeasuredLog, AMegatronLogIsTheRunsMeasuredStep) {
  const fs::path log = calibrate_scratch() / "train.log";
  std::ofstream(log) << " [2024-05-01 10:00:00] iteration        1/    1000 | consumed samples:          256 | "
                        "elapsed time per iteration (ms): 20000.0 | learning rate: 1.0E-04 | lm loss: 1.1E+01 |\n";
  const fs::path profile = calibrate_scratch() / "from-log.yaml";
  const CommandResult r = mpsim_calibrate(kRunInputs + " --measured " + log.string() + " -o " + profile.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json runs = json::parse(r.out).at("runs");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_DOUBLE_EQ(runs.at(0).at("measured_step_s").get<double>(), 20.0);
  EXPECT_EQ(runs.at(0).at("id"), log.string());
  EXPECT_NE(file_text(profile).find("measured_step_s: 20,"), std::string::npos) << file_text(profile);
}

TEST(CalibrateMeasuredLog, MeasuredNeedsTheRunsInputs) {
  const fs::path log = calibrate_scratch() / "alone.log";
  std::ofstream(log) << "elapsed time per iteration (ms): 20000.0\n";
  const CommandResult r = mpsim_calibrate("--measured " + log.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--topology"), std::string::npos) << r.err;
}

// --- Reading kernel rates from PyTorch profiler traces ---------------------------------------------

/// GPT-3 1.3B on two H100s as two pipeline stages: the run the traces below profile, one file per rank.
struct TracedRun {
  fs::path topology, plan;
  [[nodiscard]] std::string inputs() const {
    return "--topology " + topology.string() + " --model " + repo("configs/models/gpt3-1.3b.yaml") + " --plan " +
           plan.string();
  }
};
TracedRun traced_run() {
  TracedRun run{calibrate_scratch() / "two-h100.yaml", calibrate_scratch() / "pp2.yaml"};
  std::ofstream(run.topology) << "cluster: { gpus_per_node: 2, gpu: h100-sxm, intra_node: { kind: nvswitch, bandwidth: \"450 GB/s\" } }\n";
  std::ofstream(run.plan) << "parallelism: {pipeline: 2}\nbatch: {global: 8, micro: 1}\nschedule: 1f1b\n";
  return run;
}

/// One kernel of a profiled step: its name and duration in microseconds ("dur" as written when `raw`).
struct TraceKernel {
  TraceKernel(std::string kernel_name, double dur, std::string raw_dur = "")
      : name(std::move(kernel_name)), dur_us(dur), raw(std::move(raw_dur)) {}
  std::string name;
  double dur_us = 0;
  std::string raw;
};
/// A rank's trace: two ProfilerSteps of `step_us`, each running `kernels` one after the other.
std::string kineto_trace(int rank, double step_us, const std::vector<TraceKernel>& kernels, bool name_kernels = true) {
  std::string events;
  double start = 1000;
  for (int step = 0; step < 2; ++step) {
    events += "{\"ph\": \"X\", \"name\": \"ProfilerStep#" + std::to_string(step) + "\", \"ts\": " + json(start).dump() +
              ", \"dur\": " + json(step_us).dump() + "},";
    double t = start + 1;
    for (const TraceKernel& k : kernels) {
      events += "{\"ph\": \"X\", \"cat\": \"kernel\", " +
                (name_kernels ? "\"name\": " + json(k.name).dump() + ", " : std::string()) + "\"ts\": " + json(t).dump() +
                ", \"dur\": " + (k.raw.empty() ? json(k.dur_us).dump() : k.raw) + "},";
      t += k.dur_us;
    }
    start += step_us;
  }
  events.pop_back();
  return "{\"schemaVersion\": 1, \"distributedInfo\": {\"rank\": " + std::to_string(rank) + "}, \"traceEvents\": [" + events + "]}";
}
/// Both ranks' traces written under `stem`, as --measured arguments.
std::string write_traces(const std::string& stem, double step_us, const std::vector<TraceKernel>& kernels,
                         bool name_kernels = true) {
  std::string args;
  for (int rank = 0; rank < 2; ++rank) {
    const fs::path file = calibrate_scratch() / (stem + "-rank" + std::to_string(rank) + ".json");
    std::ofstream(file) << kineto_trace(rank, step_us, kernels, name_kernels);
    args += " " + file.string();
  }
  return " --measured" + args;
}

// Real kernel names of each class (interop/trace's name table quotes where they come from).
const std::string kGemmKernel = "nvjet_tst_128x256_64x4_1x2_h_bz_coopA_TNT";
const std::string kFlashKernel = "void flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, cutlass::bfloat16_t>>";
const std::string kElementwiseKernel = "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>>";

/// mpsim's predicted GEMM, attention and memory-bound time per step on a rank (the mean over the two
/// ranks), as calibrate reports it for traces of any kernel durations; and the uncalibrated step.
class KernelTraces : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    run_ = traced_run();
    const CommandResult plain = mpsim::testing::run_mpsim("simulate " + run_.inputs() + " --json");
    ASSERT_EQ(plain.exit_code, 0) << plain.err;
    step_us_ = json::parse(plain.out).at("step_time_s").get<double>() * 1e6;
    const CommandResult probe = mpsim_calibrate(
        run_.inputs() + write_traces("probe", step_us_, {{kGemmKernel, 10}, {kFlashKernel, 10}, {kElementwiseKernel, 10}}) +
        " --json");
    ASSERT_EQ(probe.exit_code, 0) << probe.err;
    const json read = json::parse(probe.out);
    for (const json& r : read.at("read_from_kernels")) {
      predicted_us_[r.at("factor").get<std::string>()] = r.at("predicted_s_per_step").get<double>() * 1e6;
    }
    ASSERT_EQ(predicted_us_.size(), 3U) << probe.out;
  }
  static inline TracedRun run_;
  static inline double step_us_ = 0;
  static inline std::map<std::string, double> predicted_us_;
};

// GEMM kernels taking 1.25 x the predicted GEMM time read gemm = 1 / 1.25 = 0.8 (a time scales as
// 1 / the rate); attention kernels at 1.6 x, attention = 0.625; elementwise at 1.25 x, memory_bound 0.8.
// Each rank runs one kernel of a class per step, so the kernels of a step are its class time.
TEST_F(KernelTraces, ClassRatesAreReadInClosedForm) {
  const double gemm = 1.25 * predicted_us_["gemm"], attention = 1.6 * predicted_us_["attention"],
               elementwise = 1.25 * predicted_us_["memory_bound"];
  const double step = std::max(step_us_, 2 * (gemm + attention + elementwise));
  const fs::path profile = calibrate_scratch() / "read.yaml";
  const std::string args = run_.inputs() +
                           write_traces("read", step, {{kGemmKernel, gemm}, {kFlashKernel, attention}, {kElementwiseKernel, elementwise}}) +
                           " -o " + profile.string();
  const CommandResult r = mpsim_calibrate(args + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  std::map<std::string, json> read;
  for (const json& f : out.at("read_from_kernels")) read[f.at("factor").get<std::string>()] = f;
  ASSERT_EQ(read.size(), 3U) << r.out;
  EXPECT_NEAR(read["gemm"].at("value").get<double>(), 0.8, 1e-6);
  EXPECT_NEAR(read["attention"].at("value").get<double>(), 0.625, 1e-6);
  EXPECT_NEAR(read["memory_bound"].at("value").get<double>(), 0.8, 1e-6);
  EXPECT_EQ(read["gemm"].at("kernels").get<int>(), 4);  // 2 ranks x 2 steps
  EXPECT_NEAR(read["gemm"].at("measured_s_per_step").get<double>() * 1e6, gemm, 1e-3);
  EXPECT_NEAR(out.at("factors").at("gemm").get<double>(), 0.8, 1e-6);
  EXPECT_NE(out.at("factor_sources").at("gemm").get<std::string>().find("read from kernel traces: 4 kernels"),
            std::string::npos);
  for (const auto& [factor, source] : out.at("factor_sources").items()) {
    if (!read.contains(factor)) {
      EXPECT_EQ(source, "fitted to the runs' steps") << factor;
    }
  }
  // The profile says per factor how it was set, and reads back.
  const std::string yaml = file_text(profile);
  EXPECT_NE(yaml.find("gemm: 0.8  # read from kernel traces: 4 kernels"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("read_from_kernels:\n    - {factor: gemm, kernels: 4,"), std::string::npos) << yaml;
  const CommandResult again = mpsim::testing::run_mpsim("simulate " + run_.inputs() + " --profile " + profile.string());
  EXPECT_EQ(again.exit_code, 0) << again.err;
  // The text shows each class: measured and predicted per step, and the factor read.
  const CommandResult text = mpsim_calibrate(args);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("measured / step"), std::string::npos) << text.out;
  char gemm_ms[32];
  std::snprintf(gemm_ms, sizeof gemm_ms, "%.3f ms", gemm * 1e-3);
  EXPECT_NE(text.out.find(gemm_ms), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("0.625"), std::string::npos) << text.out;
}

// A kernel no rule names is reported as other (its name listed), and in no class: the GEMMs still read 0.8.
TEST_F(KernelTraces, AnUnknownKernelIsReportedAsOther) {
  const double gemm = 1.25 * predicted_us_["gemm"];
  const CommandResult r = mpsim_calibrate(
      run_.inputs() + write_traces("other", std::max(step_us_, 4 * gemm), {{kGemmKernel, gemm}, {"my_team_fused_kernel_v2", 50}}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("1 kernel name(s) of no known class"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("my_team_fused_kernel_v2 (4 kernels, 0.200 ms)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("0.800"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("read from kernel traces: 4 kernels"), std::string::npos) << r.out;
}

// Traces without kernels set nothing by reading: every factor is fitted to the step, as from a log.
TEST_F(KernelTraces, TracesWithoutKernelsFallBackToTheStepFit) {
  const CommandResult r = mpsim_calibrate(run_.inputs() + write_traces("bare", 1.2 * step_us_, {}) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json out = json::parse(r.out);
  EXPECT_TRUE(out.at("read_from_kernels").empty());
  ASSERT_FALSE(out.at("factors").empty()) << r.out;  // the 20 % slower step is fitted
  for (const auto& [factor, source] : out.at("factor_sources").items()) {
    EXPECT_EQ(source, "fitted to the runs' steps") << factor;
  }
  ASSERT_EQ(out.at("runs").size(), 1U);
  EXPECT_NEAR(out.at("runs").at(0).at("predicted_step_s").get<double>(), 1.2 * step_us_ * 1e-6, 0.01 * 1.2 * step_us_ * 1e-6);
}

// A malformed kernel event is an error naming the file, the event and the field.
TEST_F(KernelTraces, MalformedKernelEventsAreErrorsAtTheField) {
  const CommandResult bad_dur =
      mpsim_calibrate(run_.inputs() + write_traces("bad-dur", step_us_, {{kGemmKernel, 10, "\"slow\""}}));
  EXPECT_EQ(bad_dur.exit_code, 2);
  EXPECT_NE(bad_dur.err.find("bad-dur-rank0.json"), std::string::npos) << bad_dur.err;
  EXPECT_NE(bad_dur.err.find("traceEvents[1].dur is not a number"), std::string::npos) << bad_dur.err;
  EXPECT_EQ(std::count(bad_dur.err.begin(), bad_dur.err.end(), '\n'), 1) << bad_dur.err;
  const CommandResult no_name =
      mpsim_calibrate(run_.inputs() + write_traces("no-name", step_us_, {{kGemmKernel, 10}}, /*name_kernels=*/false));
  EXPECT_EQ(no_name.exit_code, 2);
  EXPECT_NE(no_name.err.find("no-name-rank0.json"), std::string::npos) << no_name.err;
  EXPECT_NE(no_name.err.find("traceEvents[1]: a kernel event without a \"name\" string"), std::string::npos) << no_name.err;
}

}  // namespace
