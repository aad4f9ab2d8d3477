// Golden files pin each target's export of shipped plans; every name in them was checked against the
// framework's own argument parser or config docs (docs/export.md cites them). Regenerate after a
// deliberate change with
//   MPSIM_UPDATE_GOLDEN=1 ./interop_test --gtest_filter='Golden*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "tests/unit/interop/interop_test_support.h"

namespace mpsim::interop {
namespace {

using testing::ResolvedPlan;

struct GoldenCase {
  std::string file;  ///< under tests/golden/export/
  Framework target;
  std::string topology;
  std::string model;
  std::string plan;
  int gpus = 0;     ///< the job's first GPUs (--gpus); 0: the whole topology
  std::string csv = {};  ///< TorchTitan: the schedule CSV the TOML names, also under tests/golden/export/
};

void PrintTo(const GoldenCase& c, std::ostream* os) { *os << c.file; }

bool updating() {
  const char* flag = std::getenv("MPSIM_UPDATE_GOLDEN");
  return flag != nullptr && std::string(flag) == "1";
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

/// Compares `text` with the golden file `name`, or writes it when updating.
void expect_golden(const std::string& name, const std::string& text) {
  const std::string path = testing::repo_path("tests/golden/export/" + name);
  if (updating()) {
    std::ofstream(path, std::ios::binary) << text;
    return;
  }
  std::ifstream in(path, std::ios::binary);
  ASSERT_TRUE(in) << "missing golden file " << path << " (MPSIM_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "differs from " << path;
}

TEST_P(Golden, MatchesTheFile) {
  const GoldenCase& c = GetParam();
  const ResolvedPlan resolved(c.topology, c.model, c.plan, c.gpus);
  expect_golden(c.file, resolved.exported(c.target, c.csv));
  if (!c.csv.empty()) expect_golden(c.csv, torchtitan_schedule_csv(resolved.plan));
  if (updating()) GTEST_SKIP() << "wrote " << c.file << " " << c.csv;
}

INSTANTIATE_TEST_SUITE_P(
    Targets, Golden,
    ::testing::Values(
        GoldenCase{"megatron-gpt3-13b-4x-p4d.sh", Framework::Megatron, "topologies/4x-p4d.yaml",
                   "configs/models/gpt3-13b.yaml", "configs/plans/gpt3-13b-4x-p4d.yaml"},
        GoldenCase{"megatron-gpt3-175b-interleaved.sh", Framework::Megatron, "topologies/16x-dgx-h100.yaml",
                   "configs/models/gpt3-175b.yaml", "configs/plans/megatron-175b-interleaved.yaml"},
        GoldenCase{"nemo-gpt3-13b-4x-p4d.yaml", Framework::Nemo, "topologies/4x-p4d.yaml",
                   "configs/models/gpt3-13b.yaml", "configs/plans/gpt3-13b-4x-p4d.yaml"},
        GoldenCase{"nemo-gpt3-175b-interleaved.yaml", Framework::Nemo, "topologies/16x-dgx-h100.yaml",
                   "configs/models/gpt3-175b.yaml", "configs/plans/megatron-175b-interleaved.yaml"},
        GoldenCase{"deepspeed-megatron-39.1b.json", Framework::DeepSpeed, "topologies/16x-dgx-h100.yaml",
                   "configs/models/megatron-39.1b.yaml", "configs/plans/megatron-sc21-39.1b.yaml"},
        GoldenCase{"deepspeed-megatron-1.7b.json", Framework::DeepSpeed, "topologies/dgx-a100.yaml",
                   "configs/models/megatron-1.7b.yaml", "configs/plans/megatron-sc21-1.7b.yaml"},
        GoldenCase{"torchtitan-megatron-1.7b.toml", Framework::TorchTitan, "topologies/dgx-a100.yaml",
                   "configs/models/megatron-1.7b.yaml", "configs/plans/megatron-sc21-1.7b.yaml"},
        GoldenCase{"torchtitan-llama3-8b.toml", Framework::TorchTitan, "topologies/dgx-h100.yaml",
                   "configs/models/llama3-8b.yaml", "configs/plans/megatron-sc21-1.7b.yaml"},
        GoldenCase{"torchtitan-cpu-tiny-zb-h1-pp2.toml", Framework::TorchTitan, "topologies/dgx-a100.yaml",
                   "configs/models/cpu-gpt-tiny.yaml", "configs/plans/cpu-tiny-zb-h1-pp2.yaml", 2,
                   "torchtitan-cpu-tiny-zb-h1-pp2.csv"},
        GoldenCase{"sagemaker-gpt3-1.3b.json", Framework::SageMaker, "topologies/p4d.24xlarge.yaml",
                   "configs/models/gpt3-1.3b.yaml", "configs/plans/gpt3-1.3b-sagemaker.yaml"},
        GoldenCase{"sagemaker-gpt3-1.3b-p3.json", Framework::SageMaker, "topologies/p3.16xlarge.yaml",
                   "configs/models/gpt3-1.3b.yaml", "configs/plans/gpt3-1.3b-sagemaker.yaml"}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string name;
      for (const char ch : info.param.file) name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      return name;
    });

}  // namespace
}  // namespace mpsim::interop
