// Each framework's word for a recomputation mode (the columns of model::kRecomputeTraits): the exports
// write it and the imports read it back as the same mode.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/interop/interop_test_support.h"
#include "sim/core/yaml_field.h"
#include "interop/import/megatron_import.h"
#include "interop/import/torchtitan_import.h"
#include "interop/export/megatron_core_settings.h"
#include "sim/core/input_error.h"

namespace mpsim::interop {
namespace {

using model::RecomputeTraits;

/// The recomputation an imported plan asks for.
model::Recompute recompute_of(const ImportedLaunch& imported) {
  return plan::load_plan_spec(YamlDocument::parse(imported.plan_yaml, "imported.yaml").root()).recompute;
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// Llama 3 8B on one DGX H100, TP 2 x PP 2, recomputing as `t` says, with the scores materialized (so
/// that selective recomputation is more than FlashAttention's own).
testing::ResolvedPlan plan_with(const RecomputeTraits& t) {
  return {testing::kDgxH100, testing::kLlama8b,
          testing::spec_from(
              "parallelism: { tensor: 2, pipeline: 2 }\nsequence_parallel: true\nattention: standard\nrecompute: " +
              std::string(t.name) + "\n")};
}

TEST(RecomputeWords, MegatronAndNemoWriteTheMegatronWordAndItReadsBack) {
  for (const RecomputeTraits& t : model::kRecomputeTraits) {
    SCOPED_TRACE(std::string(t.name));
    const testing::ResolvedPlan original = plan_with(t);
    if (megatron_recompute_error(original.plan)) {
      // A mode Megatron-Core has no word for (TorchTitan's per-op checkpointing) is refused at the field.
      for (const Framework f : {Framework::Megatron, Framework::Nemo}) {
        try {
          (void)original.exported(f);
          ADD_FAILURE() << "exported " << t.name;
        } catch (const InputError& e) {
          EXPECT_EQ(e.field(), "recompute");
        }
      }
      continue;
    }
    const std::string script = original.exported(Framework::Megatron);
    EXPECT_EQ(contains(script, "--recompute-granularity " + std::string(t.megatron)), !t.megatron.empty()) << script;
    EXPECT_EQ(contains(script, "--recompute-granularity"), !t.megatron.empty()) << script;
    EXPECT_EQ(contains(script, "--recompute-method uniform"), t.whole_layer) << script;
    EXPECT_EQ(recompute_of(import_megatron(script, "launch.sh", std::nullopt, false)), t.kind) << script;
    const std::string nemo = original.exported(Framework::Nemo);
    EXPECT_TRUE(contains(nemo, "recompute_granularity: " + (t.megatron.empty() ? "null" : std::string(t.megatron))))
        << nemo;
  }
}

TEST(RecomputeWords, TorchTitanWritesItsModeAndItReadsBack) {
  for (const RecomputeTraits& t : model::kRecomputeTraits) {
    SCOPED_TRACE(std::string(t.name));
    if (t.torchtitan.empty()) {
      // No TorchTitan mode (Megatron's selective recomputation of the scores; TorchTitan's selective mode
      // is every nth block or per op): the export refuses it where it is more than FlashAttention's own.
      try {
        (void)plan_with(t).exported(Framework::TorchTitan);
        ADD_FAILURE() << "exported " << t.name;
      } catch (const InputError& e) {
        EXPECT_EQ(e.field(), "recompute");
      }
      continue;
    }
    std::string toml = "[activation_checkpoint]\nmode = \"" + std::string(t.torchtitan) + "\"\n";
    if (!t.torchtitan_option.empty()) toml += "selective_ac_option = \"" + std::string(t.torchtitan_option) + "\"\n";
    const ImportedLaunch imported = import_torchtitan(toml, "job.toml", {std::nullopt, nullptr, nullptr});
    EXPECT_EQ(recompute_of(imported), t.kind);
    EXPECT_TRUE(imported.notes.empty());
    const std::string exported = plan_with(t).exported(Framework::TorchTitan);
    EXPECT_TRUE(contains(exported, "mode = \"" + std::string(t.torchtitan) + "\"")) << exported;
    EXPECT_EQ(contains(exported, "selective_ac_option = \"" + std::string(t.torchtitan_option) + "\""),
              !t.torchtitan_option.empty())
        << exported;
  }
}

/// TorchTitan's every-nth-block option and Megatron-LM's methods, from each framework's launch and back.
TEST(RecomputeWords, FullRecomputationsChoiceOfLayersRoundTrips) {
  // TorchTitan: selective_ac_option N is the plan's every-N; 0 and 1 wrap every block (mode full).
  for (const std::string option : {"2", "3"}) {
    const std::string toml = "[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"" + option + "\"\n";
    const ImportedLaunch imported = import_torchtitan(toml, "job.toml", {std::nullopt, nullptr, nullptr});
    const plan::PlanSpec spec = plan::load_plan_spec(YamlDocument::parse(imported.plan_yaml, "imported.yaml").root());
    EXPECT_EQ(spec.recompute, model::Recompute::Full);
    EXPECT_EQ(spec.recompute_method, model::RecomputeMethod::Every);
    EXPECT_EQ(spec.recompute_num_layers, std::stoi(option));
    const testing::ResolvedPlan plan{testing::kDgxH100, testing::kLlama8b,
                                     testing::spec_from("recompute: selective\nselective_ac_option: " + option + "\n")};
    EXPECT_TRUE(contains(plan.exported(Framework::TorchTitan), "selective_ac_option = \"" + option + "\""));
  }
  EXPECT_EQ(recompute_of(import_torchtitan("[activation_checkpoint]\nselective_ac_option = \"1\"\n", "job.toml",
                                           {std::nullopt, nullptr, nullptr})),
            model::Recompute::Full);
  // Megatron-LM: --recompute-method and --recompute-num-layers as written, and back.
  for (const std::string method : {"uniform", "block"}) {
    const testing::ResolvedPlan plan{
        testing::kDgxH100, testing::kLlama8b,
        testing::spec_from("parallelism: { pipeline: 2 }\nrecompute: full\nrecompute_method: " + method +
                           "\nrecompute_num_layers: 2\n")};
    const std::string script = plan.exported(Framework::Megatron);
    EXPECT_TRUE(contains(script, "--recompute-method " + method)) << script;
    EXPECT_TRUE(contains(script, "--recompute-num-layers 2")) << script;
    const std::string nemo = plan.exported(Framework::Nemo);
    EXPECT_TRUE(contains(nemo, "recompute_method: " + method)) << nemo;
    EXPECT_TRUE(contains(nemo, "recompute_num_layers: 2")) << nemo;
    const plan::PlanSpec back = plan::load_plan_spec(
        YamlDocument::parse(import_megatron(script, "launch.sh", std::nullopt, false).plan_yaml, "imported.yaml").root());
    EXPECT_EQ(back.recompute, model::Recompute::Full);
    EXPECT_EQ(model::to_string(back.recompute_method), method);
    EXPECT_EQ(back.recompute_num_layers, 2);
    // TorchTitan has neither: refused at the field.
    try {
      (void)plan.exported(Framework::TorchTitan);
      ADD_FAILURE() << "exported " << method;
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "recompute_method");
    }
  }
  // DeepSpeed and SageMaker write every layer checkpointed or none: any choice of layers or ops is refused.
  for (const std::string yaml : {"recompute: full\nrecompute_num_layers: 2\n", "recompute: selective\nselective_ac_option: 2\n",
                                 "recompute: op\n"}) {
    const testing::ResolvedPlan chosen{testing::kDgxH100, testing::kLlama8b, testing::spec_from(yaml)};
    for (const Framework f : {Framework::DeepSpeed, Framework::SageMaker}) {
      try {
        (void)chosen.exported(f);
        ADD_FAILURE() << "exported " << yaml;
      } catch (const InputError& e) {
        EXPECT_EQ(e.field(), "recompute") << yaml;
      }
    }
  }
  // Megatron has no every-nth: refused.
  const testing::ResolvedPlan every{testing::kDgxH100, testing::kLlama8b,
                                    testing::spec_from("recompute: selective\nselective_ac_option: 2\n")};
  try {
    (void)every.exported(Framework::Megatron);
    ADD_FAILURE() << "exported every-2 to Megatron-LM";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "recompute");
  }
}

}  // namespace
}  // namespace mpsim::interop
