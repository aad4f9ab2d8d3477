#include "sim/engine/training_step.h"

#include "sim/engine/cost_model.h"

namespace mpsim::engine {

training::TrainingStep training_step(const topology::Cluster& cluster, const model::Model& model,
                                     const plan::Plan& plan, const trace::Report& report) {
  training::TrainingStep step;
  step.model_name = model.name;
  step.seq_len = model.shape ? model.shape->seq_len : 0;
  step.global_batch = plan.global_batch;
  step.step_time = TimeNs::seconds(report.step_time_s);
  step.gpus = static_cast<int>(cluster.gpus().size());
  step.busy_fraction = 1 - report.bubble_fraction;
  for (const topology::DeviceId gpu : cluster.gpus()) {
    const Watts tdp = cluster.gpu_kind_of(gpu).tdp;
    if (tdp.in_watts() <= 0) {
      step.gpu_tdp = Watts::watts(0);  // one unknown TDP: no energy
      break;
    }
    step.gpu_tdp += tdp;
  }
  step.checkpoint_bytes = checkpoint_bytes(model, plan);
  return step;
}

}  // namespace mpsim::engine
