#pragma once
/// The Program a plan runs, made with the same generator and passes as the simulator's, and the
/// gradient bytes its collectives were sized from (schedule::chunk_gradient_split): the dense
/// gradients' buckets over the data group, the routed experts' over the expert-data group.

#include <optional>
#include <string>

#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/program.h"

namespace mpsim::executor {

/// schedule::plan_program (the simulator's build) of data-parallel replica `replica`'s plan
/// (plan::replica_plan: its own microbatch count when the shares are uneven) with `gradient_bytes`,
/// Megatron's default bucket unless `bucket` is positive, and the simulator's default of no overlap. Throws
/// std::invalid_argument for what the executor does not run: recompute_modules, activation
/// offloading, the Muon optimizer, a capacity factor, and Ulysses over more ranks than heads.
[[nodiscard]] schedule::Program program_for_plan(const model::Model& model, const plan::Plan& plan,
                                                 const schedule::ChunkGradientBytes& gradient_bytes,
                                                 Bytes bucket = Bytes{}, int replica = 0);

/// "the plan needs N ranks (tensor x context x pipeline x data) but the job has `world`", or nothing
/// when the job has the plan's ranks.
[[nodiscard]] std::optional<std::string> world_size_mismatch(const plan::Plan& plan, int world);

}  // namespace mpsim::executor
