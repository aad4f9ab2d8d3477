// Each framework's word for a recomputation mode (the columns of model::kRecomputeTraits): the exports
// write it and the imports read it back as the same mode.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/interop/interop_test_support.h"
#include "sim/core/yaml_field.h"
#include "interop/import/megatron_import.h"
#include "interop/import/torchtitan_import.h"

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
    const std::string toml = "[activation_checkpoint]\nmode = \"" + std::string(t.torchtitan) + "\"\n";
    if (t.torchtitan.empty()) {
      // No TorchTitan mode: its own word for the mode means something else there (a block in N, or per op),
      // which is read as the nearest mode with a note that says it is an approximation.
      const ImportedLaunch approximated =
          import_torchtitan("[activation_checkpoint]\nmode = \"" + std::string(t.name) + "\"\n", "job.toml",
                            {std::nullopt, nullptr, nullptr});
      EXPECT_EQ(approximated.notes.size(), 1u);
      continue;
    }
    EXPECT_EQ(recompute_of(import_torchtitan(toml, "job.toml", {std::nullopt, nullptr, nullptr})), t.kind);
    const std::string exported = plan_with(t).exported(Framework::TorchTitan);
    EXPECT_TRUE(contains(exported, "mode = \"" + std::string(t.torchtitan) + "\"")) << exported;
  }
}

}  // namespace
}  // namespace mpsim::interop
