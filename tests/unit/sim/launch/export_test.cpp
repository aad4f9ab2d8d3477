// What each target cannot express is an error at the plan field that holds it.
#include <gtest/gtest.h>

#include <string>

#include "launch_test_support.h"
#include "sim/core/input_error.h"

namespace mpsim::launch {
namespace {

using testing::ResolvedPlan;
using testing::spec_from;

constexpr const char* kDgxH100 = "topologies/dgx-h100.yaml";
constexpr const char* kLlama8b = "configs/models/llama3-8b.yaml";

/// The error an export throws: "field: message", or "<no error>".
std::string export_error(Framework target, const std::string& plan_yaml, const std::string& model = kLlama8b,
                         const std::string& topology = kDgxH100) {
  try {
    (void)ResolvedPlan(topology, model, spec_from(plan_yaml)).exported(target);
  } catch (const InputError& e) {
    return e.field() + ": " + e.message();
  }
  return "<no error>";
}

std::string megatron(const std::string& plan_yaml, const std::string& model = kLlama8b) {
  return ResolvedPlan(kDgxH100, model, spec_from(plan_yaml)).exported(Framework::Megatron);
}

TEST(MegatronExport, RefusesSchedulesMegatronDoesNotRun) {
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { pipeline: 2 }\nschedule: zb-h1\n").rfind("schedule: ", 0), 0u);
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { pipeline: 2 }\nschedule: gpipe\n").rfind("schedule: ", 0), 0u);
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { pipeline: 2 }\nschedule: 1f1b\n"), "<no error>");
}

TEST(MegatronExport, TheErrorPointsAtThePlanLine) {
  try {
    (void)ResolvedPlan(kDgxH100, kLlama8b, spec_from("parallelism: { pipeline: 2 }\nschedule: zb-h1\n"))
        .exported(Framework::Megatron);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "plan.yaml");
    EXPECT_EQ(e.where().line, 2);
  }
}

TEST(MegatronExport, OverlapsNeedWhatMegatronAssertsForThem) {
  EXPECT_EQ(export_error(Framework::Megatron, "overlap: { param_gather: true }\nzero: 1\n").rfind("overlap.param_gather: ", 0), 0u);
  EXPECT_EQ(export_error(Framework::Megatron, "overlap: { param_gather: true, grad_reduce: true }\nzero: 1\n"), "<no error>");
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { tensor: 2 }\noverlap: { tensor_comm: true }\n")
                .rfind("overlap.tensor_comm: ", 0),
            0u);
}

TEST(MegatronExport, AnUnevenSplitIsWrittenAsFirstAndLastStageLayersOrALayout) {
  // Llama 3 8B has 32 blocks: 4 stages of 8 need no flag; 7 + 9 + 9 + 7 name the ends; 10 + 6 + 8 + 8 a layout.
  EXPECT_EQ(megatron("parallelism: { pipeline: 4 }\n").find("pipeline-num-layers"), std::string::npos);
  const std::string ends = megatron("parallelism: { pipeline: 4 }\npartition: [0, 7, 16, 25, 32]\n");
  EXPECT_NE(ends.find("--decoder-first-pipeline-num-layers 7\n"), std::string::npos) << ends;
  EXPECT_NE(ends.find("--decoder-last-pipeline-num-layers 7\n"), std::string::npos) << ends;
  const std::string layout = megatron("parallelism: { pipeline: 4 }\npartition: [0, 10, 16, 24, 32]\n");
  EXPECT_NE(layout.find("--pipeline-model-parallel-layout \"Et*10|t*6|t*8|t*8L\"\n"), std::string::npos) << layout;
}

TEST(MegatronExport, VirtualStagesAreLayersPerVirtualStage) {
  const std::string script = megatron("parallelism: { pipeline: 2, virtual_stages: 4 }\n");
  EXPECT_NE(script.find("--num-layers-per-virtual-pipeline-stage 4\n"), std::string::npos) << script;
}

TEST(MegatronExport, MoeLayersFollowMegatronsFrequencyArgument) {
  const std::string script = megatron("parallelism: { tensor: 8 }\n", "configs/models/deepseek-v3.yaml");
  EXPECT_NE(script.find("--moe-layer-freq \"([0]*3+[1]*58)\"\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--multi-latent-attention\n"), std::string::npos);
}

TEST(MegatronExport, AHandListedModelHasNoShapeArguments) {
  EXPECT_EQ(export_error(Framework::Megatron, "{}\n", "configs/models/mnist-cnn.yaml").rfind("model.layers: ", 0), 0u);
}

}  // namespace
}  // namespace mpsim::launch
