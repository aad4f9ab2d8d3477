// SageMaker model parallelism's distribution (smdistributed.modelparallel.parameters) into plans.
#include <gtest/gtest.h>

#include <string>

#include "interop/import/sagemaker_import.h"
#include "sim/core/input_error.h"
#include "tests/unit/interop/interop_test_support.h"

namespace mpsim::interop {
namespace {

using testing::ResolvedPlan;

plan::Plan resolved(const ImportedLaunch& imported, const ResolvedPlan& on) {
  return plan::resolve_plan(testing::spec_from(imported.plan_yaml), on.cluster, on.model);
}

std::string error_of(const std::string& json, std::optional<int> gpus = std::nullopt) {
  try {
    (void)import_sagemaker(json, "distribution.json", gpus);
  } catch (const InputError& e) {
    return e.what();
  }
  return "<no error>";
}

// Every setting the SageMaker export writes comes back: both pipelines, tensor parallelism, placement,
// precision, optimizer-state sharding (zero 1) and sharded data parallelism in groups (zero 3, HSDP).
TEST(SageMakerRoundTrip, EverySettingComesBack) {
  const char* const plans[] = {
      "parallelism: { tensor: 2, pipeline: 2 }\nschedule: gpipe\nprecision: fp16\nzero: 1\nplacement: pp-dp-tp\n",
      // The micro batch size is the training script's (its batch over `microbatches`), not a parameter.
      "parallelism: { pipeline: 4 }\nschedule: sagemaker-interleaved\nactive_microbatches: 5\nbatch: { global: 64, micro: 1 }\n",
      "parallelism: { tensor: 2 }\nzero: 3\nshard_groups: 2\noptimize: memory\n",
  };
  for (const char* yaml : plans) {
    const ResolvedPlan original("topologies/4x-p4d.yaml", "configs/models/gpt3-1.3b.yaml", testing::spec_from(yaml));
    const std::string json = original.exported(Framework::SageMaker);
    const ImportedLaunch imported = import_sagemaker(json, "distribution.json", original.plan.gpus());
    EXPECT_EQ(resolved(imported, original), original.plan) << yaml << "\n" << json << "\n" << imported.plan_yaml;
    EXPECT_TRUE(imported.ignored.empty()) << ::testing::PrintToString(imported.ignored);
  }
}

TEST(SageMakerImport, ReadsTheParametersPeopleWrite) {
  // The SDK's example: partitions (the older name), no instance count (the data size follows the cluster),
  // and parameters that set nothing mpsim models.
  const std::string json = R"({
    "smdistributed": { "modelparallel": { "enabled": true, "parameters": {
      "partitions": 2, "microbatches": 4, "placement_strategy": "spread", "pipeline": "interleaved",
      "optimize": "speed", "ddp": true, "memory_weight": 0.8, "prescaled_batch": true } } },
    "mpi": { "enabled": true, "processes_per_host": 8 } })";
  const ImportedLaunch imported = import_sagemaker(json, "distribution.json", std::nullopt);
  EXPECT_FALSE(imported.gpus);
  EXPECT_EQ(imported.ignored, (std::vector<std::string>{"memory_weight", "prescaled_batch"}));
  const ResolvedPlan on("topologies/p4d.24xlarge.yaml", "configs/models/gpt3-1.3b.yaml", testing::spec_from("{}"));
  const plan::Plan p = resolved(imported, on);
  EXPECT_EQ(p.degrees[plan::Axis::Pipeline], 2);
  EXPECT_EQ(p.degrees[plan::Axis::Data], 4);  // 8 GPUs of the node over pipeline 2
  EXPECT_EQ(p.microbatches, 4);
  EXPECT_EQ(p.schedule, plan::ScheduleKind::SageMakerInterleaved);
}

TEST(SageMakerImport, BadInputIsAnErrorAtItsPlace) {
  EXPECT_NE(error_of("{\n  \"smdistributed\": [1,,]\n}").find("distribution.json:2:"), std::string::npos)
      << error_of("{\n  \"smdistributed\": [1,,]\n}");
  EXPECT_NE(error_of("{\"mpi\": {}}").find("no SageMaker model parallelism parameters"), std::string::npos);
  const std::string schedule = R"({"smdistributed": {"modelparallel": {"parameters": {
    "pipeline_parallel_degree": 2, "pipeline": "1f1b"}}}})";
  EXPECT_NE(error_of(schedule).find(":2:36: SageMaker's pipeline is \"simple\" or \"interleaved\", not \"1f1b\""),
            std::string::npos)
      << error_of(schedule);
  const std::string degree = R"({"smdistributed": {"modelparallel": {"parameters": {"pipeline_parallel_degree": "2"}}}})";
  EXPECT_NE(error_of(degree).find("a positive integer, not \"2\""), std::string::npos) << error_of(degree);
  const std::string sharded = R"({"smdistributed": {"modelparallel": {"parameters": {"sharded_data_parallel_degree": 3}}}})";
  EXPECT_NE(error_of(sharded).find("needs the job's GPU count"), std::string::npos);
  EXPECT_NE(error_of(sharded, 8).find("3 does not divide the data-parallel size 8"), std::string::npos) << error_of(sharded, 8);
}

}  // namespace
}  // namespace mpsim::interop
