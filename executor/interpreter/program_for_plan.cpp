#include "executor/interpreter/program_for_plan.h"

#include <algorithm>

#include "sim/schedule/passes.h"

namespace mpsim::executor {

schedule::Program program_for_plan(const model::Model& model, const plan::Plan& plan,
                                   const std::vector<std::vector<Bytes>>& gradient_bytes,
                                   Bytes bucket) {
  schedule::GradientSync sync;
  sync.gradient_bytes = gradient_bytes;
  sync.bucket_size = bucket.count() > 0 ? bucket : schedule::default_gradient_bucket(
      plan.data, schedule::gradient_bytes_per_parameter(plan.grad_reduce_in_fp32, model.dtype_bytes));
  sync.overlap = plan.overlap_grad_reduce;
  return schedule::plan_program(model, plan, std::move(sync));
}

}  // namespace mpsim::executor
