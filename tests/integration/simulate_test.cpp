// mpsim simulate end to end: the report (docs/simulator.md), what-ifs with --set and --sweep, the
// Chrome trace, determinism, and bad overrides.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/core/gzip.h"
#include "tests/support/run_mpsim.h"

namespace {

using mpsim::testing::CommandResult;
using mpsim::testing::repo;

CommandResult mpsim(const std::string& args) { return mpsim::testing::run_mpsim(args); }
std::filesystem::path scratch() { return mpsim::testing::scratch("simulate"); }


namespace fs = std::filesystem;
using nlohmann::json;

/// Removes the scratch folder when the tests of this process are done.
class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(fs::temp_directory_path() / ("mpsim-simulate-" + std::to_string(::getpid())), ignored);
  }
};
[[maybe_unused]] const auto* const remove_scratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// `simulate` on the README's example: GPT-3 13B on four p4d.24xlarge, TP 8 x PP 2 x DP 2.
std::string simulate(const std::string& extra = "", const std::string& topology = repo("topologies/4x-p4d.yaml")) {
  return "simulate --topology " + topology + " --model " + repo("configs/models/gpt3-13b.yaml") + " --plan " +
         repo("configs/plans/gpt3-13b-4x-p4d.yaml") + (extra.empty() ? "" : " " + extra);
}

/// Runs a simulate command with --json and parses its report; fails the test on a bad run.
json report(const std::string& extra = "", const std::string& topology = repo("topologies/4x-p4d.yaml")) {
  const CommandResult r = mpsim(simulate(extra + " --json", topology));
  EXPECT_EQ(r.exit_code, 0) << extra << "\n" << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  if (r.exit_code != 0) return json::object();
  return json::parse(r.out);
}

int lines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

/// Bad input: exit code 2, nothing on stdout, one stderr line that starts with `prefix`.
void expect_bad_input(const std::string& extra, const std::string& prefix, const std::string& contains = "") {
  const CommandResult r = mpsim(simulate(extra + " --json"));
  EXPECT_EQ(r.exit_code, 2) << extra << "\n" << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << extra << "\n" << r.out;
  EXPECT_EQ(lines(r.err), 1) << extra << "\n" << r.err;
  EXPECT_EQ(r.err.rfind("mpsim: error: " + prefix, 0), 0u) << extra << "\n" << r.err;
  if (!contains.empty()) {
    EXPECT_NE(r.err.find(contains), std::string::npos) << extra << "\n" << r.err;
  }
}

/// Equal JSON, numbers within a relative 1e-9.
bool near_equal(const json& a, const json& b, std::string& where, const std::string& path = "") {
  if (a.is_number() && b.is_number()) {
    const double x = a.get<double>();
    const double y = b.get<double>();
    if (std::abs(x - y) <= 1e-9 * std::max({1.0, std::abs(x), std::abs(y)})) return true;
    where = path + ": " + a.dump() + " vs " + b.dump();
    return false;
  }
  if (a.type() != b.type()) {
    where = path + ": " + a.dump() + " vs " + b.dump();
    return false;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) {
      where = path + ": different keys";
      return false;
    }
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) {
        where = path + "." + it.key() + " missing";
        return false;
      }
      if (!near_equal(it.value(), b[it.key()], where, path + "." + it.key())) return false;
    }
    return true;
  }
  if (a.is_array()) {
    if (a.size() != b.size()) {
      where = path + ": " + std::to_string(a.size()) + " vs " + std::to_string(b.size()) + " elements";
      return false;
    }
    for (std::size_t i = 0; i < a.size(); ++i) {
      if (!near_equal(a[i], b[i], where, path + "[" + std::to_string(i) + "]")) return false;
    }
    return true;
  }
  if (a != b) where = path + ": " + a.dump() + " vs " + b.dump();
  return a == b;
}

double step_time(const json& r) { return r.value("step_time_s", -1.0); }

TEST(Simulate, JsonReportContract) {
  const json r = report();
  ASSERT_TRUE(r.is_object());
  for (const char* key : {"step_time_s", "bubble_fraction", "tflops_per_gpu", "mfu", "devices", "links", "plan"}) {
    ASSERT_TRUE(r.contains(key)) << key;
  }
  ASSERT_TRUE(r["step_time_s"].is_number());
  EXPECT_GT(r["step_time_s"].get<double>(), 0);
  ASSERT_TRUE(r["bubble_fraction"].is_number());
  EXPECT_GE(r["bubble_fraction"].get<double>(), 0);
  EXPECT_LE(r["bubble_fraction"].get<double>(), 1);
  ASSERT_TRUE(r["tflops_per_gpu"].is_number());
  EXPECT_GT(r["tflops_per_gpu"].get<double>(), 0);
  // An A100 peaks at 312 TFLOP/s in bf16: model FLOPs per GPU cannot exceed it.
  EXPECT_LT(r["tflops_per_gpu"].get<double>(), 312);
  ASSERT_TRUE(r["mfu"].is_number());
  EXPECT_GT(r["mfu"].get<double>(), 0);
  EXPECT_LT(r["mfu"].get<double>(), 1);
  EXPECT_NEAR(r["mfu"].get<double>(), r["tflops_per_gpu"].get<double>() / 312, 1e-6);

  ASSERT_TRUE(r["devices"].is_array());
  ASSERT_EQ(r["devices"].size(), 32u);
  std::set<std::string> ids;
  std::map<int, int> per_stage;
  const std::regex gpu_name(R"(node[0-3]/gpu[0-7])");
  for (const auto& d : r["devices"]) {
    for (const char* key : {"id", "stage", "busy_s", "idle_s", "bubble_fraction", "peak_memory_bytes", "oom"}) {
      ASSERT_TRUE(d.contains(key)) << key << " in " << d.dump();
    }
    ASSERT_TRUE(d["id"].is_string());
    EXPECT_TRUE(std::regex_match(d["id"].get<std::string>(), gpu_name)) << d["id"];
    ids.insert(d["id"].get<std::string>());
    ASSERT_TRUE(d["stage"].is_number_integer());
    ++per_stage[d["stage"].get<int>()];
    EXPECT_TRUE(d["busy_s"].is_number());
    EXPECT_TRUE(d["idle_s"].is_number());
    EXPECT_TRUE(d["bubble_fraction"].is_number());
    EXPECT_TRUE(d["peak_memory_bytes"].is_number_integer());
    EXPECT_GT(d["peak_memory_bytes"].get<std::int64_t>(), 0);
    EXPECT_TRUE(d["oom"].is_boolean());
    EXPECT_FALSE(d["oom"].get<bool>());  // 13B over 16-way model parallelism fits in 40 GB
    EXPECT_GT(d["busy_s"].get<double>(), 0);
    EXPECT_GE(d["idle_s"].get<double>(), 0);
  }
  EXPECT_EQ(ids.size(), 32u);  // every GPU once
  EXPECT_EQ(per_stage, (std::map<int, int>{{0, 16}, {1, 16}}));

  ASSERT_TRUE(r["links"].is_array());
  EXPECT_FALSE(r["links"].empty());  // pipeline sends and data-parallel reductions cross links
  for (const auto& l : r["links"]) {
    ASSERT_TRUE(l.contains("id") && l.contains("bytes") && l.contains("busy_s")) << l.dump();
    EXPECT_TRUE(l["id"].is_string());
    EXPECT_TRUE(l["bytes"].is_number_integer());
    EXPECT_GE(l["bytes"].get<std::int64_t>(), 0);
    EXPECT_TRUE(l["busy_s"].is_number());
    EXPECT_GE(l["busy_s"].get<double>(), 0);
    EXPECT_LE(l["busy_s"].get<double>(), r["step_time_s"].get<double>() * (1 + 1e-9));
  }

  const json& p = r["plan"];
  ASSERT_TRUE(p.is_object());
  // In the plan file's schema (docs/formats.md, "Plan").
  EXPECT_EQ(p["parallelism"]["tensor"], 8);
  EXPECT_EQ(p["parallelism"]["pipeline"], 2);
  EXPECT_EQ(p["parallelism"]["data"], 2);
  EXPECT_EQ(p["parallelism"]["virtual_stages"], 1);
  EXPECT_EQ(p["batch"]["microbatches"], 128);  // global 256 / (micro 1 x data 2)
  EXPECT_EQ(p["batch"]["micro"], 1);
  EXPECT_EQ(p["schedule"], "1f1b");
}

TEST(Simulate, JsonKeysInInterfaceOrder) {
  const CommandResult r = mpsim(simulate("--json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::ordered_json::parse(r.out);
  std::vector<std::string> keys;
  for (const auto& [key, value] : j.items()) keys.push_back(key);
  std::size_t last = 0;
  for (const char* key : {"step_time_s", "bubble_fraction", "tflops_per_gpu", "mfu", "devices", "links", "plan"}) {
    const auto it = std::find(keys.begin(), keys.end(), key);
    ASSERT_NE(it, keys.end()) << key;
    EXPECT_GE(static_cast<std::size_t>(it - keys.begin()), last) << key;
    last = static_cast<std::size_t>(it - keys.begin());
  }
}

TEST(Simulate, BusyPlusIdleIsTheStep) {
  const json r = report();
  ASSERT_TRUE(r.contains("devices"));
  const double step = step_time(r);
  double idle = 0;
  for (const auto& d : r["devices"]) {
    const double busy = d["busy_s"].get<double>();
    const double idle_s = d["idle_s"].get<double>();
    EXPECT_NEAR(busy + idle_s, step, 1e-9) << d["id"];
    EXPECT_NEAR(d["bubble_fraction"].get<double>(), idle_s / step, 1e-9) << d["id"];
    idle += idle_s;
  }
  // The step's bubble fraction is the idle share of all devices' time.
  EXPECT_NEAR(r["bubble_fraction"].get<double>(), idle / (step * static_cast<double>(r["devices"].size())), 1e-9);
}

TEST(Simulate, HalfTheMicrobatches) {
  const json base = report();
  const json half = report("--set plan.microbatches=64");
  ASSERT_TRUE(half.contains("plan"));
  EXPECT_EQ(half["plan"]["batch"]["microbatches"], 64);
  EXPECT_EQ(half["plan"]["batch"]["micro"], 1);  // keeps the microbatch size...
  ASSERT_TRUE(half["plan"]["batch"].contains("global"));
  EXPECT_EQ(half["plan"]["batch"]["global"].get<int>() * 2, base["plan"]["batch"]["global"].get<int>());  // ...halves the batch
  EXPECT_EQ(base["plan"]["batch"]["global"], 256);
  EXPECT_NE(step_time(half), step_time(base));
  EXPECT_LT(step_time(half), step_time(base));  // half the work
  EXPECT_GT(step_time(half), step_time(base) / 2);  // the bubble does not shrink with it
  // The same what-if spelled as the global batch.
  std::string where;
  EXPECT_TRUE(near_equal(report("--set plan.global_batch=128"), half, where)) << where;
}

TEST(Simulate, MicroBatchSizeKeepsTheGlobalBatch) {
  const json r = report("--set plan.micro_batch=2");
  ASSERT_TRUE(r.contains("plan"));
  EXPECT_EQ(r["plan"]["batch"]["micro"], 2);
  EXPECT_EQ(r["plan"]["batch"]["microbatches"], 64);
  EXPECT_EQ(r["plan"]["batch"]["global"], 256);
}

TEST(Simulate, LaterSetWins) {
  const json r = report("--set plan.microbatches=16 --set plan.microbatches=32");
  ASSERT_TRUE(r.contains("plan"));
  EXPECT_EQ(r["plan"]["batch"]["microbatches"], 32);
}

TEST(Simulate, FullPathAndShorthandAgree) {
  std::string where;
  EXPECT_TRUE(near_equal(report("--set plan.batch.global=128"), report("--set plan.microbatches=64"), where)) << where;
  EXPECT_TRUE(near_equal(report("--set plan.parallelism.virtual_stages=2 --set plan.schedule=interleaved-1f1b"),
                         report("--set plan.virtual_stages=2 --set plan.schedule=interleaved-1f1b"), where))
      << where;
}

TEST(Simulate, SlowerNicsMakeTheStepSlower) {
  const json base = report();
  // 4x-p4d.yaml takes its node from p4d.24xlarge.yaml (node_from): topology.node.* edits that node.
  const json slow = report("--set 'topology.node.nics.bandwidth=25 Gb/s'");
  EXPECT_GT(step_time(slow), step_time(base) * (1 + 1e-6));
  // Every GPU's own compute is unchanged; only waiting grows.
  ASSERT_EQ(slow["devices"].size(), base["devices"].size());
  // Never faster, whatever the bandwidth below the shipped 100 Gb/s.
  double previous = step_time(base);
  for (const char* bandwidth : {"50 Gb/s", "25 Gb/s", "10 Gb/s"}) {
    const json r = report(std::string("--set 'topology.node.nics.bandwidth=") + bandwidth + "'");
    EXPECT_GE(step_time(r), previous * (1 - 1e-12)) << bandwidth;
    previous = step_time(r);
  }
  // Faster NICs never make it slower.
  EXPECT_LE(step_time(report("--set 'topology.node.nics.bandwidth=400 Gb/s'")), step_time(base) * (1 + 1e-12));
}

TEST(Simulate, ShortFormTopologyPathsArePrefixed) {
  const fs::path topology = scratch() / "short-form.yaml";
  std::ofstream(topology) << "cluster:\n"
                             "  nodes: 4\n"
                             "  gpus_per_node: 8\n"
                             "  gpu: a100-40gb\n"
                             "  intra_node: { kind: nvswitch, bandwidth: \"300 GB/s\", latency: \"2 us\" }\n"
                             "  inter_node: { kind: infiniband, bandwidth: \"100 Gb/s\", latency: \"5 us\", "
                             "nics_per_node: 4 }\n";
  const json base = report("", topology.string());
  const json short_path = report("--set 'topology.inter_node.bandwidth=25 Gb/s'", topology.string());
  const json full_path = report("--set 'topology.cluster.inter_node.bandwidth=25 Gb/s'", topology.string());
  EXPECT_GT(step_time(short_path), step_time(base));
  std::string where;
  EXPECT_TRUE(near_equal(short_path, full_path, where)) << where;
  // An error in the overridden value names the flag, with the full field path.
  const CommandResult r = mpsim(simulate("--set topology.inter_node.bandwidth=fast", topology.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("mpsim: error: --set topology.inter_node.bandwidth=fast: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("cluster.inter_node.bandwidth"), std::string::npos) << r.err;
  fs::remove(topology);
}

TEST(Simulate, GpuKindFieldsTakeSet) {
  // One GPU, one layer of GEMM FLOPs and no parameters: the step is the FLOPs at peak x matmul_efficiency,
  // so halving the efficiency doubles it.
  const fs::path topology = scratch() / "one-h100.yaml";
  std::ofstream(topology) << "cluster: { gpus_per_node: 1, gpu: h100-sxm }\n";
  const fs::path model = scratch() / "gemm-only.yaml";
  std::ofstream(model) << "model:\n  name: gemm-only\n  dtype: bf16\n  layers:\n"
                          "    - { name: gemm, forward_flops: 2000000000000000, backward_flops: 4000000000000000 }\n";
  const fs::path plan = scratch() / "one-gpu.yaml";
  std::ofstream(plan) << "parallelism: { tensor: 1, pipeline: 1, data: 1 }\nbatch: { global: 1, micro: 1 }\n";
  const auto step_at = [&](const std::string& set) {
    const CommandResult r = mpsim("simulate --topology " + topology.string() + " --model " + model.string() +
                                  " --plan " + plan.string() + " --json " + set);
    EXPECT_EQ(r.exit_code, 0) << set << "\n" << r.err;
    return r.exit_code == 0 ? step_time(json::parse(r.out)) : 0.0;
  };
  const double at_half = step_at("--set topology.gpu.matmul_efficiency=0.5");
  const double at_quarter = step_at("--set topology.cluster.gpu.matmul_efficiency=0.25");
  EXPECT_NEAR(at_quarter / at_half, 2.0, 0.01) << at_half << " s, " << at_quarter << " s";
  // The built-in H100's own efficiency lies between: the override changed the kind, not a copy beside it.
  const double builtin = step_at("");
  EXPECT_GT(builtin, 0.0);
  EXPECT_LT(builtin, at_half);

  // Through node_from (4x-p4d.yaml takes p4d.24xlarge.yaml's node, which names a100-40gb), in
  // simulate and in plan.
  const json base = report();
  const json slow = report("--set topology.node.gpu.matmul_efficiency=0.33");
  EXPECT_GT(step_time(slow), step_time(base) * 1.2);
  const json less_memory = report("--set 'topology.node.gpu.memory=20 GiB'");
  ASSERT_FALSE(less_memory["devices"].empty());
  EXPECT_EQ(less_memory["devices"][0]["memory_capacity_bytes"].get<std::int64_t>(), 20LL << 30);

  // An unknown field of a GPU kind is the one-line error that names it.
  expect_bad_input("--set topology.node.gpu.matmul_efficency=0.5", "--set topology.node.gpu.matmul_efficency=0.5",
                   "did you mean 'matmul_efficiency'");
  expect_bad_input("--set topology.node.gpu.matmul_efficiency=3", "--set topology.node.gpu.matmul_efficiency=3",
                   "matmul_efficiency");
}

// Every error of a file that reading can step over comes in one run: two misspelt fields, each on its
// line under "N errors:". One misspelling alone stays the one-line error (malformed_inputs checks those),
// and so does a misspelt required field, whose absence then stops the reading (its case there).
TEST(Simulate, TwoTyposOfAFileAreBothReported) {
  const fs::path topology = scratch() / "two-typos.yaml";
  std::ofstream(topology) << "cluster:\n"
                             "  nodes: 2\n"
                             "  gpus_per_node: 8\n"
                             "  gpu: a100-40gb\n"
                             "  intra_node: { kind: nvswitch, bandwidth: \"300 GB/s\", latncy: \"2 us\" }\n"
                             "  inter_node: { kind: infiniband, bandwidth: \"100 Gb/s\", nics_per_nod: 4 }\n";
  const CommandResult r = mpsim(simulate("", topology.string()));
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_EQ(lines(r.err), 3) << r.err;
  EXPECT_EQ(r.err.rfind("mpsim: error: " + topology.string() + ": 2 errors:\n", 0), 0u) << r.err;
  EXPECT_NE(r.err.find("\n  " + topology.string() + ":5:56: unknown field 'latncy'; did you mean 'latency'?"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("\n  " + topology.string() + ":6:58: unknown field 'nics_per_nod'; did you mean 'nics_per_node'?"),
            std::string::npos)
      << r.err;
}

TEST(Simulate, ModelOverride) {
  const json base = report();
  const json shallow = report("--set model.model.layers=20");
  EXPECT_LT(step_time(shallow), step_time(base));
  EXPECT_GT(step_time(shallow), 0);
}

TEST(Simulate, SweepJson) {
  const CommandResult r = mpsim(simulate("--sweep plan.microbatches=16,32,64 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["sweep"], "plan.microbatches");
  ASSERT_TRUE(j["runs"].is_array());
  ASSERT_EQ(j["runs"].size(), 3u);
  const std::vector<std::string> values = {"16", "32", "64"};
  double previous = 0;
  for (std::size_t i = 0; i < 3; ++i) {
    const json& run = j["runs"][i];
    EXPECT_EQ(run["value"], values[i]);
    ASSERT_TRUE(run["report"].is_object());
    EXPECT_EQ(run["report"]["plan"]["batch"]["microbatches"], std::stoi(values[i]));
    EXPECT_GT(step_time(run["report"]), previous) << values[i];
    previous = step_time(run["report"]);
    // A sweep run is the same as the single run with --set.
    std::string where;
    EXPECT_TRUE(near_equal(run["report"], report("--set plan.microbatches=" + values[i]), where)) << where;
  }
}

TEST(Simulate, SweepTable) {
  const CommandResult r = mpsim(simulate("--sweep plan.microbatches=16,32,64"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_FALSE(json::accept(r.out)) << r.out;
  std::istringstream in(r.out);
  std::vector<std::string> rows;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) rows.push_back(line);
  }
  ASSERT_EQ(rows.size(), 4u) << r.out;  // a header and one row per value
  EXPECT_NE(rows[0].find("plan.microbatches"), std::string::npos) << rows[0];
  EXPECT_NE(rows[0].find("step time"), std::string::npos) << rows[0];
  EXPECT_EQ(rows[1].rfind("16", 0), 0u) << rows[1];
  EXPECT_EQ(rows[2].rfind("32", 0), 0u) << rows[2];
  EXPECT_EQ(rows[3].rfind("64", 0), 0u) << rows[3];
}

/// A quantity as the human report prints it ("9.62 s", "701 ms", "13.9 GiB", "44.8%") equals `expected`
/// (in seconds, bytes or a fraction) rounded to the digits printed: the text cannot drift from the JSON.
void expect_printed(const std::string& printed, double expected, const std::string& what) {
  static const std::map<std::string, double> kUnit{{"s", 1},      {"ms", 1e-3},           {"us", 1e-6},
                                                   {"ns", 1e-9},  {"B", 1},               {"KiB", 1024.0},
                                                   {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0},
                                                   {"%", 0.01},   {"TFLOP/s", 1}};
  std::smatch m;
  ASSERT_TRUE(std::regex_match(printed, m, std::regex(R"(([0-9]+)(?:\.([0-9]+))? ?(s|ms|us|ns|B|KiB|MiB|GiB|TiB|%|TFLOP/s))")))
      << what << ": '" << printed << "'";
  const int decimals = static_cast<int>(m[2].length());
  const double in_unit = expected / kUnit.at(m[3].str());
  char rounded[64];
  std::snprintf(rounded, sizeof rounded, "%.*f", decimals, in_unit);
  const std::string digits = m[2].matched ? m[1].str() + "." + m[2].str() : m[1].str();
  EXPECT_EQ(digits, rounded) << what << ": printed '" << printed << "', the JSON has " << expected;
}

/// The human report of `extra` and its --json report: every number the text prints (headline, the
/// row of each stage, the busiest links) is the JSON's, rounded as printed, and the header names every
/// parallel degree above one.
void expect_text_matches_json(const std::string& extra) {
  const CommandResult r = mpsim(simulate(extra));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  EXPECT_FALSE(json::accept(r.out)) << r.out;
  const json j = report(extra);
  ASSERT_FALSE(j.empty());
  const std::string& text = r.out;
  const auto capture = [&](const std::string& pattern) {
    std::smatch m;
    EXPECT_TRUE(std::regex_search(text, m, std::regex(pattern))) << pattern << "\n" << text;
    std::vector<std::string> groups;
    for (std::size_t i = 1; i < m.size(); ++i) groups.push_back(m[i].str());
    return groups;
  };
  const std::string quantity = R"(([0-9.]+ ?(?:s|ms|us|ns|B|KiB|MiB|GiB|TiB|%|TFLOP/s)))";
  const json& degrees = j["plan"]["parallelism"];
  for (const auto& [axis, label] : {std::pair{"tensor", "TP"}, {"context", "CP"}, {"pipeline", "PP"},
                                    {"data", "DP"}, {"expert", "EP"}}) {
    if (degrees[axis].get<int>() > 1) {
      EXPECT_NE(text.find(std::string(label) + " " + std::to_string(degrees[axis].get<int>())), std::string::npos)
          << axis << "\n" << text;
    }
  }
  auto step = capture(R"(step time +)" + quantity);
  if (step.size() == 1) expect_printed(step[0], j["step_time_s"], "step time");
  // The band (sim/calibration/prediction_band.h), and what it rests on, as the JSON gives them.
  auto band = capture(R"(band +)" + quantity + " to " + quantity);
  if (band.size() == 2) {
    expect_printed(band[0], j["step_time_band_s"][0], "band low");
    expect_printed(band[1], j["step_time_band_s"][1], "band high");
  }
  EXPECT_NE(text.find(j["band_basis"].get<std::string>()), std::string::npos) << text;
  auto throughput = capture(R"(throughput +)" + quantity + R"( per GPU, MFU )" + quantity + R"( \()" + quantity);
  if (throughput.size() == 3) {
    expect_printed(throughput[0], j["tflops_per_gpu"], "TFLOP/s per GPU");
    expect_printed(throughput[1], j["mfu"], "MFU");
    expect_printed(throughput[2], j["hardware_tflops_per_gpu"], "executed TFLOP/s");
  }
  auto idle = capture(R"(idle +)" + quantity + R"( of all GPU time; pipeline bubble rate )" + quantity);
  if (idle.size() == 2) {
    expect_printed(idle[0], j["bubble_fraction"], "idle");
    expect_printed(idle[1], j["bubble_rate"], "bubble rate");
  }
  // Exposed communication the idle share does not show: its own line whenever there is any.
  if (j["communication_wait_fraction"].get<double>() > 0) {
    auto wait = capture(R"(comm wait +)" + quantity + " of all GPU time waiting on in-layer collectives");
    if (wait.size() == 1) expect_printed(wait[0], j["communication_wait_fraction"], "comm wait");
  } else {
    EXPECT_EQ(text.find("comm wait"), std::string::npos) << text;
  }
  std::map<std::string, json> device_by_id;
  std::map<int, int> devices_per_stage;
  for (const json& d : j["devices"]) {
    device_by_id[d["id"]] = d;
    ++devices_per_stage[d["stage"].get<int>()];
  }
  const auto worst = std::max_element(j["devices"].begin(), j["devices"].end(), [](const json& a, const json& b) {
    return a["peak_memory_bytes"].get<double>() < b["peak_memory_bytes"].get<double>();
  });
  auto peak = capture(R"(peak memory +)" + quantity + " of " + quantity + R"( on (\S+))");
  if (peak.size() == 3) {
    expect_printed(peak[0], (*worst)["peak_memory_bytes"], "peak memory");
    expect_printed(peak[1], (*worst)["memory_capacity_bytes"], "capacity");
    EXPECT_EQ(peak[2], (*worst)["id"]);
  }
  // The band around the largest peak (calibration::memory_band), as the JSON gives it.
  auto memory_band = capture(R"(memory band +)" + quantity + " to " + quantity);
  if (memory_band.size() == 2) {
    expect_printed(memory_band[0], j["peak_memory_band_bytes"][0], "memory band low");
    expect_printed(memory_band[1], j["peak_memory_band_bytes"][1], "memory band high");
  }
  EXPECT_LT(j["peak_memory_band_bytes"][0].get<double>(), (*worst)["peak_memory_bytes"].get<double>());
  EXPECT_GT(j["peak_memory_band_bytes"][1].get<double>(), (*worst)["peak_memory_bytes"].get<double>());
  // The planner's memory margin on the peak line, and whether the peak is within it, as the JSON says.
  const bool within_margin = j["within_memory_margin"].get<bool>();
  auto margin = capture(R"(peak memory .* on \S+ \()" + std::string(within_margin ? "within" : "fits") +
                        R"( the planner's )" + quantity + " memory margin");
  if (margin.size() == 1) expect_printed(margin[0], j["memory_margin"], "memory margin");
  // Stage rows: stage, first GPU, GPUs, busy, idle, idle share, peak memory.
  const std::regex stage_row("^(\\d+) +(\\S+) +(\\d+) +" + quantity + " +" + quantity + " +" + quantity + " +" +
                             quantity + "$");
  int stage_rows = 0;
  std::map<int, std::string> shown_by_stage;
  std::istringstream lines_in(text);
  for (std::string line; std::getline(lines_in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, stage_row)) continue;
    ++stage_rows;
    const int stage = std::stoi(m[1].str());
    ASSERT_TRUE(device_by_id.count(m[2].str())) << line;
    shown_by_stage[stage] = m[2].str();
    const json& d = device_by_id[m[2].str()];
    EXPECT_EQ(d["stage"].get<int>(), stage) << line;
    // Every GPU of the stage: the JSON lists each (no replica is folded in these small runs).
    EXPECT_EQ(std::stoi(m[3].str()), devices_per_stage[stage]) << line;
    expect_printed(m[4].str(), d["busy_s"], line);
    expect_printed(m[5].str(), d["idle_s"], line);
    expect_printed(m[6].str(), d["bubble_fraction"], line);
    expect_printed(m[7].str(), d["peak_memory_bytes"], line);
  }
  EXPECT_EQ(stage_rows, degrees["pipeline"].get<int>()) << text;
  // What each stage's peak holds: the JSON memory breakdown of the GPU its stage row names.
  const auto breakdown_at = text.find("Peak memory by stage:");
  ASSERT_NE(breakdown_at, std::string::npos) << text;
  const std::regex breakdown_row("^(\\d+) +" + quantity + " +" + quantity + " +" + quantity + " +" + quantity + " +" +
                                 quantity + "$");
  int breakdown_rows = 0;
  std::istringstream breakdown_in(text.substr(breakdown_at));
  for (std::string line; std::getline(breakdown_in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, breakdown_row)) continue;
    ++breakdown_rows;
    const json& memory = device_by_id[shown_by_stage[std::stoi(m[1].str())]]["memory"];
    int column = 2;
    for (const char* part : {"weights", "gradients", "optimizer", "activations", "reserved"}) {
      expect_printed(m[column++].str(), memory[part], line);
    }
  }
  EXPECT_EQ(breakdown_rows, degrees["pipeline"].get<int>()) << text;
  // Busiest links: each printed row's busy time and traffic are that link's.
  std::map<std::string, json> link_by_id;
  for (const json& l : j["links"]) link_by_id[l["id"]] = l;
  const std::regex link_row("^(\\S+) +" + quantity + " +" + quantity + "$");
  int link_rows = 0;
  std::istringstream links_in(text.substr(text.find("Busiest links:")));
  for (std::string line; std::getline(links_in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, link_row) || !link_by_id.count(m[1].str())) continue;
    ++link_rows;
    expect_printed(m[2].str(), link_by_id[m[1].str()]["busy_s"], line);
    expect_printed(m[3].str(), link_by_id[m[1].str()]["bytes"], line);
  }
  EXPECT_GT(link_rows, 0) << text;
}

TEST(Simulate, HumanReport) {
  expect_text_matches_json("");
  // Context parallelism: the header and the GPUs of a stage count the context degree too.
  expect_text_matches_json("--set plan.context=2 --set plan.data=1");
  // ZeRO-3 on a slow network: the parameter gathers hold the compute stream, and the report says so.
  expect_text_matches_json("--set plan.zero=3 --set topology.node.nics.bandwidth=\"25 Gb/s\"");
  // A peak of 38.8 GiB of 40: within the planner's memory margin, and the line says so.
  expect_text_matches_json("--set plan.batch.micro=16");
}

// Replicas on two kinds with uneven shares (docs/mixed-clusters.md, "Uneven batch shares"): the H100
// replica runs 178 microbatches on nodes 0 and 1, the A100 replica 78 on nodes 2 and 3. The report has a
// class per replica, each stage's figures those of the class's first GPU there, and the text a row per
// stage and class with the JSON's numbers.
TEST(Simulate, ReplicaClassesOnTwoKinds) {
  const std::string args = "simulate --topology " + repo("topologies/mixed-h100-a100.yaml") + " --model " +
                           repo("configs/models/gpt3-13b.yaml") + " --plan " +
                           repo("configs/plans/gpt3-13b-mixed-replicas.yaml");
  const CommandResult jr = mpsim(args + " --json");
  ASSERT_EQ(jr.exit_code, 0) << jr.err;
  const json j = json::parse(jr.out);
  std::map<std::string, json> device_by_id;
  for (const json& d : j["devices"]) device_by_id[d["id"]] = d;
  ASSERT_TRUE(j.contains("replica_classes"));
  const json& classes = j["replica_classes"];
  ASSERT_EQ(classes.size(), 2U);
  struct Expected {
    int replica, microbatches;
    std::string kind, node_a, node_b;  // the replica's nodes: stage 0 on the first, stage 1 on the second
  };
  const std::vector<Expected> expected{{0, 178, "h100-sxm", "node0/", "node1/"},
                                       {1, 78, "a100-80gb", "node2/", "node3/"}};
  for (std::size_t c = 0; c < 2; ++c) {
    const json& k = classes[c];
    EXPECT_EQ(k["replicas"], json::array({expected[c].replica}));
    EXPECT_EQ(k["microbatches"].get<int>(), expected[c].microbatches);
    ASSERT_EQ(k["stages"].size(), 2U);
    for (int s = 0; s < 2; ++s) {
      const json& stage = k["stages"][static_cast<std::size_t>(s)];
      EXPECT_EQ(stage["stage"].get<int>(), s);
      EXPECT_EQ(stage["gpu_kind"], expected[c].kind);
      EXPECT_EQ(stage["gpus"].get<int>(), 8);  // tensor 8, one replica a class
      const std::string id = stage["id"];
      EXPECT_EQ(id, (s == 0 ? expected[c].node_a : expected[c].node_b) + "gpu0");
      // The same figures as the GPU's own entry (which alone carries its memory timeline).
      json own = device_by_id.at(id);
      own.erase("memory_timeline");
      json shown = stage;
      shown.erase("gpu_kind");
      shown.erase("gpus");
      EXPECT_EQ(shown, own) << id;
      EXPECT_NEAR(stage["busy_s"].get<double>() + stage["idle_s"].get<double>(), j["step_time_s"].get<double>(), 1e-9);
    }
  }
  // The classes differ: the A100 replica's 78 microbatches take about as long as the H100's 178.
  EXPECT_NE(classes[0]["stages"][0]["busy_s"], classes[1]["stages"][0]["busy_s"]);

  const CommandResult tr = mpsim(args);
  ASSERT_EQ(tr.exit_code, 0) << tr.err;
  const std::string quantity = R"(([0-9.]+ ?(?:s|ms|us|ns|B|KiB|MiB|GiB|TiB|%)))";
  EXPECT_NE(tr.out.find("stage  replicas  microbatches  GPU kind"), std::string::npos) << tr.out;
  const std::regex row("^(\\d+) +(\\S+) +(\\d+) +(\\S+) +(\\S+) +(\\d+) +" + quantity + " +" + quantity + " +" +
                       quantity + " +" + quantity + "$");
  int rows = 0;
  std::istringstream in(tr.out);
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (!std::regex_match(line, m, row)) continue;
    const int stage = std::stoi(m[1].str());
    const std::size_t c = rows % 2;  // by stage, then by class
    EXPECT_EQ(stage, rows / 2) << line;
    const json& shown = classes[c]["stages"][static_cast<std::size_t>(stage)];
    EXPECT_EQ(m[2].str(), std::to_string(expected[c].replica)) << line;
    EXPECT_EQ(std::stoi(m[3].str()), expected[c].microbatches) << line;
    EXPECT_EQ(m[4].str(), expected[c].kind) << line;
    EXPECT_EQ(m[5].str(), shown["id"]) << line;
    EXPECT_EQ(std::stoi(m[6].str()), 8) << line;
    expect_printed(m[7].str(), shown["busy_s"], line);
    expect_printed(m[8].str(), shown["idle_s"], line);
    expect_printed(m[9].str(), shown["bubble_fraction"], line);
    expect_printed(m[10].str(), shown["peak_memory_bytes"], line);
    ++rows;
  }
  EXPECT_EQ(rows, 4) << tr.out;
}

// Replicas that run alike (the same count on the same kinds: here the pipeline spans the kinds, each
// replica's stage 0 on H100s) form one class: no replica_classes, and the stage table of one row a stage.
TEST(Simulate, ReplicasAlikeHaveNoClasses) {
  const json j = report("", repo("topologies/mixed-h100-a100.yaml"));
  ASSERT_FALSE(j.empty());
  EXPECT_FALSE(j.contains("replica_classes"));
  const CommandResult r = mpsim(simulate("", repo("topologies/mixed-h100-a100.yaml")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.find("replicas"), std::string::npos) << r.out;
  EXPECT_TRUE(std::regex_search(r.out, std::regex("\\nstage +first GPU +GPUs +busy"))) << r.out;
}

// Time the compute stream waits on in-layer collectives is exposed communication: ZeRO-3's parameter
// gathers on a network a sixteenth as fast wait for most of what the step grows by, and the idle share,
// which counts only a free stream, does not see them.
TEST(Simulate, ZeroThreeGatherWaitsAreExposedCommunication) {
  const json fast = report("--set plan.zero=3");
  const json slow = report("--set plan.zero=3 --set topology.node.nics.bandwidth=\"25 Gb/s\"");
  ASSERT_FALSE(fast.empty());
  ASSERT_FALSE(slow.empty());
  const double fast_step = fast["step_time_s"], slow_step = slow["step_time_s"];
  ASSERT_GT(slow_step, 1.2 * fast_step);
  const auto waits = [](const json& r) {
    double most = 0;
    for (const json& d : r["devices"]) most = std::max(most, d["communication_wait_s"].get<double>());
    return most;
  };
  // Every second the step grew by on the busiest device went into waiting on collectives (within 10 %),
  // and the share of all GPU time says as much.
  EXPECT_NEAR(waits(slow) - waits(fast), slow_step - fast_step, 0.1 * (slow_step - fast_step));
  EXPECT_GT(slow["communication_wait_fraction"].get<double>(), 0.5 * (slow_step - fast_step) / slow_step);
  EXPECT_LT(slow["bubble_fraction"].get<double>(), slow["communication_wait_fraction"].get<double>());
}

TEST(Simulate, TraceFile) {
  const fs::path trace = scratch() / "trace.json";
  fs::remove(trace);
  const CommandResult r = mpsim(simulate("--json --trace " + trace.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(fs::exists(trace));
  const json j = json::parse(read_file(trace));
  ASSERT_TRUE(j.contains("traceEvents"));
  ASSERT_TRUE(j["traceEvents"].is_array());
  ASSERT_TRUE(j.contains("mpsim"));
  // The embedded report is the --json report, and recording the timeline does not change it, except
  // that only the devices drawn in the trace (those with lanes: here the first GPU of each stage) keep
  // their memory timeline.
  json printed = json::parse(r.out);
  json plain = report();  // simulated without a trace
  std::size_t kept_timelines = 0;
  for (std::size_t d = 0; d < printed["devices"].size(); ++d) {
    if (j["mpsim"]["devices"][d].contains("memory_timeline")) {
      ++kept_timelines;
    } else {
      printed["devices"][d].erase("memory_timeline");
      plain["devices"][d].erase("memory_timeline");
    }
  }
  EXPECT_EQ(kept_timelines, 2u) << "one traced GPU per pipeline stage";
  EXPECT_EQ(j["mpsim"], printed);
  std::string where;
  EXPECT_TRUE(near_equal(j["mpsim"], plain, where)) << where;

  std::map<int, std::string> process_names;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::size_t x_events = 0;
  std::map<std::pair<int, std::string>, std::int64_t> counter_peaks;  // by (pid, counter name)
  std::map<std::string, int> per_cat;
  const double step_us = step_time(j["mpsim"]) * 1e6;
  const std::regex compute_name(R"([FBIW]\d+\.\d+)");
  for (const auto& e : j["traceEvents"]) {
    ASSERT_TRUE(e.contains("ph")) << e.dump();
    if (e["ph"] == "M") {
      if (e["name"] == "process_name") {
        EXPECT_EQ(process_names.count(e["pid"]), 0u) << "process named twice: " << e.dump();
        process_names[e["pid"]] = e["args"]["name"];
      }
      if (e["name"] == "thread_name") {
        const std::pair<int, int> key{e["pid"], e["tid"]};
        EXPECT_EQ(thread_names.count(key), 0u) << "thread named twice: " << e.dump();
        thread_names[key] = e["args"]["name"];
      }
      continue;
    }
    if (e["ph"] == "C") {
      // A traced GPU's memory: its report's timeline point by point, within the step.
      for (const char* key : {"name", "pid", "ts", "args"}) ASSERT_TRUE(e.contains(key)) << e.dump();
      EXPECT_TRUE(e["args"]["bytes"].is_number_integer()) << e.dump();
      EXPECT_LE(e["ts"].get<double>(), step_us + 1e-3) << e.dump();
      std::int64_t& peak = counter_peaks[{e["pid"].get<int>(), e["name"].get<std::string>()}];
      peak = std::max(peak, e["args"]["bytes"].get<std::int64_t>());
      continue;
    }
    ASSERT_EQ(e["ph"], "X") << e.dump();
    ++x_events;
    for (const char* key : {"name", "cat", "ts", "dur", "pid", "tid", "args"}) ASSERT_TRUE(e.contains(key)) << e.dump();
    for (const char* key : {"mb", "chunk", "stage", "bytes"}) ASSERT_TRUE(e["args"].contains(key)) << e.dump();
    EXPECT_TRUE(e["ts"].is_number());
    EXPECT_TRUE(e["dur"].is_number());
    EXPECT_GE(e["ts"].get<double>(), 0) << e.dump();
    EXPECT_GE(e["dur"].get<double>(), 0) << e.dump();
    EXPECT_LE(e["ts"].get<double>() + e["dur"].get<double>(), step_us + 1e-3) << e.dump();
    const std::string cat = e["cat"];
    ++per_cat[cat];
    if (cat == "forward" || cat == "backward") {
      const std::string name = e["name"];
      EXPECT_TRUE(std::regex_match(name, compute_name)) << name;
      EXPECT_EQ(name, std::string(cat == "forward" ? "F" : "B") + std::to_string(e["args"]["mb"].get<int>()) + "." +
                          std::to_string(e["args"]["chunk"].get<int>()));
      EXPECT_GE(e["args"]["mb"].get<int>(), 0);
      EXPECT_LT(e["args"]["mb"].get<int>(), 128);
      EXPECT_EQ(e["args"]["chunk"], 0);  // one chunk per stage without virtual stages
      EXPECT_GE(e["args"]["stage"].get<int>(), 0);
      EXPECT_LT(e["args"]["stage"].get<int>(), 2);
    }
  }
  EXPECT_GT(x_events, 0u);
  EXPECT_FALSE(process_names.empty());
  EXPECT_FALSE(thread_names.empty());
  for (const auto& [pid, name] : process_names) {
    EXPECT_TRUE(std::regex_match(name, std::regex(R"(node\d+|links|fabric.*)"))) << name;
  }
  // One memory counter per GPU with lanes (the first of each of the two stages), peaking at its peak.
  ASSERT_EQ(counter_peaks.size(), 2u);
  for (const auto& [key, peak] : counter_peaks) {
    const std::string id = process_names[key.first] + "/" + key.second.substr(0, key.second.find(' '));
    const auto device = std::find_if(j["mpsim"]["devices"].begin(), j["mpsim"]["devices"].end(),
                                     [&](const json& d) { return d["id"] == id; });
    ASSERT_NE(device, j["mpsim"]["devices"].end()) << id;
    EXPECT_EQ(peak, (*device)["peak_memory_bytes"].get<std::int64_t>()) << id;
  }
  // Every microbatch's forward and backward on each of the two pipeline stages, at least.
  EXPECT_GE(per_cat["forward"], 2 * 128);
  EXPECT_GE(per_cat["backward"], 2 * 128);
  // Every X event sits on a named thread of a named process.
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::pair<int, int> key{e["pid"], e["tid"]};
    EXPECT_EQ(thread_names.count(key), 1u) << e.dump();
    EXPECT_EQ(process_names.count(key.first), 1u) << e.dump();
  }
  fs::remove(trace);
}

// The README plan is TP 8 with sequence parallelism: its in-layer all-gathers and reduce-scatters are
// spans on each stage's "layer comm" lane (one of each per pass: 128 microbatches x forward and
// backward x 2 stages), and the NVSwitch links carry their traffic in the report.
TEST(Simulate, TensorParallelCollectivesAreSpansAndNvlinkTraffic) {
  const fs::path trace = scratch() / "tp8.json";
  const CommandResult r = mpsim(simulate("--trace " + trace.string()));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(read_file(trace));
  std::map<std::pair<int, int>, std::string> thread_names;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") thread_names[{e["pid"], e["tid"]}] = e["args"]["name"];
  }
  std::map<std::string, int> in_layer;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    const std::string& thread = thread_names[{e["pid"], e["tid"]}];
    if (thread.find("layer comm") == std::string::npos) continue;
    ++in_layer[e["cat"]];
    EXPECT_GT(e["dur"].get<double>(), 0) << e.dump();
    EXPECT_GE(e["args"]["op"].get<int>(), 0) << e.dump();
    EXPECT_GT(e["args"]["bytes"].get<std::int64_t>(), 0) << e.dump();
  }
  EXPECT_EQ(in_layer["allgather"], 128 * 2 * 2);
  EXPECT_EQ(in_layer["reducescatter"], 128 * 2 * 2);
  EXPECT_EQ(in_layer.size(), 2u);
  std::int64_t nvlink_bytes = 0;
  for (const auto& link : j["mpsim"]["links"]) {
    if (link["id"].get<std::string>().find("nvlink") != std::string::npos) nvlink_bytes += link["bytes"].get<std::int64_t>();
  }
  EXPECT_GT(nvlink_bytes, 0);
  // Overlapping the tensor communication with compute (Megatron's --tp-comm-overlap) can only help.
  EXPECT_LT(step_time(report("--set plan.overlap.tensor_comm=true")), step_time(j["mpsim"]));
  fs::remove(trace);
}

TEST(Simulate, Deterministic) {
  const fs::path a = scratch() / "a.json";
  const fs::path b = scratch() / "b.json";
  const CommandResult first = mpsim(simulate("--json --trace " + a.string()));
  const CommandResult second = mpsim(simulate("--json --trace " + b.string()));
  ASSERT_EQ(first.exit_code, 0) << first.err;
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_EQ(first.out, second.out);
  const std::string trace_a = read_file(a);
  EXPECT_FALSE(trace_a.empty());
  EXPECT_TRUE(trace_a == read_file(b)) << "trace files differ";
  const CommandResult sweep1 = mpsim(simulate("--sweep plan.microbatches=16,32 --json"));
  const CommandResult sweep2 = mpsim(simulate("--sweep plan.microbatches=16,32 --json"));
  EXPECT_EQ(sweep1.out, sweep2.out);
  fs::remove(a);
  fs::remove(b);
}

TEST(Simulate, GzTraceIsTheSameTraceGzipped) {
  const fs::path plain = scratch() / "same.json";
  const fs::path gz = scratch() / "same.json.gz";
  const CommandResult a = mpsim(simulate("--trace " + plain.string()));
  const CommandResult b = mpsim(simulate("--trace " + gz.string()));
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  const std::string text = read_file(plain);
  const std::string compressed = read_file(gz);
  ASSERT_GE(compressed.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(compressed[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(compressed[1]), 0x8b);
  EXPECT_TRUE(mpsim::gunzip(compressed) == text) << "the .gz trace decompresses to other bytes than the .json";
  EXPECT_LT(compressed.size() * 3, text.size()) << compressed.size() << " vs " << text.size() << " bytes";
  // Byte for byte the same on a second run: no time stamp or file name in the gzip header.
  const fs::path again = scratch() / "again.json.gz";
  ASSERT_EQ(mpsim(simulate("--trace " + again.string())).exit_code, 0);
  EXPECT_TRUE(read_file(again) == compressed) << "gzip traces differ between runs";
  fs::remove(plain);
  fs::remove(gz);
  fs::remove(again);
}

TEST(Simulate, UnfoldGivesTheSameReport) {
  // The two data-parallel replicas are alike: simulating one for both changes nothing.
  std::string where;
  EXPECT_TRUE(near_equal(report("--unfold"), report(), where)) << where;
}

/// Writes `text` as a plan file in the scratch folder.
std::string plan_file(const std::string& name, const std::string& text) {
  const fs::path path = scratch() / name;
  std::ofstream(path) << text;
  return path.string();
}

// Megatron-Core's combined 1F1B (overlap.moe_expert_comm) on one stage: F0, then F(k+1) beside B(k),
// then B(m-1). Where the all-to-alls are shorter than the compute beside them, each of the m - 1
// pairs hides both its passes' all-to-alls but for the SMs NCCL's kernels hold meanwhile (16 of an
// H100's 132, so each slot still grows by 16/132 of its all-to-all): the step shortens by
// (m - 1) / m x (1 - 16/132) of the whole step's all-to-all time (Mixtral 8x7B, expert 8 on one DGX
// H100, 4 microbatches).
TEST(Simulate, CombinedOneFOneBHidesTheExpertAllToAllsOfEveryPair) {
  const auto run = [](bool overlap, const fs::path& trace) {
    const CommandResult r = mpsim(
        "simulate --topology " + repo("topologies/dgx-h100.yaml") + " --model " + repo("configs/models/mixtral-8x7b.yaml") +
        " --plan " + plan_file("moe-overlap.yaml",
                               "parallelism: { tensor: 1, pipeline: 1, data: 8, expert: 8 }\nbatch: { global: 32, micro: 1 }\n"
                               "zero: 1\nrecompute: selective\n") +
        (overlap ? " --set plan.overlap.moe_expert_comm=true" : "") +
        " --json --trace " + trace.string());
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.exit_code == 0 ? json::parse(r.out) : json::object();
  };
  const fs::path plain_trace = scratch() / "moe-plain.json";
  const fs::path paired_trace = scratch() / "moe-paired.json";
  const json plain = run(false, plain_trace);
  const json paired = run(true, paired_trace);
  // The whole step's all-to-all time on the first GPU, and its pairs.
  double all_to_all_ms = 0;
  std::map<std::string, int> compute;
  const json t = json::parse(read_file(paired_trace));
  for (const auto& e : t["traceEvents"]) {
    if (e["ph"] != "X" || e["pid"] != 1) continue;
    if (e["cat"] == "alltoall") all_to_all_ms += e["dur"].get<double>() / 1e3;
    if (e["cat"] == "forward" || e["cat"] == "backward" || e["cat"] == "forward-backward") ++compute[e["cat"]];
  }
  EXPECT_EQ(compute, (std::map<std::string, int>{{"backward", 1}, {"forward", 1}, {"forward-backward", 3}}));
  ASSERT_GT(all_to_all_ms, 0);
  const double saved_ms = (step_time(plain) - step_time(paired)) * 1e3;
  EXPECT_NEAR(saved_ms, all_to_all_ms * 3 / 4 * (1 - 16.0 / 132), 0.01) << "all-to-alls " << all_to_all_ms << " ms";
  // Megatron interleaves a pair's layers, so its backward frees what its forward stashes: one stage
  // holds one microbatch's activations, as without the overlap.
  EXPECT_EQ(paired["peak_memory_bytes"], plain["peak_memory_bytes"]);
}

// Every shipped cluster scales with --set topology.nodes=N (docs/simulator.md, "What-if"): a
// data-parallel plan whose data degree is derived fills 2 nodes of each, and the report has a device
// per GPU. A cluster of two GPU kinds (node_groups) keeps one node of each at N = 2, and its plan has
// a pipeline stage per node, since a stage runs on one kind (docs/mixed-clusters.md).
TEST(Simulate, EveryShippedTopologyScalesWithNodes) {
  // 144 = 2 x 72 (GB200 NVL72 racks) and a multiple of 2 x 8, so the derived data degree divides it.
  const std::string plan = plan_file("dp-derived.yaml", "parallelism: { tensor: 1, pipeline: 1 }\nbatch: { global: 144, micro: 1 }\n");
  const std::string staged =
      plan_file("pp-derived.yaml", "parallelism: { tensor: 1, pipeline: 2 }\nbatch: { global: 144, micro: 1 }\n");
  int checked = 0;
  for (const auto& entry : fs::directory_iterator(repo("topologies"))) {
    const std::string topology = entry.path().string();
    const CommandResult one = mpsim("topo show " + topology + " --json");
    ASSERT_EQ(one.exit_code, 0) << topology << "\n" << one.err;
    const json shown = json::parse(one.out);
    const int per_node = shown["gpus"].get<int>() / shown["nodes"].get<int>();
    const bool two_kinds = shown["gpu_kinds"].size() == 2;
    const CommandResult r = mpsim("simulate --topology " + topology + " --model " + repo("configs/models/cpu-gpt-tiny.yaml") +
                                  " --plan " + (two_kinds ? staged : plan) + " --set topology.nodes=2 --json");
    ASSERT_EQ(r.exit_code, 0) << topology << "\n" << r.err;
    const json j = json::parse(r.out);
    const int replicas = two_kinds ? per_node : 2 * per_node;
    EXPECT_EQ(j["devices"].size(), static_cast<std::size_t>(2 * per_node)) << topology;
    EXPECT_EQ(j["plan"]["parallelism"]["data"].get<int>(), replicas) << topology;
    EXPECT_EQ(j["plan"]["batch"]["microbatches"].get<int>(), 144 / replicas) << topology;
    ++checked;
  }
  EXPECT_GE(checked, 12);
}

// --gpus N takes the first N GPUs in node order: on 512 DGX H100 (4096 GPUs), 1024 GPUs are nodes 0-127, and
// the data degree a plan leaves out is 1024 / (tensor x pipeline).
TEST(Simulate, GpusUsesTheFirstGpus) {
  const std::string plan = plan_file("tp8-pp2.yaml", "parallelism: { tensor: 8, pipeline: 2 }\nbatch: { global: 512, micro: 1 }\n");
  const std::string args = "simulate --topology " + repo("topologies/512x-dgx-h100.yaml") + " --model " +
                           repo("configs/models/gpt3-1.3b.yaml") + " --plan " + plan;
  const CommandResult r = mpsim(args + " --gpus 1024 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["devices"].size(), 1024u);
  EXPECT_EQ(j["plan"]["parallelism"]["data"].get<int>(), 1024 / (8 * 2));
  EXPECT_EQ(j["plan"]["batch"]["microbatches"].get<int>(), 512 / (1024 / (8 * 2)));
  std::set<std::string> ids;
  for (const auto& d : j["devices"]) ids.insert(d["id"].get<std::string>());
  EXPECT_TRUE(ids.contains("node127/gpu7"));
  EXPECT_FALSE(ids.contains("node128/gpu0"));

  // Part of a node: 12 GPUs are node 0 and the first four GPUs of node 1.
  const std::string tp4 = plan_file("tp4.yaml", "parallelism: { tensor: 4 }\nbatch: { global: 48, micro: 1 }\n");
  const CommandResult part = mpsim("simulate --topology " + repo("topologies/512x-dgx-h100.yaml") + " --model " +
                                   repo("configs/models/gpt3-1.3b.yaml") + " --plan " + tp4 + " --gpus 12 --json");
  ASSERT_EQ(part.exit_code, 0) << part.err;
  const json p12 = json::parse(part.out);
  EXPECT_EQ(p12["devices"].size(), 12u);
  EXPECT_EQ(p12["plan"]["parallelism"]["data"].get<int>(), 3);
  std::set<std::string> part_ids;
  for (const auto& d : p12["devices"]) part_ids.insert(d["id"].get<std::string>());
  EXPECT_TRUE(part_ids.contains("node1/gpu3"));
  EXPECT_FALSE(part_ids.contains("node1/gpu4"));

  for (const auto& [flag, text] : std::vector<std::pair<std::string, std::string>>{
           {"--gpus 0", "must be a positive number of GPUs"},
           {"--gpus -8", "must be a positive number of GPUs"},
           {"--gpus 4104", "the topology has 4096 GPUs (512 nodes)"}}) {
    const CommandResult bad = mpsim(args + " " + flag + " --json");
    EXPECT_EQ(bad.exit_code, 2) << flag << "\n" << bad.err;
    EXPECT_TRUE(bad.out.empty()) << flag;
    EXPECT_EQ(lines(bad.err), 1) << flag << "\n" << bad.err;
    EXPECT_EQ(bad.err.rfind("mpsim: error: " + flag + ": ", 0), 0u) << bad.err;
    EXPECT_NE(bad.err.find(text), std::string::npos) << bad.err;
  }
  // --gpus-per-node K: 12 GPUs as the first 4 of nodes 0-2.
  const CommandResult four = mpsim("simulate --topology " + repo("topologies/512x-dgx-h100.yaml") + " --model " +
                                   repo("configs/models/gpt3-1.3b.yaml") + " --plan " + tp4 +
                                   " --gpus 12 --gpus-per-node 4 --json");
  ASSERT_EQ(four.exit_code, 0) << four.err;
  std::set<std::string> four_ids;
  const json four_json = json::parse(four.out);
  for (const auto& d : four_json["devices"]) four_ids.insert(d["id"].get<std::string>());
  EXPECT_TRUE(four_ids.contains("node2/gpu3"));
  EXPECT_FALSE(four_ids.contains("node0/gpu4"));
  for (const auto& [flag, text] : std::vector<std::pair<std::string, std::string>>{
           {"--gpus 12 --gpus-per-node 5", "5 GPUs per node do not divide a job of 12 GPUs"},
           {"--gpus 12 --gpus-per-node 9", "GPUs per node must be between 1 and the node's 8"}}) {
    const CommandResult bad = mpsim("simulate --topology " + repo("topologies/512x-dgx-h100.yaml") + " --model " +
                                    repo("configs/models/gpt3-1.3b.yaml") + " --plan " + tp4 + " " + flag);
    EXPECT_EQ(bad.exit_code, 2) << flag;
    EXPECT_EQ(lines(bad.err), 1) << bad.err;
    EXPECT_EQ(bad.err.rfind("mpsim: error: " + flag + ": ", 0), 0u) << bad.err;
    EXPECT_NE(bad.err.find(text), std::string::npos) << bad.err;
  }
  // The limit is the topology after --set: 1024 GPUs of a 64-node cluster is too many.
  const CommandResult small = mpsim(args + " --set topology.nodes=64 --gpus 1024 --json");
  EXPECT_EQ(small.exit_code, 2) << small.err;
  EXPECT_NE(small.err.find("the topology has 512 GPUs (64 nodes)"), std::string::npos) << small.err;
}

// 256 GPUs of GB200 NVL72 racks run as 4 racks of 64 (filling 72-GPU racks would split groups of 16 and up).
TEST(Simulate, GpusOfNvl72RacksRunAsEqualDomains) {
  const std::string plan = plan_file("nvl72-tp4.yaml", "parallelism: { tensor: 4 }\nbatch: { global: 256, micro: 1 }\n");
  const CommandResult r = mpsim("simulate --topology " + repo("topologies/gb200-nvl72.yaml") + " --model " +
                                repo("configs/models/gpt3-1.3b.yaml") + " --plan " + plan +
                                " --set topology.nodes=4 --gpus 256 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> ids;
  const json j = json::parse(r.out);
  for (const auto& d : j["devices"]) ids.insert(d["id"].get<std::string>());
  EXPECT_EQ(ids.size(), 256u);
  EXPECT_TRUE(ids.contains("node3/gpu63"));
  EXPECT_FALSE(ids.contains("node0/gpu64"));
}

TEST(Simulate, BadSetNamesTheFlag) {
  expect_bad_input("--set plan.tensor=0", "--set plan.tensor=0: ", "must be at least 1, got 0");
  expect_bad_input("--set plan.nosuch=3", "--set plan.nosuch=3: ", "unknown field 'nosuch'");
  expect_bad_input("--set banana.x=1", "--set banana.x=1: ", "unknown target 'banana'");
  expect_bad_input("--set plan.microbatches", "--set plan.microbatches: ", "expected TARGET.PATH=VALUE");
  expect_bad_input("--set topology.node.nics.bandwidth=fast", "--set topology.node.nics.bandwidth=fast: ",
                   "'fast' is not a bandwidth");
  expect_bad_input("--set plan.microbatches=", "--set plan.microbatches=: ", "the value is empty");
  expect_bad_input("--set plan.microbatches=abc", "--set plan.microbatches=abc: ", "not an integer");
  expect_bad_input("--set plan.schedule=2f2b", "--set plan.schedule=2f2b: ", "unknown value '2f2b'");
  expect_bad_input("--set plan.data=4", "--set plan.data=4: ", "64 GPUs, but the cluster has 32");
  expect_bad_input("--set 'plan.parallelism=[1,2'", "--set plan.parallelism=[1,2: ", "not YAML");
  expect_bad_input("--set 'plan.partition[7]=3'", "--set plan.partition[7]=3: ");
  expect_bad_input("--set plan.parallelism.tensor.x=1", "--set plan.parallelism.tensor.x=1: ", "not a mapping");
  expect_bad_input("--set model.model.layers=-1", "--set model.model.layers=-1: ", "must be at least 1, got -1");
  expect_bad_input("--set topology.fabric.kind=torus", "--set topology.fabric.kind=torus: ", "unknown value 'torus'");
  expect_bad_input("--set 'topology.node.links[0].bandwidth=-1 GB/s'", "--set topology.node.links[0].bandwidth=-1 GB/s: ",
                   "must not be negative");
  // Only the bad one of several is named.
  expect_bad_input("--set plan.microbatches=32 --set plan.zero=7", "--set plan.zero=7: ", "at most 3");
}

TEST(Simulate, MisspelledKeyInsideThePathNamesTheFlag) {
  // The override creates the misspelled mapping itself, so the file has no line to point at.
  expect_bad_input("--set plan.nosuch.x=1", "--set plan.nosuch.x=1: ", "unknown field 'nosuch'");
  expect_bad_input("--set plan.batch.glob.x=1", "--set plan.batch.glob.x=1: ", "unknown field 'glob'");
  expect_bad_input("--set model.model.hiden.x=1", "--set model.model.hiden.x=1: ", "unknown field 'hiden'");
  expect_bad_input("--set topology.node.nic.count=2", "--set topology.node.nic.count=2: ", "unknown field 'nic'");
  expect_bad_input("--set topology.fabric.knd.x=1", "--set topology.fabric.knd.x=1: ", "unknown field 'knd'");
}

TEST(Simulate, ClusterPathOnAFullTopologyNamesTheFlag) {
  // 4x-p4d.yaml is not the short form: a 'cluster.' path cannot apply to it.
  expect_bad_input("--set topology.cluster.nodes=2", "--set topology.cluster.nodes=2: ", "cluster");
}

// A bad point of a sweep is reported in its row, naming the flag and the value; the others run.
TEST(Simulate, SweepWithABadValueNamesItAndRunsTheRest) {
  const CommandResult r = mpsim(simulate("--sweep plan.microbatches=16,abc,64 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 3u);
  EXPECT_TRUE(j["runs"][0]["report"].is_object());
  EXPECT_FALSE(j["runs"][1].contains("report"));
  EXPECT_EQ(j["runs"][1]["error"].get<std::string>().rfind("--sweep plan.microbatches=abc: ", 0), 0u) << j["runs"][1];
  EXPECT_TRUE(j["runs"][2]["report"].is_object());
  const CommandResult table = mpsim(simulate("--sweep plan.microbatches=0,16"));
  ASSERT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find("failed [1]"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("[1] --sweep plan.microbatches=0: "), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("must be at least 1"), std::string::npos) << table.out;
  // Every point failing is the error of the first.
  expect_bad_input("--sweep plan.microbatches", "--sweep plan.microbatches: ");
  expect_bad_input("--sweep banana.x=1,2", "--sweep banana.x=1: ", "unknown target");
}

// Two sweeps make a grid, the first outermost; each point is the single run with both --set.
TEST(Simulate, TwoSweepsMakeAGrid) {
  const CommandResult r = mpsim(simulate("--sweep plan.microbatches=16,32 --sweep plan.schedule=1f1b,zb-h1 --json"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const json j = json::parse(r.out);
  EXPECT_EQ(j["sweep"], json({"plan.microbatches", "plan.schedule"}));
  ASSERT_EQ(j["runs"].size(), 4u);
  EXPECT_EQ(j["runs"][1]["values"], json({"16", "zb-h1"}));
  EXPECT_EQ(j["runs"][2]["values"], json({"32", "1f1b"}));
  std::string where;
  EXPECT_TRUE(near_equal(j["runs"][3]["report"], report("--set plan.microbatches=32 --set plan.schedule=zb-h1"), where))
      << where;
}

// A plan written by `plan -o` keeps what was decided and lets what follows from a --set follow:
// the partition's boundaries (virtual stages), the virtual stages (a schedule with one chunk per
// rank) and the data-parallel degree (the cluster's size).
TEST(Simulate, WrittenPlansTakeWhatIfs) {
  const fs::path written = scratch() / "written.yaml";
  const CommandResult planned = mpsim("plan --topology " + repo("topologies/4x-p4d.yaml") + " --model " +
                                      repo("configs/models/gpt3-13b.yaml") + " --schedules interleaved-1f1b -o " +
                                      written.string());
  ASSERT_EQ(planned.exit_code, 0) << planned.err;
  const std::string inputs = "simulate --topology " + repo("topologies/4x-p4d.yaml") + " --model " +
                             repo("configs/models/gpt3-13b.yaml") + " --plan " + written.string() + " --json";
  const auto plan_after = [&](const std::string& what_if) {
    const CommandResult r = mpsim(inputs + " " + what_if);
    EXPECT_EQ(r.exit_code, 0) << what_if << "\n" << r.err;
    return r.exit_code == 0 ? json::parse(r.out)["plan"] : json::object();
  };
  EXPECT_EQ(plan_after("--set plan.virtual_stages=4")["parallelism"]["virtual_stages"], 4);
  EXPECT_EQ(plan_after("--set plan.parallelism.virtual_stages=5")["parallelism"]["virtual_stages"], 5);
  const json one_chunk = plan_after("--set plan.schedule=1f1b");
  EXPECT_EQ(one_chunk["schedule"], "1f1b");
  EXPECT_EQ(one_chunk["parallelism"]["virtual_stages"], 1);
  const json half = plan_after("--set topology.nodes=2")["parallelism"];
  EXPECT_EQ(half["tensor"].get<int>() * half["pipeline"].get<int>() * half["data"].get<int>(), 16);
  const CommandResult grid = mpsim(inputs + " --sweep topology.nodes=2,4");
  ASSERT_EQ(grid.exit_code, 0) << grid.err;
  for (const json& run : json::parse(grid.out)["runs"]) EXPECT_TRUE(run.contains("report")) << run;
}

// A Megatron-named plan takes mpsim's names in a sweep (one field under two spellings), and
// virtual_pipeline_model_parallel_size alone means the interleaved schedule.
TEST(Simulate, MegatronNamesAndMpsimNamesAreOneField) {
  const std::string inputs = "simulate --topology " + repo("topologies/512x-dgx-h100.yaml") + " --model " +
                             repo("configs/models/gpt3-175b.yaml") + " --plan " +
                             repo("configs/plans/megatron-175b-interleaved.yaml") + " --set topology.nodes=16 --json";
  const CommandResult r = mpsim(inputs + " --sweep plan.recompute=none,full --sweep plan.zero=0,1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const json& run : json::parse(r.out)["runs"]) EXPECT_TRUE(run.contains("report")) << run;
  const fs::path megatron = scratch() / "megatron.yaml";
  std::ofstream(megatron) << "tensor_model_parallel_size: 8\npipeline_model_parallel_size: 8\n"
                             "virtual_pipeline_model_parallel_size: 2\nmicro_batch_size: 1\nglobal_batch_size: 512\n";
  const CommandResult implied = mpsim("simulate --topology " + repo("topologies/512x-dgx-h100.yaml") + " --model " +
                                      repo("configs/models/gpt3-175b.yaml") + " --plan " + megatron.string() +
                                      " --set topology.nodes=16 --json");
  ASSERT_EQ(implied.exit_code, 0) << implied.err;
  EXPECT_EQ(json::parse(implied.out)["plan"]["schedule"], "interleaved-1f1b");
}

// --explain on any plan: the busiest stage's step split into compute, bubble and exposed
// communication, which add up to the step.
TEST(Simulate, ExplainSplitsTheStep) {
  const json r = report("--explain");
  ASSERT_TRUE(r.contains("explain")) << r.dump();
  const json& e = r["explain"];
  EXPECT_NEAR(e["compute_s"].get<double>() + e["bubble_s"].get<double>() + e["exposed_communication_s"].get<double>(),
              e["step_time_s"].get<double>(), 1e-9);
  EXPECT_NEAR(e["step_time_s"].get<double>(), step_time(r), 1e-12);
  EXPECT_GT(e["compute_s"].get<double>(), 0);
  const CommandResult text = mpsim(simulate("--explain"));
  EXPECT_NE(text.out.find("Where the step goes, on its busiest stage"), std::string::npos) << text.out;
}

// --tokens: the run follows from the step (GPT-3 13B: 2048-token samples, the plan's global batch).
TEST(Simulate, TrainingFiguresFollowFromTheStep) {
  const json r = report("--tokens 300B --gpu-hour-price 2");
  ASSERT_TRUE(r.contains("training")) << r.dump();
  const json& t = r["training"];
  const double tokens_per_step = r["plan"]["batch"]["global"].get<double>() * 2048;
  EXPECT_EQ(t["tokens"].get<double>(), 300e9);
  EXPECT_EQ(t["steps"].get<std::int64_t>(), static_cast<std::int64_t>(std::ceil(300e9 / tokens_per_step)));
  EXPECT_NEAR(t["compute_s"].get<double>(), t["steps"].get<double>() * step_time(r), 1e-3);
  EXPECT_GT(t["wall_time_s"].get<double>(), t["compute_s"].get<double>());
  EXPECT_NEAR(t["effective_time_fraction"].get<double>(), t["compute_s"].get<double>() / t["wall_time_s"].get<double>(),
              1e-9);
  const double gpus = 32;  // 4 p4d nodes of 8 A100
  EXPECT_NEAR(t["gpu_hours"].get<double>(), t["wall_time_s"].get<double>() / 3600 * gpus, 1e-6 * t["gpu_hours"].get<double>());
  EXPECT_NEAR(t["cost"].get<double>(), 2 * t["gpu_hours"].get<double>(), 1e-6 * t["cost"].get<double>());
  // A100's 400 W: at least the GPUs' idle draw and at most their TDP plus the hosts, over the run.
  const double wall = t["wall_time_s"].get<double>();
  EXPECT_GT(t["energy_joules"].get<double>(), 32 * 40 * wall);
  EXPECT_LT(t["energy_joules"].get<double>(), 32 * (400 + 575) * wall);
  // Twice the tokens: twice the steps, the same effective share.
  const json twice = report("--tokens 600B");
  EXPECT_NEAR(twice["training"]["steps"].get<double>() / t["steps"].get<double>(), 2, 1e-5);
  EXPECT_NEAR(twice["training"]["effective_time_fraction"].get<double>(), t["effective_time_fraction"].get<double>(), 1e-4);
  EXPECT_TRUE(twice["training"]["cost"].is_null());
  const CommandResult text = mpsim(simulate("--tokens 300B"));
  EXPECT_NE(text.out.find("Training on 300 B tokens: "), std::string::npos) << text.out;
}

TEST(Simulate, BadTrainingFlagsNameTheFlag) {
  expect_bad_input("--tokens lots", "--tokens lots: ", "expected a token count");
  expect_bad_input("--tokens -5T", "--tokens -5T: ", "must be positive");
  expect_bad_input("--tokens 15T --restart-time soon", "--restart-time soon: ", "is not a time");
  expect_bad_input("--gpu-hour-price 2", "--gpu-hour-price: ", "needs --tokens");
}

TEST(Simulate, TraceDoesNotCombineWithSweep) {
  const fs::path trace = scratch() / "sweep-trace.json";
  fs::remove(trace);
  const CommandResult r = mpsim(simulate("--sweep plan.microbatches=16,32 --trace " + trace.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(lines(r.err), 1) << r.err;
  EXPECT_EQ(r.err.rfind("mpsim: error: --trace", 0), 0u) << r.err;
  EXPECT_FALSE(fs::exists(trace));
}

TEST(Simulate, BadRunWritesNoTrace) {
  const fs::path trace = scratch() / "bad-trace.json";
  fs::remove(trace);
  const CommandResult r = mpsim(simulate("--set plan.tensor=0 --trace " + trace.string()));
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_FALSE(fs::exists(trace));
}

TEST(Simulate, MissingInputsAreBadInput) {
  const CommandResult no_plan = mpsim("simulate --topology " + repo("topologies/4x-p4d.yaml") + " --model " +
                                      repo("configs/models/gpt3-13b.yaml"));
  EXPECT_EQ(no_plan.exit_code, 2);
  const CommandResult no_file = mpsim(simulate("", "/no/such/topology.yaml"));
  EXPECT_EQ(no_file.exit_code, 2);
  EXPECT_EQ(lines(no_file.err), 1) << no_file.err;
  EXPECT_EQ(no_file.err.rfind("mpsim: error: /no/such/topology.yaml", 0), 0u) << no_file.err;
}

}  // namespace
