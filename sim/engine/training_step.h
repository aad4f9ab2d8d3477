#pragma once
/// The numbers a simulated step gives the training estimate (sim/training/training_request.h).
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"
#include "sim/trace/report.h"
#include "sim/training/training_request.h"

namespace mpsim::engine {

/// `report`'s step of `plan` on `cluster`, every GPU of which is the job's: the step time, the GPUs'
/// busy share (the report's idle share, complemented), their summed TDP (zero when one is unknown),
/// the tokens per step (global batch x the model's sequence length) and one checkpoint's bytes
/// (checkpoint_bytes in cost_model.h).
[[nodiscard]] training::TrainingStep training_step(const topology::Cluster& cluster, const model::Model& model,
                                                   const plan::Plan& plan, const trace::Report& report);

}  // namespace mpsim::engine
