#pragma once
/// Plan YAML ↔ PlanSpec/Plan. Accepts mpsim's names (docs/formats.md, "Plan"), SageMaker's (`partitions`,
/// `microbatches`, `pipeline: simple|interleaved`, `optimize`, `active_microbatches`,
/// `placement_strategy`) and Megatron's (`tensor_model_parallel_size`, `micro_batch_size`, ...).
/// docs/formats.md (section Plan) lists every name.
#include <filesystem>
#include <string>

#include "sim/core/yaml_field_fwd.h"
#include "sim/plan/plan.h"

namespace mpsim::plan {

/// Throws InputError.
[[nodiscard]] PlanSpec load_plan_spec(const Field& root);
[[nodiscard]] PlanSpec load_plan_file(const std::filesystem::path& path);

/// A complete plan in mpsim's own names; load_plan_spec() reads it back to the same Plan.
[[nodiscard]] std::string write_plan_yaml(const Plan& plan);

}  // namespace mpsim::plan
