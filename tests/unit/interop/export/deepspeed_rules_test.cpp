// The checks DeepSpeed runs on its config JSON when deepspeed.initialize builds the engine, as a table of
// rules the export must pass. Read at deepspeedai/DeepSpeed edaa722 (August 2026); each rule names the
// file and function it comes from and restates it in words. The exports checked are export_rule_cases.h's.
#include <gtest/gtest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "tests/unit/interop/export/export_rule_cases.h"

namespace mpsim::interop {
namespace {

using testing::ExportCase;
using testing::ResolvedPlan;
using Json = nlohmann::json;

/// A DeepSpeed config as DeepSpeedConfig reads it, with the job's world size.
struct DeepSpeedJob {
  Json config;
  std::int64_t world_size = 0;

  [[nodiscard]] std::int64_t integer(std::string_view key, std::int64_t fallback) const {
    const auto it = config.find(key);
    return it != config.end() && it->is_number_integer() ? it->get<std::int64_t>() : fallback;
  }
  [[nodiscard]] Json section(std::string_view key) const {
    const auto it = config.find(key);
    return it != config.end() && it->is_object() ? *it : Json::object();
  }
  [[nodiscard]] bool enabled(std::string_view key) const { return section(key).value("enabled", false); }
  [[nodiscard]] std::int64_t stages() const { return section("pipeline").value("stages", std::int64_t{1}); }
  [[nodiscard]] std::int64_t tensor() const { return section("tensor_parallel").value("autotp_size", std::int64_t{1}); }
  [[nodiscard]] std::int64_t zero_stage() const { return section("zero_optimization").value("stage", std::int64_t{0}); }
  /// The world size DeepSpeedConfig checks the batch against: the data-parallel size of the model-parallel
  /// unit the engine is given (mpu.get_data_parallel_world_size()), taken as the ranks over the pipeline and
  /// tensor degrees. That assumes the script's unit keeps the tensor ranks out of the data dimension
  /// (PipeModelDataParallelTopology with a pipeline, an mpu under AutoTP; docs/export.md says so): without
  /// an mpu DeepSpeedConfig.__init__ counts every rank.
  [[nodiscard]] std::int64_t data_parallel() const {
    const std::int64_t model = stages() * tensor();
    return model > 0 ? world_size / model : 0;
  }
};

struct DeepSpeedRule {
  std::string_view source;
  std::string_view rule;
  bool (*holds)(const DeepSpeedJob&);
};

constexpr std::string_view kBatchAssertion = "deepspeed/runtime/config.py:925-940 DeepSpeedConfig._batch_assertion";

const DeepSpeedRule kDeepSpeedRules[] = {
    {kBatchAssertion,
     "train_batch_size, train_micro_batch_size_per_gpu and gradient_accumulation_steps are all "
     "given (so _set_batch_related_parameters derives none) and above 0",
     [](const DeepSpeedJob& j) {
       return j.integer("train_batch_size", 0) > 0 && j.integer("train_micro_batch_size_per_gpu", 0) > 0 &&
              j.integer("gradient_accumulation_steps", 0) > 0;
     }},
    {kBatchAssertion, "train_batch_size = micro batch per GPU x gradient accumulation steps x data-parallel world size",
     [](const DeepSpeedJob& j) {
       return j.integer("train_batch_size", 0) == j.integer("train_micro_batch_size_per_gpu", 0) *
                                                      j.integer("gradient_accumulation_steps", 0) * j.data_parallel();
     }},
    {"deepspeed/runtime/config.py:1023 DeepSpeedConfig._do_error_check and deepspeed/runtime/zero/config.py "
     "(stage is a ZeroStageEnum)",
     "zero_optimization.stage is 0, 1, 2 or 3",
     [](const DeepSpeedJob& j) { return j.zero_stage() >= 0 && j.zero_stage() <= 3; }},
    {"deepspeed/runtime/config.py:827 DeepSpeedConfig._initialize_params", "fp16 and bf16 are not both enabled",
     [](const DeepSpeedJob& j) { return !(j.enabled("fp16") && j.enabled("bf16")); }},
    {"deepspeed/runtime/config.py:209-223 get_communication_data_type", "communication_data_type is fp16, bf16 or fp32",
     [](const DeepSpeedJob& j) {
       const auto it = j.config.find("communication_data_type");
       if (it == j.config.end() || it->is_null()) return true;
       const std::string type = it->get<std::string>();
       return type == "fp16" || type == "bf16" || type == "fp32";
     }},
    {"deepspeed/runtime/pipe/engine.py:76 PipelineEngine.__init__", "with a pipeline, the ZeRO stage is 0 or 1",
     [](const DeepSpeedJob& j) { return j.stages() == 1 || j.zero_stage() < 2; }},
    {"deepspeed/runtime/pipe/topology.py:295 PipelineParallelGrid.__init__ (_is_grid_valid)",
     "the world size is a multiple of the pipeline stages x the tensor degree",
     [](const DeepSpeedJob& j) {
       const std::int64_t model = j.stages() * j.tensor();
       return model >= 1 && j.world_size % model == 0;
     }},
    {"deepspeed/runtime/pipe/module.py:556 PipelineModule.set_checkpoint_interval (the engine passes the interval)",
     "pipeline.activation_checkpoint_interval is not negative",
     [](const DeepSpeedJob& j) { return j.section("pipeline").value("activation_checkpoint_interval", 0) >= 0; }},
};

std::vector<std::string_view> deepspeed_failed_rules(const DeepSpeedJob& job) {
  return testing::failed_rules(kDeepSpeedRules, job);
}

class DeepSpeedRules : public ::testing::TestWithParam<ExportCase> {};

TEST_P(DeepSpeedRules, DeepSpeedAcceptsTheConfig) {
  const ResolvedPlan r = testing::resolve(GetParam());
  const std::optional<std::string> json =
      testing::export_or_refusal(r, Framework::DeepSpeed, GetParam().deepspeed_refuses);
  if (!json) return;
  const DeepSpeedJob job{Json::parse(*json), r.plan.gpus()};
  testing::expect_every_rule_holds(kDeepSpeedRules, job, *json);
}

INSTANTIATE_TEST_SUITE_P(Exports, DeepSpeedRules, ::testing::ValuesIn(testing::kExportCases),
                         [](const ::testing::TestParamInfo<ExportCase>& info) { return info.param.name; });

// The rules can fail: configs with the mistakes they describe fail the rules they break.
TEST(DeepSpeedRuleTable, CatchesBrokenConfigs) {
  // The batch counted over every rank rather than the data-parallel ones, ZeRO-2 under a pipeline, both
  // 16-bit modes.
  const DeepSpeedJob pipelined{Json::parse(R"({"train_batch_size": 512, "train_micro_batch_size_per_gpu": 2,
      "gradient_accumulation_steps": 4, "bf16": {"enabled": true}, "fp16": {"enabled": true},
      "zero_optimization": {"stage": 2}, "pipeline": {"stages": 4}, "tensor_parallel": {"autotp_size": 2}})"),
                               64};
  EXPECT_EQ(deepspeed_failed_rules(pipelined),
            (std::vector<std::string_view>{kDeepSpeedRules[1].rule, kDeepSpeedRules[3].rule, kDeepSpeedRules[5].rule}));
  // No accumulation steps, a ZeRO stage that does not exist, a communication type DeepSpeed does not
  // know, and stages that do not divide the ranks.
  const DeepSpeedJob unknown{Json::parse(R"({"train_batch_size": 8, "train_micro_batch_size_per_gpu": 1,
      "zero_optimization": {"stage": 4}, "communication_data_type": "fp8", "pipeline": {"stages": 3}})"),
                             8};
  EXPECT_EQ(deepspeed_failed_rules(unknown),
            (std::vector<std::string_view>{kDeepSpeedRules[0].rule, kDeepSpeedRules[1].rule, kDeepSpeedRules[2].rule,
                                           kDeepSpeedRules[4].rule, kDeepSpeedRules[5].rule, kDeepSpeedRules[6].rule}));
}

}  // namespace
}  // namespace mpsim::interop
