#pragma once
/// A complete plan as a JSON object in the plan file's own schema (docs/formats.md, "Plan"): the
/// `plan` object of every JSON report (`simulate`, `execute`, `plan --json` and `plan check --json`).
/// JSON is YAML, so the object saved as a file is a plan file that load_plan_spec() reads back to the
/// same Plan. Unlike write_plan_yaml() it states every field, the microbatch count included.
#include <nlohmann/json_fwd.hpp>

#include "sim/plan/plan.h"

namespace mpsim::plan {

[[nodiscard]] nlohmann::ordered_json plan_json(const Plan& plan);

}  // namespace mpsim::plan
