// The Megatron-Core settings the Megatron-LM and Megatron-Bridge exports share: Megatron-LM's flag
// names, and both exports carrying each setting with one value, in the table's order.
#include "interop/export/megatron_core_settings.h"

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "tests/unit/interop/interop_test_support.h"

namespace mpsim::interop {
namespace {

using testing::ResolvedPlan;
using testing::spec_from;

constexpr const char* kDeepSeek = "configs/models/deepseek-v3.yaml";

/// An MLA and MoE model, its plan with the flex dispatcher and the expert capacity.
ResolvedPlan moe_mla_plan(const std::string& extra = {}) {
  return ResolvedPlan(testing::kDgxH100, kDeepSeek,
                      spec_from("parallelism: { tensor: 2, expert: 2 }\nsequence_parallel: true\n"
                                "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: deepep\n"
                                "moe_deepep_num_sms: 24\nmoe_expert_capacity_factor: 1.5\n"
                                "moe_pad_expert_input_to_capacity: true\n" +
                                extra));
}

std::vector<McoreSetting> settings_of(const ResolvedPlan& r) { return megatron_core_settings(*r.model.shape, r.plan); }

TEST(MegatronCoreSettings, AFlagIsTheDashedKeyOrANamedException) {
  // pretrain_gpt.py's arguments (megatron/training/arguments.py) that are not the field's dashed name.
  const std::map<std::string, std::pair<std::string, bool>> exceptions = {
      {"num_moe_experts", {"--num-experts", true}},
      {"add_bias_linear", {"--disable-bias-linear", false}},
      {"layernorm_epsilon", {"--norm-epsilon", true}},  // TransformerConfig's argparse_meta arg_names
      {"share_embeddings_and_output_weights", {"--untie-embeddings-and-output-weights", false}},
      {"rope_scaling", {"--use-rope-scaling", true}},  // Megatron-LM's use_rope_scaling
      {"apply_rope_fusion", {"--no-rope-fusion", false}}};
  std::set<std::string> keys;
  std::vector<McoreSetting> settings = settings_of(moe_mla_plan("cpu_offloading_num_layers: 2\n"));
  const std::vector<McoreSetting> llama31 =
      settings_of(ResolvedPlan(testing::kDgxH100, "configs/models/llama31-405b.yaml", spec_from("{}\n")));
  settings.insert(settings.end(), llama31.begin(), llama31.end());
  // Latent attention without YaRN (plain RoPE) turns rope fusion off.
  const ResolvedPlan deepseek = moe_mla_plan();
  model::TransformerShape plain_rope = *deepseek.model.shape;
  plain_rope.rope_scaling.reset();
  const std::vector<McoreSetting> plain = megatron_core_settings(plain_rope, deepseek.plan);
  settings.insert(settings.end(), plain.begin(), plain.end());
  for (const McoreSetting& s : settings) {
    keys.insert(std::string(s.key));
    const auto it = exceptions.find(std::string(s.key));
    if (it == exceptions.end()) {
      EXPECT_EQ(s.flag(), plan::command_line_flag(s.key)) << s.key;
      EXPECT_TRUE(s.switch_sets()) << s.key;
    } else {
      EXPECT_EQ(s.flag(), it->second.first) << s.key;
      EXPECT_EQ(s.switch_sets(), it->second.second) << s.key;
    }
  }
  for (const MegatronFlagName& f : kMegatronFlagNames) EXPECT_TRUE(keys.contains(std::string(f.key))) << f.key;
  EXPECT_TRUE(keys.contains("kv_lora_rank"));
  EXPECT_TRUE(keys.contains("moe_deepep_num_sms"));
}

TEST(MegatronCoreSettings, ArgumentsLeaveOutUnsetValuesAndMegatronsDefaultSwitches) {
  EXPECT_EQ((McoreSetting{McoreRun::Linear, "add_bias_linear", false}.megatron_argument()), "--disable-bias-linear");
  EXPECT_EQ((McoreSetting{McoreRun::Linear, "add_bias_linear", true}.megatron_argument()), std::nullopt);
  EXPECT_EQ((McoreSetting{McoreRun::Linear, "qk_layernorm", true}.megatron_argument()), "--qk-layernorm");
  EXPECT_EQ((McoreSetting{McoreRun::Linear, "qk_layernorm", false}.megatron_argument()), std::nullopt);
  EXPECT_EQ((McoreSetting{McoreRun::Recompute, "recompute_method", McoreValue()}.megatron_argument()), std::nullopt);
  EXPECT_EQ((McoreSetting{McoreRun::Recompute, "recompute_method", McoreValue()}.config_value()), "null");
  EXPECT_EQ((McoreSetting{McoreRun::Experts, "num_moe_experts", std::int64_t{256}}.megatron_argument()),
            "--num-experts 256");
  EXPECT_EQ((McoreSetting{McoreRun::Capacity, "moe_expert_capacity_factor", 1.5}.config_value()), "1.5");
}

/// Where `line` stands in `text`, or npos.
std::size_t line_at(const std::string& text, const std::string& line) { return text.find("\n" + line + "\n"); }

/// Both exports of one plan write every shared setting with the same value, each run in the table's order.
void expect_both_exports_agree(const ResolvedPlan& r) {
  const std::string megatron = r.exported(Framework::Megatron);
  const std::string nemo = r.exported(Framework::Nemo);
  std::map<McoreRun, std::size_t> megatron_after;
  std::map<McoreRun, std::size_t> nemo_after;
  for (const McoreSetting& s : settings_of(r)) {
    const std::size_t in_nemo = line_at(nemo, "  " + std::string(s.key) + ": " + s.config_value());
    ASSERT_NE(in_nemo, std::string::npos) << s.key << " in\n" << nemo;
    EXPECT_GE(in_nemo, nemo_after[s.run]) << s.key << " out of its run's order";
    nemo_after[s.run] = in_nemo + 1;
    if (const std::optional<std::string> argument = s.megatron_argument()) {
      const std::size_t in_megatron = line_at(megatron, "    " + *argument);
      ASSERT_NE(in_megatron, std::string::npos) << *argument << " in\n" << megatron;
      EXPECT_GE(in_megatron, megatron_after[s.run]) << s.key << " out of its run's order";
      megatron_after[s.run] = in_megatron + 1;
    } else {
      // An unset value, or a switch left at Megatron's default: no argument at all.
      for (const char* end : {" ", "\n"}) {
        EXPECT_EQ(megatron.find("\n    " + s.flag() + end), std::string::npos) << s.key << "\n" << megatron;
      }
    }
  }
}

TEST(MegatronCoreSettings, MegatronAndBridgeExportsCarryTheSameValues) {
  expect_both_exports_agree(moe_mla_plan());
  expect_both_exports_agree(moe_mla_plan("cpu_offloading_num_layers: 2\nattention_backend: unfused\n"));
  expect_both_exports_agree(moe_mla_plan("recompute_granularity: full\n"));
  expect_both_exports_agree(moe_mla_plan("recompute_granularity: selective\n"));
  expect_both_exports_agree(ResolvedPlan(testing::kDgxH100, testing::kLlama8b, spec_from("{}\n")));
}

}  // namespace
}  // namespace mpsim::interop
