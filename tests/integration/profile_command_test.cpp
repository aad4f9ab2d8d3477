// mpsim profile end to end (needs MPI): two ranks launched by the command itself measure this machine,
// and the topology they write is one `mpsim simulate` accepts; one rank without a launcher too. With
// --model-out the ranks time every layer of the model and write a profiled model that `mpsim simulate`
// and `mpsim plan` load.
#include <unistd.h>

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
using nlohmann::json;

fs::path scratch() { return mpsim::testing::scratch("profile"); }

class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(fs::temp_directory_path() / ("mpsim-profile-" + std::to_string(::getpid())), ignored);
  }
};
[[maybe_unused]] const auto* const remove_scratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

CommandResult mpsim(const std::string& args) { return mpsim::testing::run_mpsim(args); }

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

/// A small fp32 GPT and a two-stage plan for it.
fs::path write_inputs(const fs::path& dir) {
  std::ofstream(dir / "model.yaml")
      << "model: { name: tiny-gpt, family: gpt, layers: 4, hidden: 128, heads: 4, seq_len: 64, vocab: 1000, "
         "dtype: fp32 }\n";
  std::ofstream(dir / "plan.yaml") << "parallelism: { pipeline: 2, data: 1 }\nbatch: { global: 8, micro: 1 }\n"
                                      "schedule: 1f1b\n";
  std::ofstream(dir / "plan1.yaml") << "parallelism: { pipeline: 1, data: 1 }\nbatch: { global: 4, micro: 1 }\n";
  return dir;
}

/// Quick settings: small messages, short repetitions.
const std::string kQuick = " --max-message 1MiB --time-per-measurement '20 ms'";

TEST(ProfileCommand, TwoRanksWriteATopologyThatSimulateLoads) {
  const fs::path dir = write_inputs(scratch());
  const fs::path topology = dir / "profiled.yaml";
  const CommandResult p = mpsim("profile --ranks 2 --model " + (dir / "model.yaml").string() + kQuick + " -o " +
                                topology.string() + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  const json j = json::parse(p.out);
  EXPECT_EQ(j.at("ranks").get<int>(), 2);
  EXPECT_GT(j.at("gemm_flops_per_s").get<double>(), 1e8);
  EXPECT_GT(j.at("memory_bandwidth_bytes_per_s").get<double>(), 1e8);
  EXPECT_GT(j.at("beta_bytes_per_s").get<double>(), 1e6);
  EXPECT_GE(j.at("alpha_s").get<double>(), 0);
  EXPECT_LT(j.at("alpha_s").get<double>(), 1e-2);
  EXPECT_EQ(j.at("links").size(), 1u);
  EXPECT_EQ(j.at("gemms").size(), 17u);  // the model's products (see the profiler's unit tests)
  EXPECT_FALSE(j.at("allreduce").empty());

  const std::string yaml = read_file(topology);
  EXPECT_NE(yaml.find("gpus_per_node: 2"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("matmul_efficiency: 1.0"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("# ping-pong rank 0 <-> rank 1"), std::string::npos) << yaml;

  const CommandResult s = mpsim("simulate --topology " + topology.string() + " --model " +
                                (dir / "model.yaml").string() + " --plan " + (dir / "plan.yaml").string() + " --json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  const json report = json::parse(s.out);
  EXPECT_GT(report.at("step_time_s").get<double>(), 0);
  EXPECT_EQ(report.at("devices").size(), 2u);

  const CommandResult shown = mpsim("topo show " + topology.string() + " --json");
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
}

TEST(ProfileCommand, TableOutputReportsEachMeasurement) {
  const fs::path dir = write_inputs(scratch());
  const CommandResult p = mpsim("profile --ranks 2" + kQuick + " -o " + (dir / "default.yaml").string());
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(p.out.find("GEMM throughput"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("point to point"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("memory bandwidth"), std::string::npos) << p.out;
  EXPECT_TRUE(fs::exists(dir / "default.yaml"));
}

TEST(ProfileCommand, OneRankWithoutALauncher) {
  const fs::path dir = write_inputs(scratch());
  const fs::path topology = dir / "one.yaml";
  const CommandResult p = mpsim("profile" + kQuick + " -o " + topology.string());
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_EQ(read_file(topology).find("intra_node"), std::string::npos);
  const CommandResult s = mpsim("simulate --topology " + topology.string() + " --model " +
                                (dir / "model.yaml").string() + " --plan " + (dir / "plan1.yaml").string() + " --json");
  EXPECT_EQ(s.exit_code, 0) << s.err;
}

/// The layers of `model` as `mpsim model show --json` lists them.
json model_layers(const fs::path& model) {
  const CommandResult shown = mpsim("model show --json " + model.string());
  EXPECT_EQ(shown.exit_code, 0) << shown.err;
  return json::parse(shown.out).at("layers");
}

TEST(ProfileCommand, TwoRanksWriteAProfiledModelThatSimulateAndPlanLoad) {
  const fs::path dir = write_inputs(scratch());
  const fs::path topology = dir / "profiled.yaml";
  const fs::path profiled = dir / "model-mb1.yaml";
  const CommandResult p = mpsim("profile --ranks 2 --model " + (dir / "model.yaml").string() + kQuick +
                                " --micro-batch 1 --layer-repetitions 3 -o " + topology.string() + " --model-out " +
                                profiled.string() + " --json");
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  const json j = json::parse(p.out);
  const json& layer_profile = j.at("layer_profile");
  EXPECT_EQ(layer_profile.at("micro_batch").get<int>(), 1);
  EXPECT_EQ(layer_profile.at("ranks").get<int>(), 2);
  EXPECT_GT(layer_profile.at("adam_s_per_parameter").get<double>(), 0);
  // Three repetitions fall into three rounds (never more rounds than repetitions); their spread is
  // what the prediction's band will be.
  EXPECT_EQ(layer_profile.at("rounds").get<int>(), 3);
  const double spread = layer_profile.at("spread").get<double>();
  EXPECT_GE(spread, 0);
  // Each rank's whole-model time over the ranks' mean: one per rank, positive, averaging 1.
  const std::vector<double> rank_factors = layer_profile.at("rank_time_factors").get<std::vector<double>>();
  ASSERT_EQ(rank_factors.size(), 2u);
  EXPECT_GT(rank_factors[0], 0);
  EXPECT_GT(rank_factors[1], 0);
  EXPECT_NEAR((rank_factors[0] + rank_factors[1]) / 2, 1.0, 1e-6);

  const json original = model_layers(dir / "model.yaml");
  const json layers = model_layers(profiled);
  ASSERT_EQ(layers.size(), original.size());
  ASSERT_EQ(layer_profile.at("layers").size(), original.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    SCOPED_TRACE(original[i].at("name").get<std::string>());
    EXPECT_EQ(layers[i].at("name"), original[i].at("name"));
    EXPECT_EQ(layers[i].at("kind"), original[i].at("kind"));
    EXPECT_EQ(layers[i].at("parameters"), original[i].at("parameters"));
    EXPECT_EQ(layers[i].at("output_bytes"), original[i].at("output_bytes"));
    EXPECT_EQ(layers[i].at("activation_bytes"), original[i].at("activation_bytes"));
    EXPECT_GT(layers[i].at("forward_time_s").get<double>(), 0);
    EXPECT_GT(layers[i].at("backward_input_time_s").get<double>(), 0);
    EXPECT_GT(layers[i].at("backward_weight_time_s").get<double>(), 0);
  }

  // The Adam step's time per parameter is a field the optimizer step's cost uses, and the model the
  // executor trained is named, for `execute --model` of the profiled model.
  const std::string text = read_file(profiled);
  EXPECT_NE(text.find("  optimizer_time_per_parameter: { adam: \""), std::string::npos) << text;
  EXPECT_NE(text.find("  profiled_from: {"), std::string::npos) << text;
  EXPECT_NE(text.find("hidden: 128"), std::string::npos) << text;
  EXPECT_NE(text.find("# each rank's whole-model time over the ranks' mean: rank 0 "), std::string::npos) << text;
  // model show gives them back: the Adam time as profiled, the spread, the source model's name.
  const json shown = json::parse(mpsim("model show --json " + profiled.string()).out);
  EXPECT_NEAR(shown.at("optimizer_time_per_parameter_s").at("adam").get<double>(),
              layer_profile.at("adam_s_per_parameter").get<double>(),
              1e-3 * layer_profile.at("adam_s_per_parameter").get<double>());  // the file keeps 4 digits
  EXPECT_NEAR(shown.at("profile_spread").get<double>(), spread, 1e-4);
  EXPECT_EQ(shown.at("profiled_from"), json::parse(mpsim("model show --json " + (dir / "model.yaml").string()).out).at("name"));
  const std::string table = mpsim("model show " + profiled.string()).out;
  EXPECT_NE(table.find("optimizer   adam: "), std::string::npos) << table;
  EXPECT_NE(table.find("profiled    from "), std::string::npos) << table;

  const CommandResult s = mpsim("simulate --topology " + topology.string() + " --model " + profiled.string() +
                                " --plan " + (dir / "plan.yaml").string() + " --json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_GT(json::parse(s.out).at("step_time_s").get<double>(), 0);
  EXPECT_NEAR(json::parse(s.out).at("profile_spread").get<double>(), spread, 1e-4);  // the file keeps 4 digits
  const CommandResult planned = mpsim("plan --topology " + topology.string() + " --model " + profiled.string() +
                                      " --global-batch 8 --gpus 2 --max-micro-batch 1 --max-tensor 1 --top 3 --json");
  ASSERT_EQ(planned.exit_code, 0) << planned.err;

  // Layers alone (no -o): one rank, no machine profile.
  const fs::path alone = dir / "model-mb2.yaml";
  const CommandResult a = mpsim("profile --model " + (dir / "model.yaml").string() +
                                " --micro-batch 2 --layer-repetitions 2 --model-out " + alone.string());
  ASSERT_EQ(a.exit_code, 0) << a.out << a.err;
  EXPECT_NE(a.out.find("backward-weight"), std::string::npos) << a.out;
  EXPECT_EQ(model_layers(alone).size(), original.size());
  EXPECT_NE(read_file(alone).find("micro batch 2"), std::string::npos);
}

// The executor computes in fp32 whatever the model's dtype: a bf16 model's profile says fp32, with its
// bytes at 4 per element, and simulates on the profiled machine (which measured fp32 GEMMs only).
TEST(ProfileCommand, ABf16ModelIsProfiledAsTheExecutorRanIt) {
  const fs::path dir = scratch();
  const fs::path model = dir / "bf16.yaml";
  std::ofstream(model) << "model: { name: tiny-bf16, family: gpt, layers: 2, hidden: 32, heads: 4, seq_len: 16, vocab: 64 }\n";
  std::ofstream(dir / "plan-bf16.yaml") << "parallelism: { pipeline: 1, data: 1 }\nbatch: { global: 2, micro: 1 }\n";
  const fs::path topology = dir / "bf16-machine.yaml";
  const fs::path profiled = dir / "bf16-mb1.yaml";
  const CommandResult p = mpsim("profile --model " + model.string() + kQuick + " --layer-repetitions 2 -o " +
                                topology.string() + " --model-out " + profiled.string());
  ASSERT_EQ(p.exit_code, 0) << p.out << p.err;
  EXPECT_NE(read_file(profiled).find("  dtype: fp32\n"), std::string::npos);
  const json original = model_layers(model);
  const json layers = model_layers(profiled);
  ASSERT_EQ(layers.size(), original.size());
  for (std::size_t i = 0; i < layers.size(); ++i) {
    EXPECT_EQ(layers[i].at("activation_bytes").get<std::int64_t>(), 2 * original[i].at("activation_bytes").get<std::int64_t>());
    EXPECT_EQ(layers[i].at("output_bytes").get<std::int64_t>(), 2 * original[i].at("output_bytes").get<std::int64_t>());
  }
  const CommandResult s = mpsim("simulate --topology " + topology.string() + " --model " + profiled.string() +
                                " --plan " + (dir / "plan-bf16.yaml").string() + " --json");
  ASSERT_EQ(s.exit_code, 0) << s.err;
  EXPECT_EQ(json::parse(s.out).at("plan").at("precision"), "fp32");
}

TEST(ProfileCommand, BadInputBeforeLaunching) {
  const fs::path dir = scratch();
  const CommandResult r = mpsim("profile --ranks 2 --model " + (dir / "missing.yaml").string() + " -o " +
                                (dir / "x.yaml").string());
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("missing.yaml"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir / "x.yaml"));
  const CommandResult size = mpsim("profile --ranks 2 --max-message lots -o " + (dir / "x.yaml").string());
  EXPECT_EQ(size.exit_code, 2) << size.err;
  const CommandResult backend = mpsim("profile --backend tpu -o " + (dir / "x.yaml").string());
  EXPECT_EQ(backend.exit_code, 2) << backend.err;
  const CommandResult no_output = mpsim("profile --ranks 2");
  EXPECT_EQ(no_output.exit_code, 2) << no_output.err;
  const CommandResult no_model = mpsim("profile --model-out " + (dir / "m.yaml").string());
  EXPECT_EQ(no_model.exit_code, 2) << no_model.err;
  EXPECT_NE(no_model.err.find("--model"), std::string::npos) << no_model.err;
  EXPECT_FALSE(fs::exists(dir / "m.yaml"));
}

}  // namespace
