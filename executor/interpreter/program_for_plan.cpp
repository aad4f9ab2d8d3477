#include "executor/interpreter/program_for_plan.h"

#include <algorithm>
#include <stdexcept>

#include "sim/schedule/passes.h"

namespace mpsim::executor {

schedule::Program program_for_plan(const model::Model& model, const plan::Plan& plan,
                                   const std::vector<std::vector<Bytes>>& gradient_bytes,
                                   Bytes bucket) {
  // The executor's layers keep whole weights and reduce gradients in the step's sync; ZeRO-3's
  // per-layer gathers and reduce-scatters are simulated only.
  if (plan.zero >= 3 && plan.data > 1) {
    throw std::invalid_argument("the executor runs ZeRO stages 0-2; ZeRO 3 (per-layer weight gathers) is simulated only");
  }
  if (plan.context > 1) {
    throw std::invalid_argument("the executor's attention holds whole sequences; context parallelism is simulated only");
  }
  schedule::GradientSync sync;
  sync.gradient_bytes = gradient_bytes;
  sync.bucket_size = bucket.count() > 0 ? bucket : schedule::default_gradient_bucket(plan, model.dtype_bytes);
  sync.overlap = plan.overlap_grad_reduce;
  return schedule::plan_program(model, plan, std::move(sync));
}

}  // namespace mpsim::executor
