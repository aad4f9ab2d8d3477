// SageMaker model parallelism v1 (smdistributed.modelparallel): the `distribution` argument of the
// PyTorch estimator, with the `parameters` of the SDK's smd_model_parallel_general.rst. Only v1 has
// pipeline parallelism (v2 is FSDP with tensor, context and expert parallelism).
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "interop/export/export.h"

namespace mpsim::interop {

namespace {

constexpr std::string_view kSageMakerTarget = "SageMaker model parallelism";
using Json = nlohmann::ordered_json;

/// placement_strategy: the D, P, T letters slowest first (the right-most letter's ranks are
/// adjacent), "cluster" for DPT and "spread" for TPD, as the plan loader reads them back.
std::string placement_strategy(const plan::Plan& p) {
  std::string letters;
  for (const plan::Axis a : plan::complete_order(p.placement)) {
    if (a == plan::Axis::Tensor) letters.insert(letters.begin(), 'T');
    if (a == plan::Axis::Pipeline) letters.insert(letters.begin(), 'P');
    if (a == plan::Axis::Data) letters.insert(letters.begin(), 'D');
  }
  if (letters == "DPT") return "cluster";
  if (letters == "TPD") return "spread";
  return letters;
}

void check_sagemaker(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  if (p.degrees[plan::Axis::Context] > 1) {
    cannot_express(in, kSageMakerTarget, "context", "SMP v1 has no context parallelism (SMP v2 has, without a pipeline)");
  }
  if (p.degrees[plan::Axis::Expert] > 1) {
    cannot_express(in, kSageMakerTarget, "expert", "SMP v1 has no expert parallelism (SMP v2 has, without a pipeline)");
  }
  if (p.virtual_stages > 1) {
    cannot_express(in, kSageMakerTarget, "virtual_stages",
                   "SMP v1 places one partition per pipeline rank; its `interleaved` pipeline is a schedule, not "
                   "virtual stages");
  }
  if (p.degrees[plan::Axis::Pipeline] > 1 && plan::traits(p.schedule).sagemaker.empty()) {
    cannot_express(in, kSageMakerTarget, "schedule",
                   fmt::format("SMP v1's pipeline is \"simple\" (gpipe) or \"interleaved\" "
                               "(sagemaker-interleaved), not {}",
                               plan::to_string(p.schedule)));
  }
  if (plan::is_fp8(p.precision)) {
    cannot_express(in, kSageMakerTarget, "precision",
                   fmt::format("SMP v1 has no FP8 parameter ({}); use bf16 or fp16", plan::to_string(p.precision)));
  }
  if (p.sequence_parallel) {
    cannot_express(in, kSageMakerTarget, "sequence_parallel", "SMP v1's tensor parallelism has no sequence parallelism");
  }
  if (p.overlap_tensor_comm) {
    cannot_express(in, kSageMakerTarget, "overlap.tensor_comm",
                   "SMP v1 has no tensor-parallel communication/GEMM overlap parameter");
  }
  if (p.zero == 2) {
    cannot_express(in, kSageMakerTarget, "zero",
                   "SMP v1 shards the optimizer state (shard_optimizer_state, zero 1) or everything "
                   "(sharded_data_parallel_degree, zero 3), not gradients alone; use zero 1 or 3");
  }
  if (p.degrees[plan::Axis::DataReplica] > 1 && p.zero != 3) {
    cannot_express(in, kSageMakerTarget, "shard_groups",
                   "SMP v1 splits the data-parallel ranks into groups only for sharded data parallelism (zero 3)");
  }
  if (p.recompute == plan::Recompute::Full || p.recompute == plan::Recompute::Op ||
      (p.recompute == plan::Recompute::Selective && !selective_is_flash_attention(p))) {
    cannot_express(in, kSageMakerTarget, "recompute",
                   "SMP v1 checkpoints activations through smp.set_activation_checkpointing(module) in the training "
                   "script, not a parameter; recompute there and export with recompute: none");
  }
  if (p.activation_offload_layers > 0) {
    cannot_express(in, kSageMakerTarget, "activation_offload_layers",
                   "SMP v1's offload_activations moves checkpointed activations only (with activation "
                   "checkpointing), not the stashed activations of the first blocks");
  }
  if (p.expert_capacity_factor || p.pad_expert_input_to_capacity) {
    cannot_express(in, kSageMakerTarget, "moe_expert_capacity_factor", "SMP v1 has no MoE parameters");
  }
  if (plan::deduplicates_tokens(p.dispatcher)) {
    cannot_express(in, kSageMakerTarget, "moe_token_dispatcher_type", "SMP v1 has no MoE parameters");
  }
  if (p.optimizer != plan::Optimizer::Adam) {
    cannot_express(in, kSageMakerTarget, "optimizer", "the training script builds the optimizer; SMP v1's parameters name none");
  }
  if (p.precision_aware_optimizer) {
    cannot_express(in, kSageMakerTarget, "precision_aware_optimizer",
                   "SMP v1 keeps fp32 master weights and moments (Transformer Engine's precision-aware FusedAdam is "
                   "Megatron-Core's)");
  }
}

}  // namespace

std::string export_sagemaker(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  check_sagemaker(in);
  Json parameters;
  parameters["pipeline_parallel_degree"] = p.degrees[plan::Axis::Pipeline];
  parameters["microbatches"] = p.microbatches;
  if (p.degrees[plan::Axis::Pipeline] > 1) {
    parameters["pipeline"] = std::string(plan::traits(p.schedule).sagemaker);
    if (plan::traits(p.schedule).rule == plan::ShapeRule::ActiveCap) {
      parameters["active_microbatches"] = p.active_microbatches;
    }
  }
  parameters["tensor_parallel_degree"] = p.degrees[plan::Axis::Tensor];
  parameters["ddp"] = p.degrees[plan::Axis::Data] > 1 || p.degrees[plan::Axis::Tensor] > 1;
  parameters["placement_strategy"] = placement_strategy(p);
  parameters["optimize"] = std::string(plan::to_string(p.optimize));
  if (p.zero == 1) parameters["shard_optimizer_state"] = true;
  if (p.zero == 3)
    parameters["sharded_data_parallel_degree"] = p.degrees[plan::Axis::Data] / p.degrees[plan::Axis::DataReplica];
  if (p.precision == plan::Precision::Fp16) parameters["fp16"] = true;
  if (p.precision == plan::Precision::Bf16) parameters["bf16"] = true;

  Json distribution;
  distribution["smdistributed"]["modelparallel"] = Json{{"enabled", true}, {"parameters", parameters}};
  distribution["mpi"] = Json{{"enabled", true},
                             {"processes_per_host", in.shape.gpus_per_node},
                             {"custom_mpi_options", "--mca btl_vader_single_copy_mechanism none "}};
  return distribution.dump(2) + "\n";
}

}  // namespace mpsim::interop
