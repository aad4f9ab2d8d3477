// DeepSpeed's config JSON (docs/_pages/config-json.md, deepspeed/runtime/config.py): batch sizes,
// precision, ZeRO, the pipeline and AutoTP sections. The pipeline degree itself is PipelineModule's
// num_stages, given in Python; JSON has no comments, so docs/export.md says so.
#include <algorithm>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "interop/export/export.h"

namespace mpsim::interop {

namespace {

constexpr std::string_view kDeepSpeedTarget = "DeepSpeed";
using Json = nlohmann::ordered_json;

void check_deepspeed(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  if (p.virtual_stages > 1) {
    cannot_express(in, kDeepSpeedTarget, "virtual_stages",
                   "DeepSpeed's PipelineModule holds one stage per rank (no virtual stages); use virtual_stages 1 "
                   "and schedule 1f1b");
  }
  if (p.degrees[plan::Axis::Pipeline] > 1 && !plan::traits(p.schedule).deepspeed) {
    cannot_express(in, kDeepSpeedTarget, "schedule",
                   fmt::format("DeepSpeed's PipelineEngine runs its TrainSchedule, a non-interleaved 1F1B, not {}",
                               plan::to_string(p.schedule)));
  }
  if (p.degrees[plan::Axis::Pipeline] > 1 && p.zero >= 2) {
    cannot_express(in, kDeepSpeedTarget, "zero",
                   "DeepSpeed's PipelineEngine asserts that ZeRO-2 and ZeRO-3 are incompatible with pipeline "
                   "parallelism; use zero 0 or 1");
  }
  if (p.degrees[plan::Axis::Pipeline] > 1 && !is_uniform_split(p)) {
    cannot_express(in, kDeepSpeedTarget, "partition",
                   "PipelineModule splits the layers by a partition_method (uniform, parameters, type:regex), not by "
                   "given boundaries; use a balanced partition");
  }
  if (plan::is_fp8(p.precision)) {
    cannot_express(in, kDeepSpeedTarget, "precision",
                   fmt::format("DeepSpeed's config has no FP8 key ({} runs through Transformer Engine inside the "
                               "model); use bf16 or fp16",
                               plan::to_string(p.precision)));
  }
  if (p.degrees[plan::Axis::Context] > 1) {
    cannot_express(in, kDeepSpeedTarget, "context",
                   "DeepSpeed's config has no context-parallel (ring attention) key; Ulysses sequence parallelism is "
                   "set up in the model code");
  }
  if (p.sequence_parallel) {
    cannot_express(in, kDeepSpeedTarget, "sequence_parallel",
                   "DeepSpeed's AutoTP has no Megatron-style sequence parallelism key");
  }
  if (p.overlap_tensor_comm) {
    cannot_express(in, kDeepSpeedTarget, "overlap.tensor_comm",
                   "DeepSpeed's config has no tensor-parallel communication/GEMM overlap key");
  }
  if (p.degrees[plan::Axis::Expert] > 1) {
    cannot_express(in, kDeepSpeedTarget, "expert",
                   "the export writes no expert parallelism: DeepSpeed's AutoEP (expert_parallel.autoep_size) is in "
                   "its newest releases only, needs a preset model and takes expert_tensor_parallel_size 1; "
                   "DeepSpeed-MoE's ep_size is an argument of the model's MoE layers");
  }
  if (p.degrees[plan::Axis::ExpertTensor] != p.degrees[plan::Axis::Tensor] && in.model.shape && in.model.shape->moe) {
    cannot_express(in, kDeepSpeedTarget, "expert_tensor",
                   "AutoTP splits the experts as it splits every other linear layer (expert_tensor = tensor)");
  }
  if (p.expert_capacity_factor || p.pad_expert_input_to_capacity) {
    cannot_express(in, kDeepSpeedTarget, "moe_expert_capacity_factor",
                   "the capacity factor is an argument of the model's MoE layers, not a DeepSpeed config key");
  }
  if (plan::deduplicates_tokens(p.dispatcher)) {
    cannot_express(in, kDeepSpeedTarget, "moe_token_dispatcher_type",
                   "DeepSpeed-MoE exchanges tokens with all-to-alls; a flex dispatcher (DeepEP, HybridEP) is not a DeepSpeed config key");
  }
  if (p.precision_aware_optimizer) {
    cannot_express(in, kDeepSpeedTarget, "precision_aware_optimizer",
                   "the export writes DeepSpeed's fp32 master weights and moments; the precision-aware optimizer "
                   "(Transformer Engine's FusedAdam) is Megatron-Core's");
  }
  if (p.degrees[plan::Axis::DataReplica] > 1) {
    cannot_express(in, kDeepSpeedTarget, "shard_groups",
                   "the export writes ZeRO over all data-parallel ranks; hybrid sharding (shard_groups > 1) has no "
                   "key it writes");
  }
  if (p.activation_offload_layers > 0) {
    cannot_express(in, kDeepSpeedTarget, "activation_offload_layers",
                   "DeepSpeed offloads only checkpointed activations (activation_checkpointing.cpu_checkpointing, "
                   "with full recomputation), not the stashed activations of the first blocks");
  }
  if (p.recompute == plan::Recompute::Op ||
      (p.recompute == plan::Recompute::Full &&
       (p.recompute_method != model::RecomputeMethod::Uniform || p.recompute_num_layers != 1))) {
    cannot_express(in, kDeepSpeedTarget, "recompute",
                   "the export writes DeepSpeed's activation_checkpointing of every layer alone (recompute: full), "
                   "not a choice of layers or of ops");
  }
  if (p.recompute == plan::Recompute::Selective && !selective_is_flash_attention(p)) {
    cannot_express(in, kDeepSpeedTarget, "recompute",
                   "DeepSpeed's activation_checkpointing has no selective granularity (what is recomputed is the "
                   "model code's choice); use recompute: full or none");
  }
  if (p.zero == 0 && p.overlap_grad_reduce) {
    cannot_express(in, kDeepSpeedTarget, "overlap.grad_reduce",
                   "without ZeRO DeepSpeed reduces the gradients after the backward; overlap_comm applies to ZeRO "
                   "stages 1 to 3");
  }
  if (p.zero >= 1 && p.zero <= 2 && p.overlap_param_gather) {
    cannot_express(in, kDeepSpeedTarget, "overlap.param_gather",
                   "ZeRO-1 and ZeRO-2 all-gather the updated parameters after the optimizer step, not during the "
                   "next forward; ZeRO-3 prefetches them (zero 3)");
  }
  if (p.zero == 3 && p.overlap_grad_reduce != p.overlap_param_gather) {
    cannot_express(in, kDeepSpeedTarget, p.overlap_grad_reduce ? "overlap.param_gather" : "overlap.grad_reduce",
                   "ZeRO-3's overlap_comm overlaps both the gradient reduce-scatter and the parameter all-gather; set "
                   "overlap.grad_reduce and overlap.param_gather alike");
  }
  // DeepSpeed's PipeModelDataParallelTopology orders ranks model (tensor), data, pipe, fastest first.
  if (split_order(p, p.placement) != split_order(p, plan::kMegatronPlacement)) {
    cannot_express(in, kDeepSpeedTarget, "placement",
                   fmt::format("DeepSpeed's topology orders ranks tensor, data, pipeline (fastest first), not {}",
                               plan::to_string(p.placement)));
  }
}

}  // namespace

std::string export_deepspeed(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  check_deepspeed(in);
  Json config;
  // train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x data-parallel size.
  config["train_batch_size"] = p.global_batch;
  config["train_micro_batch_size_per_gpu"] = p.micro_batch;
  config["gradient_accumulation_steps"] = p.microbatches;
  const bool sixteen_bit = p.precision == plan::Precision::Bf16 || p.precision == plan::Precision::Fp16;
  if (p.precision == plan::Precision::Bf16) config["bf16"] = Json{{"enabled", true}};
  if (p.precision == plan::Precision::Fp16) config["fp16"] = Json{{"enabled", true}};
  if (sixteen_bit) {
    config["communication_data_type"] =
        p.grad_reduce_in_fp32 ? "fp32" : (p.precision == plan::Precision::Bf16 ? "bf16" : "fp16");
  }
  config["zero_optimization"] = Json{{"stage", p.zero},
                                     {"overlap_comm", p.overlap_grad_reduce || p.overlap_param_gather},
                                     {"contiguous_gradients", true}};
  const bool full = p.recompute == plan::Recompute::Full;
  if (p.degrees[plan::Axis::Pipeline] > 1) {
    Json pipeline{{"stages", p.degrees[plan::Axis::Pipeline]}};
    if (full) pipeline["activation_checkpoint_interval"] = 1;
    config["pipeline"] = pipeline;
  }
  if (p.degrees[plan::Axis::Tensor] > 1)
    config["tensor_parallel"] = Json{{"autotp_size", p.degrees[plan::Axis::Tensor]}};
  if (full) {
    config["activation_checkpointing"] = Json{{"partition_activations", p.distribute_saved_activations},
                                              {"cpu_checkpointing", false},
                                              {"contiguous_memory_optimization", false},
                                              {"number_checkpoints", nullptr},
                                              {"synchronize_checkpoint_boundary", false},
                                              {"profile", false}};
  }
  return config.dump(2) + "\n";
}

}  // namespace mpsim::interop
