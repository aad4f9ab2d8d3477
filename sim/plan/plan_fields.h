#pragma once
/// The plan file's fields, one row each: where a field stands in the file, the names other tools give
/// it, whether it is a parallel degree, and whether it changes what one unit of work costs. The plan
/// loader accepts exactly these keys and reads every degree under each of its spellings from here;
/// `--set plan.<field>` replaces a field under all its spellings from here; the planner's unit-cost key
/// is checked against the `unit_cost` column (tests/unit/planner/plan_fields_cost_test.cpp).
#include <array>
#include <optional>
#include <string_view>

#include "sim/plan/axis.h"

namespace mpsim::plan {

struct PlanField {
  /// Where the file holds it: a top-level key, or `block.key` ("parallelism.tensor").
  std::string_view path;
  /// What `--set plan.<shorthand>=...` also accepts; empty: only the path.
  std::string_view shorthand;
  /// The same decision under other tools' top-level names (Megatron-Core's, SageMaker's, TorchTitan's);
  /// a file that gives two of them is refused.
  std::array<std::string_view, 4> spellings{};
  /// Another field's path that setting this one makes obsolete (the microbatch count and the global batch
  /// follow from each other).
  std::string_view replaces;
  /// A parallel degree: read as this axis under every spelling.
  std::optional<Axis> axis;
  /// The planner's UnitCostKey holds it: candidates that differ in it get their own unit costs (a field
  /// that changes a unit's cost and that the search varies must be here, or cached costs go stale).
  /// Fields a search holds fixed (recompute_modules, cp_comm_type, routing and capacity) are priced with
  /// their defaults in the bounds, which a candidate's full simulation then replaces.
  bool unit_cost = false;
  /// For tests: a plan that sets it away from its default, and the same plan without it.
  std::string_view example;
  std::string_view example_base;
};

// clang-format off
inline constexpr PlanField kPlanFields[] = {
    {"parallelism.tensor", "tensor", {"tensor_parallel_degree", "tensor_model_parallel_size"}, "", Axis::Tensor, true,
     "parallelism: { tensor: 2 }", ""},
    {"parallelism.pipeline", "pipeline", {"partitions", "pipeline_parallel_degree", "pipeline_model_parallel_size"}, "",
     Axis::Pipeline, false, "parallelism: { pipeline: 2 }", ""},
    {"parallelism.data", "data", {"data_parallel_size"}, "", Axis::Data, false, "parallelism: { data: 2 }", ""},
    {"parallelism.context", "context", {"context_parallel_size"}, "", Axis::Context, true,
     "parallelism: { context: 2 }", ""},
    {"parallelism.expert", "expert", {"expert_model_parallel_size"}, "", Axis::Expert, true,
     "parallelism: { expert: 2 }", ""},
    {"parallelism.expert_tensor", "expert_tensor", {"expert_tensor_parallel_size"}, "", Axis::ExpertTensor, true,
     "parallelism: { tensor: 2, expert_tensor: 1 }", "parallelism: { tensor: 2 }"},
    {"parallelism.virtual_stages", "virtual_stages", {"virtual_pipeline_model_parallel_size"}, "", {}, false,
     "parallelism: { virtual_stages: 2 }", ""},
    {"batch.global", "global_batch", {"global_batch_size"}, "batch.microbatches", {}, false, "batch: { global: 8 }", ""},
    {"batch.micro", "micro_batch", {"micro_batch_size"}, "", {}, true, "batch: { micro: 2 }", ""},
    {"batch.microbatches", "microbatches", {"microbatches"}, "batch.global", {}, false, "batch: { microbatches: 8 }", ""},
    {"schedule", "", {"pipeline"}, "", {}, true, "schedule: dualpipe", ""},
    {"partition", "", {}, "", {}, false, "partition: [0, 2, 4]", ""},
    {"recompute", "", {"recompute_granularity"}, "", {}, true, "recompute: full", ""},
    {"recompute_modules", "", {}, "", {}, false, "recompute: selective\nrecompute_modules: [mlp]", "recompute: selective"},
    {"sequence_parallel", "", {}, "", {}, true, "sequence_parallel: true", ""},
    {"precision", "", {"fp8", "fp8_recipe", "bf16", "fp16"}, "", {}, true, "precision: fp8", ""},
    {"attention", "", {"attention_backend", "use_flash_attn"}, "", {}, true, "attention: standard", ""},
    {"attention_kernel", "", {}, "", {}, true, "attention_kernel: fa2", ""},
    {"overlap.tensor_comm", "overlap.tensor_comm", {"tp_comm_overlap"}, "", {}, true,
     "overlap: { tensor_comm: true }", ""},
    {"overlap.grad_reduce", "overlap.grad_reduce", {"overlap_grad_reduce"}, "", {}, false,
     "overlap: { grad_reduce: true }", ""},
    {"overlap.param_gather", "overlap.param_gather", {"overlap_param_gather"}, "", {}, false,
     "overlap: { param_gather: true }", ""},
    {"overlap.moe_expert_comm", "overlap.moe_expert_comm", {"overlap_moe_expert_parallel_comm"}, "", {}, false,
     "overlap: { moe_expert_comm: true }", ""},
    {"grad_reduce_in_fp32", "", {"accumulate_allreduce_grads_in_fp32"}, "", {}, false, "grad_reduce_in_fp32: false", ""},
    {"fp8_param_gather", "", {"fp8_params"}, "", {}, false, "fp8_param_gather: true", ""},
    {"zero", "", {"use_distributed_optimizer"}, "", {}, false, "zero: 3", ""},
    {"shard_groups", "", {"num_distributed_optimizer_instances", "data_parallel_replicate_degree"}, "",
     Axis::DataReplica, false, "shard_groups: 2", ""},
    {"optimizer", "", {}, "", {}, false, "optimizer: muon", ""},
    {"placement", "", {"placement_strategy"}, "", {}, false, "placement: tp-pp-dp", ""},
    {"cp_comm_type", "", {}, "", {}, false, "cp_comm_type: a2a", ""},
    {"activation_offload_layers", "", {"cpu_offloading_num_layers"}, "", {}, false, "activation_offload_layers: 1", ""},
    {"routing_imbalance", "", {}, "", {}, false, "routing_imbalance: 1.5", ""},
    {"moe_expert_capacity_factor", "", {}, "", {}, false, "moe_expert_capacity_factor: 1.0", ""},
    {"moe_pad_expert_input_to_capacity", "", {}, "", {}, false, "moe_expert_capacity_factor: 1.0\nmoe_pad_expert_input_to_capacity: true",
     "moe_expert_capacity_factor: 1.0"},
    {"moe_token_dispatcher_type", "", {"moe_enable_deepep"}, "", {}, true, "moe_token_dispatcher_type: flex", ""},
    {"moe_flex_dispatcher_backend", "", {}, "", {}, true, "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep",
     "moe_token_dispatcher_type: flex"},
    {"moe_deepep_num_sms", "", {}, "", {}, true, "moe_token_dispatcher_type: flex\nmoe_deepep_num_sms: 24",
     "moe_token_dispatcher_type: flex"},
    {"moe_hybridep_num_sms", "", {}, "", {}, true, "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep\nmoe_hybridep_num_sms: 24",
     "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep"},
    {"active_microbatches", "", {}, "", {}, false, "active_microbatches: 2", ""},
    {"microbatch_group_size_per_vp_stage", "microbatch_group_size", {}, "", {}, false, "microbatch_group_size_per_vp_stage: 2", ""},
    {"zb_memory_limit", "", {}, "", {}, false, "zb_memory_limit: 2", ""},
    {"optimize", "", {}, "", {}, false, "optimize: memory", ""},
    {"allow_tensor_across_nodes", "", {}, "", {}, false, "allow_tensor_across_nodes: true", ""},
};
// clang-format on

/// The row at `path`, or null.
[[nodiscard]] constexpr const PlanField* plan_field(std::string_view path) noexcept {
  for (const PlanField& f : kPlanFields) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

}  // namespace mpsim::plan
