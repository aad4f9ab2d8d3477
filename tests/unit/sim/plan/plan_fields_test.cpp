// The plan-field table against the loader that reads by it: every row's example is read as that
// field, every degree's spelling as its axis, and no key names two fields.
#include "sim/plan/plan_fields.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/core/yaml_field.h"
#include "sim/plan/plan_loader.h"

namespace mpsim::plan {
namespace {

PlanSpec field_spec_of(std::string_view yaml) {
  return load_plan_spec(YamlDocument::parse(yaml.empty() ? std::string("{}") : std::string(yaml), "plan.yaml").root());
}

std::string canonical_name(const PlanField& f) { return std::string(f.shorthand.empty() ? f.path : f.shorthand); }

TEST(PlanFields, EveryExampleIsReadAsItsField) {
  for (const PlanField& f : kPlanFields) {
    const PlanSpec base = field_spec_of(f.example_base);
    const PlanSpec changed = field_spec_of(f.example);
    EXPECT_FALSE(base.origins.contains(canonical_name(f))) << f.path;
    EXPECT_TRUE(changed.origins.contains(canonical_name(f))) << f.path;
    EXPECT_FALSE(static_cast<const PlanSettings&>(base) == static_cast<const PlanSettings&>(changed) &&
                 base.unwritten == changed.unwritten && base.global_batch == changed.global_batch &&
                 base.microbatches == changed.microbatches && base.partition == changed.partition &&
                 base.precision == changed.precision && base.active_microbatches == changed.active_microbatches &&
                 base.microbatch_group_size == changed.microbatch_group_size &&
                 base.zb_memory_limit == changed.zb_memory_limit)
        << f.path << " reads into nothing";
  }
}

TEST(PlanFields, EveryDegreeIsReadAsItsAxisUnderEachSpelling) {
  for (const PlanField& f : kPlanFields) {
    if (!f.axis) continue;
    for (const std::string_view spelling : f.spellings) {
      if (spelling.empty()) continue;
      const PlanSpec spec = field_spec_of(std::string(spelling) + ": 4");
      EXPECT_EQ(spec.written(*f.axis), 4) << spelling;
      EXPECT_TRUE(spec.origins.contains(canonical_name(f))) << spelling;
      // Given under two of its names, the field is refused.
      EXPECT_THROW((void)field_spec_of(std::string(spelling) + ": 4\n" + std::string(f.example)), InputError)
          << spelling;
    }
  }
}

TEST(PlanFields, NoKeyNamesTwoFields) {
  std::set<std::string_view> keys;
  for (const PlanField& f : kPlanFields) {
    EXPECT_TRUE(keys.insert(f.path).second) << f.path;
    for (const std::string_view spelling : f.spellings) {
      if (!spelling.empty()) {
        EXPECT_TRUE(keys.insert(spelling).second) << spelling;
      }
    }
  }
  for (const PlanField& f : kPlanFields) {
    if (!f.replaces.empty()) {
      EXPECT_NE(plan_field(f.replaces), nullptr) << f.path;
    }
  }
}

// docs/formats.md's plan section names every key a plan file may hold, as `key` or `key: values`.
TEST(PlanFields, EveryKeyIsDocumented) {
  const std::string formats = read_text_file(std::string(MPSIM_SOURCE_DIR) + "/docs/formats.md");
  const auto documented = [&](std::string_view key) {
    const std::string quoted = "`" + std::string(key);
    return formats.find(quoted + "`") != std::string::npos || formats.find(quoted + ":") != std::string::npos;
  };
  for (const PlanField& f : kPlanFields) {
    EXPECT_TRUE(documented(f.path)) << f.path;
    for (const std::string_view spelling : f.spellings) {
      if (!spelling.empty()) {
        EXPECT_TRUE(documented(spelling)) << spelling;
      }
    }
  }
}

TEST(PlanFields, AKeyNotInTheTableIsRefused) {
  try {
    (void)field_spec_of("tensor_paralel_size: 2\n");
    FAIL() << "a misspelt key was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "tensor_paralel_size");
    EXPECT_NE(std::string(e.message()).find("tensor_model_parallel_size"), std::string::npos) << e.message();
  }
}

}  // namespace
}  // namespace mpsim::plan
