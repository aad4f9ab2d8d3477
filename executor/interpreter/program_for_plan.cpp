#include "executor/interpreter/program_for_plan.h"

#include <stdexcept>

#include <fmt/format.h>

#include "sim/plan/replica_share.h"
#include "sim/schedule/passes.h"

namespace mpsim::executor {

schedule::Program program_for_plan(const model::Model& model, const plan::Plan& plan,
                                   const schedule::ChunkGradientBytes& gradient_bytes, Bytes bucket, int replica) {
  // Ulysses gives each context rank whole heads of its tensor rank's share.
  if (plan.degrees[plan::Axis::Context] > 1 && plan.context_comm == plan::ContextComm::AllToAll && model.shape &&
      model.shape->heads % (plan.degrees[plan::Axis::Context] * plan.degrees[plan::Axis::Tensor]) != 0) {
    throw std::invalid_argument(
        fmt::format("cp_comm_type a2a splits heads over context x tensor: {} x {} must divide "
                    "the model's {} heads",
                    plan.degrees[plan::Axis::Context], plan.degrees[plan::Axis::Tensor], model.shape->heads));
  }
  // The executor's blocks recompute the attention scores (selective) or everything (full), not modules.
  if (plan.recompute == model::Recompute::Selective && plan.recompute_modules != model::RecomputeModules{}) {
    throw std::invalid_argument(
        "the executor's selective recomputation recomputes the attention scores (core_attn); other "
        "recompute_modules are simulated only");
  }
  // The executor's full recomputation replays a whole chunk from its input (executor/net/network.cpp), not
  // a choice of layers or of ops.
  if (plan.recompute == model::Recompute::Op) {
    throw std::invalid_argument("the executor has no per-op checkpointing; recompute: op is simulated only");
  }
  if (plan.recompute == model::Recompute::Full &&
      (plan.recompute_method != model::RecomputeMethod::Uniform || plan.recompute_num_layers != 1)) {
    throw std::invalid_argument(
        "the executor's full recomputation replays whole chunks; recompute_method and recompute_num_layers are "
        "simulated only");
  }
  // The executor's tensor ranks keep a chunk's input as the chunk received it.
  if (plan.distribute_saved_activations) {
    throw std::invalid_argument(
        "the executor keeps each chunk's input whole on every tensor rank; distribute_saved_activations is "
        "simulated only");
  }
  // The executor keeps every activation on the device.
  if (plan.activation_offload_layers > 0) {
    throw std::invalid_argument("the executor keeps activations on the device; activation_offload_layers is simulated only");
  }
  // The executor's optimizers are SGD and Adam; Muon's orthogonalised update is simulated only.
  if (plan.optimizer == plan::Optimizer::Muon) {
    throw std::invalid_argument("the executor steps with SGD or Adam; optimizer muon is simulated only");
  }
  // The executor routes every token (dropless); a capacity factor is simulated only.
  if (plan.expert_capacity_factor) {
    throw std::invalid_argument("the executor's experts are dropless; moe_expert_capacity_factor is simulated only");
  }
  // The executor's experts exchange every token copy all-to-all (MPI, NCCL's grouped sends).
  if (plan::deduplicates_tokens(plan.dispatcher)) {
    throw std::invalid_argument(
        "the executor exchanges tokens with all-to-alls; moe_token_dispatcher_type flex is simulated only");
  }
  schedule::GradientSync sync;
  sync.gradient_bytes = gradient_bytes.dense;
  // As the simulator: experts without replicas of their own (expert data 1) have nothing to reduce.
  if (schedule::reduces_expert_gradients(plan)) sync.expert_gradient_bytes = gradient_bytes.experts;
  sync.bucket_size = bucket.count() > 0 ? bucket : schedule::default_gradient_bucket(plan, model.dtype_bytes);
  sync.overlap = plan.overlap_grad_reduce;
  // Uneven shares: the replica's own count, as the simulator builds each replica class's program. The
  // gradient buckets are the whole plan's, so every replica's collectives pair up.
  return schedule::plan_program(model, plan::replica_plan(plan, replica), std::move(sync));
}

std::optional<std::string> world_size_mismatch(const plan::Plan& plan, int world) {
  if (plan.gpus() == world) return std::nullopt;
  return fmt::format("the plan needs {} ranks (tensor {} x context {} x pipeline {} x data {}) but the job has {}",
                     plan.gpus(), plan.degrees[plan::Axis::Tensor], plan.degrees[plan::Axis::Context],
                     plan.degrees[plan::Axis::Pipeline], plan.degrees[plan::Axis::Data], world);
}

}  // namespace mpsim::executor
