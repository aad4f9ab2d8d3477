// The plan-field table's unit_cost column against the planner's unit-cost key: setting a field away
// from its default changes the key exactly when the table says the field changes a unit's cost, so a
// field that does cannot be added without the key holding it.
#include <gtest/gtest.h>

#include <string>

#include "planner/candidate.h"
#include "sim/core/yaml_field.h"
#include "sim/plan/plan_fields.h"
#include "sim/plan/plan_loader.h"

namespace mpsim::planner {
namespace {

plan::PlanSpec spec_of(std::string_view yaml) {
  return plan::load_plan_spec(
      YamlDocument::parse(yaml.empty() ? std::string("{}") : std::string(yaml), "plan.yaml").root());
}

TEST(PlanFields, TheUnitCostColumnIsWhatTheUnitCostKeyHolds) {
  for (const plan::PlanField& f : plan::kPlanFields) {
    const bool key_changes = unit_cost_key(spec_of(f.example_base)) != unit_cost_key(spec_of(f.example));
    EXPECT_EQ(key_changes, f.unit_cost) << f.path;
  }
}

}  // namespace
}  // namespace mpsim::planner
