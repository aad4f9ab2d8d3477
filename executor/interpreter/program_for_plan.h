#pragma once
/// The Program a plan runs, made with the same generator and passes as the simulator's, and the
/// gradient bytes its collectives were sized from (schedule::chunk_gradient_bytes).
#include <vector>

#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/schedule/program.h"

namespace mpsim::executor {

/// schedule::plan_program (the simulator's build) with `gradient_bytes`, Megatron's default bucket
/// unless `bucket` is positive, and the simulator's default of no overlap.
[[nodiscard]] schedule::Program program_for_plan(const model::Model& model, const plan::Plan& plan,
                                                 const std::vector<std::vector<Bytes>>& gradient_bytes,
                                                 Bytes bucket = Bytes{});

}  // namespace mpsim::executor
