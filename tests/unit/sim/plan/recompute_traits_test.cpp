// The recomputation tables (sim/model/recompute.h) against the plan file: every word a row gives
// reads back as that row's mode or module, and the checks that read a column hold to it.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "plan_test_support.h"
#include "sim/model/recompute.h"

namespace mpsim::plan {
namespace {

using model::RecomputeModuleTraits;
using model::RecomputeTraits;
using testing::spec_from;

TEST(RecomputeTraits, EveryWordReadsBackAsItsMode) {
  std::set<std::string_view> names;
  for (const RecomputeTraits& t : model::kRecomputeTraits) {
    SCOPED_TRACE(std::string(t.name));
    EXPECT_TRUE(names.insert(t.name).second);
    EXPECT_EQ(model::to_string(t.kind), t.name);
    EXPECT_EQ(&model::traits(t.kind), &t);
    EXPECT_EQ(spec_from("recompute: " + std::string(t.name) + "\n").recompute, t.kind);
    // The Megatron-named key takes Megatron's word; a mode Megatron turns on by leaving the flag out
    // has none.
    if (!t.megatron.empty()) {
      EXPECT_EQ(spec_from("recompute_granularity: " + std::string(t.megatron) + "\n").recompute, t.kind);
    } else {
      EXPECT_THROW((void)spec_from("recompute_granularity: " + std::string(t.name) + "\n"), InputError);
    }
  }
  EXPECT_EQ(names.size(), model::kRecomputeNames.size());
  EXPECT_THROW((void)spec_from("recompute: everything\n"), InputError);
}

TEST(RecomputeTraits, ModulesAreAcceptedOnlyWhereTheModeTakesThem) {
  for (const RecomputeTraits& t : model::kRecomputeTraits) {
    SCOPED_TRACE(std::string(t.name));
    const std::string yaml = "recompute: " + std::string(t.name) + "\nrecompute_modules: [mlp]\n";
    const std::string error = testing::check_error(yaml, "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml");
    EXPECT_EQ(error.find("recompute_modules apply to selective") == std::string::npos, t.takes_modules) << error;
  }
}

TEST(RecomputeModuleTraits, EveryModuleWordReadsBackAndIsWrittenAlone) {
  std::set<std::string_view> names;
  for (const RecomputeModuleTraits& t : model::kRecomputeModuleTraits) {
    SCOPED_TRACE(std::string(t.name));
    EXPECT_TRUE(names.insert(t.name).second);
    const PlanSpec s = spec_from("recompute: selective\nrecompute_modules: [" + std::string(t.name) + "]\n");
    model::RecomputeModules alone{0};
    alone.add(t.kind);
    EXPECT_EQ(s.recompute_modules, alone);
    const auto written = model::module_names(s.recompute_modules);
    ASSERT_EQ(written.size(), 1u);
    EXPECT_EQ(written[0], t.name);
  }
  // A set is written in the table's order, whatever order it was read in.
  const PlanSpec s = spec_from("recompute: selective\nrecompute_modules: [shared_experts, core_attn, moe]\n");
  const auto written = model::module_names(s.recompute_modules);
  ASSERT_EQ(written.size(), 3u);
  EXPECT_EQ(written[0], "core_attn");
  EXPECT_EQ(written[1], "moe");
  EXPECT_EQ(written[2], "shared_experts");
}

}  // namespace
}  // namespace mpsim::plan
