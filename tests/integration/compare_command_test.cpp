// mpsim compare end to end: two predictions of different settings written by `simulate --trace`, whose
// exact error follows from the two reports in the files; bare reports; bad input.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

namespace fs = std::filesystem;
using mpsim::testing::CommandResult;
using mpsim::testing::repo;
using nlohmann::json;

fs::path scratch() { return mpsim::testing::scratch("compare"); }

class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(fs::temp_directory_path() / ("mpsim-compare-" + std::to_string(::getpid())), ignored);
  }
};
[[maybe_unused]] const auto* const remove_scratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

CommandResult mpsim(const std::string& args) { return mpsim::testing::run_mpsim(args); }

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return json::parse(std::string(std::istreambuf_iterator<char>(in), {}));
}

std::string simulate(const std::string& extra) {
  return "simulate --topology " + repo("topologies/4x-p4d.yaml") + " --model " + repo("configs/models/gpt3-13b.yaml") +
         " --plan " + repo("configs/plans/gpt3-13b-4x-p4d.yaml") + " " + extra;
}

/// Two traces of the same model with 8 and 16 microbatches, written once for all tests.
class CompareCommand : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    predicted_ = scratch() / "m8.json";
    measured_ = scratch() / "m16.json";
    bare_ = scratch() / "m8-report.json";
    const CommandResult a = mpsim(simulate("--set plan.microbatches=8 --trace " + predicted_.string()));
    ASSERT_EQ(a.exit_code, 0) << a.err;
    const CommandResult b = mpsim(simulate("--set plan.microbatches=16 --trace " + measured_.string()));
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const CommandResult c = mpsim(simulate("--set plan.microbatches=8 --json"));
    ASSERT_EQ(c.exit_code, 0) << c.err;
    std::ofstream(bare_) << c.out;
  }
  static inline fs::path predicted_, measured_, bare_;
};

TEST_F(CompareCommand, JsonStepTimeErrorFollowsFromTheTwoReports) {
  const double p = read_json(predicted_).at("mpsim").at("step_time_s").get<double>();
  const double m = read_json(measured_).at("mpsim").at("step_time_s").get<double>();
  ASSERT_GT(m, 0);
  ASSERT_NE(p, m);  // the settings differ in step time
  const CommandResult r = mpsim("compare " + predicted_.string() + " " + measured_.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const json j = json::parse(r.out);
  EXPECT_DOUBLE_EQ(j.at("predicted_step_time_s").get<double>(), p);
  EXPECT_DOUBLE_EQ(j.at("measured_step_time_s").get<double>(), m);
  EXPECT_DOUBLE_EQ(j.at("step_time_error").get<double>(), std::abs(p - m) / m);
  // Swapping the two measures the error against the other one.
  const json swapped = json::parse(mpsim("compare " + measured_.string() + " " + predicted_.string() + " --json").out);
  EXPECT_DOUBLE_EQ(swapped.at("step_time_error").get<double>(), std::abs(p - m) / p);
}

TEST_F(CompareCommand, PerKindCountsAreTheTracesSpans) {
  const auto count = [](const json& trace, const std::string& cat) {
    const auto& events = trace.at("traceEvents");
    return std::count_if(events.begin(), events.end(),
                         [&](const json& e) { return e.value("ph", "") == "X" && e.value("cat", "") == cat; });
  };
  const json pt = read_json(predicted_);
  const json mt = read_json(measured_);
  const json j = json::parse(mpsim("compare " + predicted_.string() + " " + measured_.string() + " --json").out);
  ASSERT_TRUE(j.at("per_kind").contains("forward"));
  ASSERT_TRUE(j.at("per_kind").contains("backward"));
  for (const std::string kind : {"forward", "backward"}) {
    EXPECT_EQ(j.at("per_kind").at(kind).at("predicted_count").get<long>(), count(pt, kind)) << kind;
    EXPECT_EQ(j.at("per_kind").at(kind).at("measured_count").get<long>(), count(mt, kind)) << kind;
  }
  // Same model, partition and micro batch: a forward costs the same with either microbatch count.
  EXPECT_NEAR(j.at("per_kind").at("forward").at("median_ratio").get<double>(), 1.0, 1e-6);
  const auto& devices = j.at("devices");
  ASSERT_EQ(devices.size(), read_json(predicted_).at("mpsim").at("devices").size());
  EXPECT_FALSE(devices[0].at("measured_busy_s").is_null());
}

TEST_F(CompareCommand, SameFileHasNoError) {
  const json j = json::parse(mpsim("compare " + predicted_.string() + " " + predicted_.string() + " --json").out);
  EXPECT_EQ(j.at("step_time_error").get<double>(), 0);
  EXPECT_DOUBLE_EQ(j.at("per_kind").at("forward").at("mean_ratio").get<double>(), 1.0);
}

TEST_F(CompareCommand, BareReportAgainstATrace) {
  const CommandResult r = mpsim("compare " + bare_.string() + " " + measured_.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  const double p = read_json(bare_).at("step_time_s").get<double>();
  const double m = read_json(measured_).at("mpsim").at("step_time_s").get<double>();
  EXPECT_DOUBLE_EQ(j.at("step_time_error").get<double>(), std::abs(p - m) / m);
  // Only the measured side has spans.
  EXPECT_EQ(j.at("per_kind").at("forward").at("predicted_count").get<long>(), 0);
  EXPECT_TRUE(j.at("per_kind").at("forward").at("mean_ratio").is_null());
}

TEST_F(CompareCommand, TableByDefault) {
  const CommandResult r = mpsim("compare " + predicted_.string() + " " + measured_.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("step time"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("forward"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("node0/gpu0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("%"), std::string::npos) << r.out;
}

/// Bad input: exit 2, nothing on stdout, one line on stderr naming the file.
void expect_bad_input(const std::string& args, const std::string& file) {
  const CommandResult r = mpsim("compare " + args);
  EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(r.err.rfind("mpsim: error: " + file + ": ", 0), 0u) << r.err;
}

TEST_F(CompareCommand, AcceptsAGzipPrediction) {
  const fs::path gz = scratch() / "m8.json.gz";
  const CommandResult w = mpsim(simulate("--set plan.microbatches=8 --trace " + gz.string()));
  ASSERT_EQ(w.exit_code, 0) << w.err;
  const CommandResult plain = mpsim("compare " + predicted_.string() + " " + measured_.string() + " --json");
  const CommandResult zipped = mpsim("compare " + gz.string() + " " + measured_.string() + " --json");
  ASSERT_EQ(zipped.exit_code, 0) << zipped.err;
  EXPECT_TRUE(zipped.err.empty()) << zipped.err;
  // The same comparison but for the file it names.
  const auto without_source = [](const std::string& out, const fs::path& predicted) {
    json j = json::parse(out);
    EXPECT_EQ(j.at("predicted_from"), predicted.string());
    j.erase("predicted_from");
    return j;
  };
  EXPECT_EQ(without_source(zipped.out, gz), without_source(plain.out, predicted_));
  // Recognised by its bytes: the same file under a plain .json name reads the same.
  const fs::path renamed = scratch() / "m8-gzipped.json";
  fs::copy_file(gz, renamed, fs::copy_options::overwrite_existing);
  const CommandResult r = mpsim("compare " + renamed.string() + " " + measured_.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(without_source(r.out, renamed), without_source(plain.out, predicted_));
}

TEST_F(CompareCommand, BadInputNamesTheFile) {
  const fs::path missing = scratch() / "missing.json";
  expect_bad_input(missing.string() + " " + measured_.string(), missing.string());
  const fs::path text = scratch() / "text.json";
  std::ofstream(text) << "this is not json\n";
  expect_bad_input(predicted_.string() + " " + text.string(), text.string());
  const fs::path other = scratch() / "other.json";
  std::ofstream(other) << R"({"hello": 1})";
  expect_bad_input(other.string() + " " + measured_.string(), other.string());
  const fs::path broken = scratch() / "broken-trace.json";
  std::ofstream(broken) << R"({"traceEvents": [{"ph": "X", "cat": "forward", "ts": 0, "dur": )";
  expect_bad_input(predicted_.string() + " " + broken.string(), broken.string());
  const fs::path truncated = scratch() / "truncated.json.gz";
  std::ofstream(truncated, std::ios::binary) << std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff", 10);
  expect_bad_input(predicted_.string() + " " + truncated.string(), truncated.string());
  const fs::path bad_report = scratch() / "bad-report.json";
  std::ofstream(bad_report) << R"({"step_time_s": "fast"})";
  expect_bad_input(bad_report.string() + " " + measured_.string(), bad_report.string());
  const CommandResult r = mpsim("compare " + predicted_.string());
  EXPECT_EQ(r.exit_code, 2);
}


std::string run_inputs() {
  return "--topology " + repo("topologies/4x-p4d.yaml") + " --model " + repo("configs/models/gpt3-13b.yaml") +
         " --plan " + repo("configs/plans/gpt3-13b-4x-p4d.yaml");
}

// Given the run's inputs instead of a PREDICTED file, compare simulates the prediction itself: the same
// step, spans and devices as `simulate --trace` writes, every positional file measured.
TEST_F(CompareCommand, SimulatesThePredictionFromTheRunsInputs) {
  const json from_file = json::parse(mpsim("compare " + predicted_.string() + " " + measured_.string() + " --json").out);
  const CommandResult r =
      mpsim("compare " + run_inputs() + " --set plan.microbatches=8 " + measured_.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json here = json::parse(r.out);
  EXPECT_DOUBLE_EQ(here.at("predicted_step_time_s").get<double>(), from_file.at("predicted_step_time_s").get<double>());
  EXPECT_DOUBLE_EQ(here.at("step_time_error").get<double>(), from_file.at("step_time_error").get<double>());
  EXPECT_EQ(here.at("per_kind"), from_file.at("per_kind"));
  EXPECT_EQ(here.at("devices").size(), from_file.at("devices").size());
  // The JSON says where the prediction came from: the file, or the simulation run here.
  EXPECT_EQ(from_file.at("predicted_from"), predicted_.string());
  EXPECT_EQ(here.at("predicted_from"), "simulate --plan " + repo("configs/plans/gpt3-13b-4x-p4d.yaml"));
}

// A profile fitted since the prediction was made applies when compare simulates it: its step is
// simulate --profile's, and a GEMM factor of 0.5 makes it slower than the catalogue's.
TEST_F(CompareCommand, AProfileAppliesToThePredictionItSimulates) {
  const fs::path profile = scratch() / "half-gemm.yaml";
  std::ofstream(profile) << "profile:\n  name: half-gemm\n  factors:\n    gemm: 0.5\n";
  const CommandResult simulated =
      mpsim(simulate("--set plan.microbatches=8 --profile " + profile.string() + " --json"));
  ASSERT_EQ(simulated.exit_code, 0) << simulated.err;
  const double with_profile = json::parse(simulated.out).at("step_time_s").get<double>();
  const CommandResult r = mpsim("compare " + run_inputs() + " --set plan.microbatches=8 --profile " + profile.string() +
                                " " + measured_.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json compared = json::parse(r.out);
  const double predicted = compared.at("predicted_step_time_s").get<double>();
  EXPECT_DOUBLE_EQ(predicted, with_profile);
  EXPECT_NE(compared.at("predicted_from").get<std::string>().find("--profile " + profile.string()), std::string::npos);
  // A topology naming the profile applies it as --profile does, and the source says whose it was.
  const fs::path topology = scratch() / "half-gemm-p4d.yaml";
  std::ofstream(topology) << "name: half-gemm-p4d\nprofile: half-gemm.yaml\nnode_from: " << repo("topologies/p4d.24xlarge.yaml")
                          << "\nnodes: 4\nfabric: { kind: single-switch, network: efa }\n";
  const CommandResult named = mpsim("compare --topology " + topology.string() + " --model " +
                                    repo("configs/models/gpt3-13b.yaml") + " --plan " +
                                    repo("configs/plans/gpt3-13b-4x-p4d.yaml") + " --set plan.microbatches=8 " +
                                    measured_.string() + " --json");
  ASSERT_EQ(named.exit_code, 0) << named.err;
  const json by_topology = json::parse(named.out);
  EXPECT_DOUBLE_EQ(by_topology.at("predicted_step_time_s").get<double>(), with_profile);
  EXPECT_NE(by_topology.at("predicted_from").get<std::string>().find("(the topology's profile, half-gemm)"),
            std::string::npos)
      << by_topology.at("predicted_from");
  EXPECT_GT(predicted, read_json(predicted_).at("mpsim").at("step_time_s").get<double>());
}

// A PREDICTED file keeps the rates it was simulated with: a profile beside it is refused in one line,
// as are inputs that only a simulation here would use.
TEST_F(CompareCommand, AProfileWithoutTheRunsInputsIsRefused) {
  const CommandResult r = mpsim("compare " + predicted_.string() + " " + measured_.string() + " --profile " +
                                repo("configs/profiles/mbridge-25.09-b200-dense.yaml"));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--profile"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const CommandResult partial = mpsim("compare --topology " + repo("topologies/4x-p4d.yaml") + " " + measured_.string());
  EXPECT_EQ(partial.exit_code, 2);
  EXPECT_NE(partial.err.find("--model"), std::string::npos) << partial.err;
}

// A framework's run against the prediction: PyTorch profiler (Kineto) traces of two ranks, written for
// this test in Kineto's format (tests/data/kineto), for a two-stage pipeline of the tiny GPT.
class CompareFrameworkRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    predicted_ = scratch() / "pp2.json";
    const CommandResult r = mpsim("simulate --topology " + repo("tests/integration/executor/loopback.yaml") +
                                  " --set topology.cluster.gpus_per_node=2 --model " +
                                  repo("configs/models/cpu-gpt-tiny.yaml") + " --plan " +
                                  repo("configs/plans/cpu-tiny-1f1b-pp2.yaml") + " --trace " + predicted_.string());
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  static inline fs::path predicted_;
};

TEST_F(CompareFrameworkRun, KinetoTracesGiveTheStepAndEachStagesBusyTime) {
  const CommandResult r = mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/rank0.pt.trace.json") +
                                " " + repo("tests/data/kineto/rank1.pt.trace.json") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  // The steps: 10 and 12 ms on each rank; their median is 11 ms.
  EXPECT_NEAR(c.at("measured_step_time_s").get<double>(), 0.011, 1e-12);
  // By hand, the union of each rank's kernels inside its two steps, per step: rank 0 (stage 0)
  // [1.5, 4.0] + [4.0, 4.5] + [12, 16] + [20, 21] ms = 8 ms / 2; rank 1 (stage 1) 2 + 1 + 6 = 9 ms / 2.
  const json& stages = c.at("stages");
  ASSERT_EQ(stages.size(), 2u) << c.dump(2);
  EXPECT_EQ(stages[0].at("stage"), 0);
  EXPECT_EQ(stages[0].at("measured_devices"), 1);
  EXPECT_NEAR(stages[0].at("measured_busy_s").get<double>(), 0.004, 1e-12);
  EXPECT_NEAR(stages[0].at("measured_idle_fraction").get<double>(), 7.0 / 11.0, 1e-9);
  EXPECT_NEAR(stages[1].at("measured_busy_s").get<double>(), 0.0045, 1e-12);
  EXPECT_NEAR(stages[1].at("measured_idle_fraction").get<double>(), 6.5 / 11.0, 1e-9);
  EXPECT_TRUE(stages[0].at("predicted_busy_s").is_number());
  // The ranks are the prediction's GPUs: node0/gpu0 and node0/gpu1, matched by name.
  for (const json& d : c.at("devices")) EXPECT_TRUE(d.at("predicted_busy_s").is_number()) << d.dump();
  // Per kind: the NCCL kernels by name, and the ranges the run recorded.
  const json& kinds = c.at("per_kind");
  EXPECT_EQ(kinds.at("send").at("measured_count"), 2);
  EXPECT_NEAR(kinds.at("send").at("measured_total_s").get<double>(), 0.0015, 1e-12);
  EXPECT_EQ(kinds.at("allreduce").at("measured_count"), 1);
  EXPECT_EQ(kinds.at("forward").at("measured_count"), 1);
  EXPECT_EQ(kinds.at("backward").at("measured_count"), 1);
  EXPECT_EQ(kinds.at("optimizer").at("measured_count"), 1);

  const CommandResult text = mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/rank0.pt.trace.json") +
                                   " " + repo("tests/data/kineto/rank1.pt.trace.json"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("per stage"), std::string::npos) << text.out;
}

TEST_F(CompareFrameworkRun, AStepTimeLogGivesTheMedianStep) {
  const CommandResult r =
      mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/megatron-train.log") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // 4120.5, 1012.0 and 1008.4 ms: the median leaves the first (warm-up) step out.
  EXPECT_NEAR(json::parse(r.out).at("measured_step_time_s").get<double>(), 1.012, 1e-12);
}

// A log knows the step time, the throughput and the memory it prints, and nothing of devices or idle
// time: the comparison shows those three, the two peaks named for what they are.
TEST_F(CompareFrameworkRun, AStepLogShowsOnlyWhatALogKnows) {
  const std::string log = repo("tests/data/kineto/megatron-train-memory.log");
  const CommandResult r = mpsim("compare " + predicted_.string() + " " + log + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  EXPECT_EQ(c.at("measured_kind"), "step log");
  EXPECT_NEAR(c.at("measured_step_time_s").get<double>(), 1.02, 1e-12);  // median of 3.9, 1.0, 1.02 s
  EXPECT_EQ(c.at("measured_steps"), 3);
  EXPECT_NEAR(c.at("tflops_per_gpu").at("measured").get<double>(), 1.4, 1e-12);  // median of 0.4, 1.5, 1.4
  const json& memory = c.at("memory");
  // The larger of the two ranks' max allocated (256.5 MB of 2^20 bytes) with that line's max reserved.
  EXPECT_EQ(memory.at("measured_max_allocated_bytes").get<std::int64_t>(), 268959744);
  EXPECT_EQ(memory.at("measured_max_reserved_bytes").get<std::int64_t>(), 320LL << 20);
  EXPECT_EQ(memory.at("measured_rank"), 1);
  std::ifstream trace(predicted_);
  const json prediction = json::parse(trace)["mpsim"];
  EXPECT_EQ(memory.at("predicted_peak_bytes"), prediction.at("peak_memory_bytes"));
  const double peak = prediction.at("peak_memory_bytes").get<double>();
  EXPECT_NEAR(memory.at("error").get<double>(), std::abs(peak - 268959744.0) / 268959744.0, 1e-12);
  // Rank 1 is node0/gpu1 of the prediction (two GPUs a node): its peak less its runtime part against max
  // allocated, its whole peak against max reserved, signed.
  EXPECT_EQ(memory.at("measured_rank_device"), "node0/gpu1");
  const json& gpu1 = prediction.at("devices").at(1);
  ASSERT_EQ(gpu1.at("id"), "node0/gpu1");
  const auto gpu1_peak = gpu1.at("peak_memory_bytes").get<std::int64_t>();
  const auto gpu1_tensors = gpu1_peak - gpu1.at("memory").at("reserved").get<std::int64_t>();
  EXPECT_EQ(memory.at("predicted_rank_allocated_bytes").get<std::int64_t>(), gpu1_tensors);
  EXPECT_NEAR(memory.at("allocated_error").get<double>(), static_cast<double>(gpu1_tensors) / 268959744.0 - 1, 1e-12);
  EXPECT_EQ(memory.at("predicted_rank_peak_bytes").get<std::int64_t>(), gpu1_peak);
  EXPECT_NEAR(memory.at("reserved_error").get<double>(), static_cast<double>(gpu1_peak) / (320LL << 20) - 1, 1e-12);
  for (const char* unknown : {"devices", "stages", "per_kind", "per_op", "measured_bubble_fraction",
                              "predicted_bubble_fraction"}) {
    EXPECT_FALSE(c.contains(unknown)) << unknown;
  }

  const CommandResult text = mpsim("compare " + predicted_.string() + " " + log);
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("step time (median of 3 steps)"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("TFLOP/s per GPU"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("memory of rank 1 (node0/gpu1): tensors / max allocated"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("its whole peak / max reserved"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("\nidle "), std::string::npos) << text.out;  // no idle row, measured or predicted
  EXPECT_EQ(text.out.find("busy meas"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("node0/gpu0"), std::string::npos) << text.out;

  // A log with step times only: the throughput and memory are absent, and named as not in the log.
  const CommandResult bare = mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/megatron-train.log"));
  ASSERT_EQ(bare.exit_code, 0) << bare.err;
  EXPECT_NE(bare.out.find("Not in the log: throughput"), std::string::npos) << bare.out;
  const json bare_json =
      json::parse(mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/megatron-train.log") + " --json").out);
  EXPECT_FALSE(bare_json.contains("memory"));
  EXPECT_FALSE(bare_json.contains("tflops_per_gpu"));
}

// Megatron-Bridge (and NeMo 2) log memory in GB of 10^9 bytes under its own keys, a line per rank and
// report: the largest mem-max-allocated-gigabytes over them (rank 1's after two iterations, 0.262 GB)
// with its line's mem-max-reserved-gigabytes.
TEST_F(CompareFrameworkRun, MegatronBridgeMemoryLinesAreRead) {
  const CommandResult r =
      mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/megatron-bridge-train-memory.log") + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  EXPECT_NEAR(c.at("measured_step_time_s").get<double>(), 1.03, 1e-12);  // median of 4.1, 1.01, 1.03 s
  const json& memory = c.at("memory");
  EXPECT_EQ(memory.at("measured_max_allocated_bytes").get<std::int64_t>(), 262000000);
  EXPECT_EQ(memory.at("measured_max_reserved_bytes").get<std::int64_t>(), 320000000);
  EXPECT_EQ(memory.at("measured_rank"), 1);
  EXPECT_EQ(memory.at("measured_rank_device"), "node0/gpu1");
}

/// The test's Kineto trace of `rank` with CUDA memory events added: {ts in microseconds, device type,
/// total allocated, total reserved} each.
fs::path with_memory_events(int rank, const std::vector<std::array<std::int64_t, 4>>& events) {
  std::ifstream in(repo("tests/data/kineto/rank" + std::to_string(rank) + ".pt.trace.json"));
  json trace = json::parse(in);
  for (const auto& [ts, device_type, allocated, reserved] : events) {
    trace["traceEvents"].push_back({{"ph", "i"}, {"cat", "cpu_instant_event"}, {"s", "t"}, {"name", "[memory]"},
                                    {"pid", 4100 + rank}, {"tid", 4100 + rank}, {"ts", static_cast<double>(ts)},
                                    {"args", {{"Total Reserved", reserved}, {"Total Allocated", allocated}, {"Bytes", 512},
                                              {"Addr", 1}, {"Device Id", rank}, {"Device Type", device_type}}}});
  }
  const fs::path path = scratch() / ("memory-rank" + std::to_string(rank) + ".pt.trace.json");
  std::ofstream(path) << trace.dump();
  return path;
}

// With profile_memory=True a profiler trace has the allocator's totals after each allocation and free:
// each rank's largest inside its profiled steps (1 to 23 ms), CUDA's alone (Device Type 1), against its
// GPU's prediction as the step log's memory is.
TEST_F(CompareFrameworkRun, ProfilerMemoryEventsGiveEachRanksAllocatorPeaks) {
  constexpr std::int64_t kMiB = 1 << 20;
  const fs::path rank0 = with_memory_events(
      0, {{2000, 1, 100 * kMiB, 300 * kMiB}, {5000, 1, 150 * kMiB, 300 * kMiB}, {6000, 1, 90 * kMiB, 320 * kMiB},
          {7000, 0, 900 * kMiB, 900 * kMiB},     // the CPU's: not a GPU's
          {500, 1, 700 * kMiB, 800 * kMiB}});    // before the first step
  const fs::path rank1 = with_memory_events(1, {{12000, 1, 200 * kMiB, 256 * kMiB}});
  const CommandResult r = mpsim("compare " + predicted_.string() + " " + rank0.string() + " " + rank1.string() + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json c = json::parse(r.out);
  const json& memory = c.at("memory_by_rank");
  ASSERT_EQ(memory.size(), 2u) << memory.dump(2);
  EXPECT_EQ(memory[0].at("rank"), 0);
  EXPECT_EQ(memory[0].at("measured_max_allocated_bytes").get<std::int64_t>(), 150 * kMiB);
  EXPECT_EQ(memory[0].at("measured_max_reserved_bytes").get<std::int64_t>(), 320 * kMiB);
  EXPECT_EQ(memory[1].at("measured_max_allocated_bytes").get<std::int64_t>(), 200 * kMiB);
  std::ifstream trace(predicted_);
  const json prediction = json::parse(trace)["mpsim"];
  for (int rank = 0; rank < 2; ++rank) {
    const json& gpu = prediction.at("devices").at(rank);
    EXPECT_EQ(memory[rank].at("measured_rank_device"), gpu.at("id"));
    const auto tensors = gpu.at("peak_memory_bytes").get<std::int64_t>() - gpu.at("memory").at("reserved").get<std::int64_t>();
    EXPECT_EQ(memory[rank].at("predicted_rank_allocated_bytes").get<std::int64_t>(), tensors);
    EXPECT_NEAR(memory[rank].at("allocated_error").get<double>(),
                static_cast<double>(tensors) / memory[rank].at("measured_max_allocated_bytes").get<double>() - 1, 1e-12);
  }
  const CommandResult text = mpsim("compare " + predicted_.string() + " " + rank0.string() + " " + rank1.string());
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Memory by rank"), std::string::npos) << text.out;
  // The traces without memory events give none.
  const json plain = json::parse(mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/rank0.pt.trace.json") +
                                       " " + repo("tests/data/kineto/rank1.pt.trace.json") + " --json").out);
  EXPECT_FALSE(plain.contains("memory_by_rank"));
}

TEST_F(CompareFrameworkRun, BadFrameworkInputIsOneLineNamingTheFile) {
  const fs::path no_steps = scratch() / "no-steps.pt.trace.json";
  std::ofstream(no_steps) << R"({"schemaVersion": 1, "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}]})";
  const CommandResult r = mpsim("compare " + predicted_.string() + " " + no_steps.string());
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find(no_steps.string()), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("ProfilerStep"), std::string::npos) << r.err;
  const CommandResult twice = mpsim("compare " + predicted_.string() + " " + repo("tests/data/kineto/rank0.pt.trace.json") +
                                    " " + repo("tests/data/kineto/rank0.pt.trace.json"));
  EXPECT_EQ(twice.exit_code, 2);
  EXPECT_NE(twice.err.find("rank 0"), std::string::npos) << twice.err;
  // A memory event whose total is not a byte count.
  std::ifstream in(repo("tests/data/kineto/rank0.pt.trace.json"));
  json broken = json::parse(in);
  broken["traceEvents"].push_back({{"ph", "i"}, {"name", "[memory]"}, {"ts", 2000.0},
                                   {"args", {{"Device Type", 1}, {"Total Allocated", "lots"}, {"Total Reserved", 1}}}});
  const fs::path bad_memory = scratch() / "bad-memory.pt.trace.json";
  std::ofstream(bad_memory) << broken.dump();
  const CommandResult memory = mpsim("compare " + predicted_.string() + " " + bad_memory.string());
  EXPECT_EQ(memory.exit_code, 2);
  EXPECT_NE(memory.err.find(bad_memory.string()), std::string::npos) << memory.err;
  EXPECT_NE(memory.err.find("\"Total Allocated\"] is not a byte count"), std::string::npos) << memory.err;
}

}  // namespace
