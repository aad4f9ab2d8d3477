#pragma once
/// The plan file's fields, one row each: where a field stands in the file, the names other tools give
/// it, whether it is a parallel degree or a plain setting, and whether it changes what one unit of work
/// costs. The plan loader accepts exactly these keys and reads every degree and plain setting under
/// each of its spellings from here; the report's plan object (plan_json) and the plan file
/// (write_plan_yaml) write them from here; `--set plan.<field>` replaces a field under all its
/// spellings from here; the planner's unit-cost key is checked against the `unit_cost` column
/// (tests/unit/planner/plan_fields_cost_test.cpp).
#include <array>
#include <optional>
#include <string_view>
#include <type_traits>
#include <variant>

#include "sim/plan/axis.h"
#include "sim/plan/plan.h"

namespace mpsim::plan {

/// A PlanSettings member that the table reads and writes itself.
using PlainSetting = std::variant<std::monostate, bool PlanSettings::*, int PlanSettings::*, double PlanSettings::*>;

/// One row per field, in the order of the report's plan object (plan_json), which is also the order
/// of the keys an unknown-field error lists.
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
  /// A plain setting: the member read as written under every spelling (a bool, or a number in
  /// [min, max]), written to the report's plan object and, away from its default, to the plan file.
  /// Fields without one are read and written by their own code (plan_loader.cpp, plan_json.cpp).
  PlainSetting setting;
  double min = 0;
  double max = 0;
};

// clang-format off
inline constexpr PlanField kPlanFields[] = {
    {"parallelism.tensor", "tensor", {"tensor_parallel_degree", "tensor_model_parallel_size"}, "", Axis::Tensor, true, "parallelism: { tensor: 2 }", "", {}, 0, 0},
    {"parallelism.pipeline", "pipeline", {"partitions", "pipeline_parallel_degree", "pipeline_model_parallel_size"}, "", Axis::Pipeline, false, "parallelism: { pipeline: 2 }", "", {}, 0, 0},
    {"parallelism.data", "data", {"data_parallel_size"}, "", Axis::Data, false, "parallelism: { data: 2 }", "", {}, 0, 0},
    {"parallelism.virtual_stages", "virtual_stages", {"virtual_pipeline_model_parallel_size"}, "", {}, false, "parallelism: { virtual_stages: 2 }", "", &PlanSettings::virtual_stages, 1, 1'000'000},
    {"parallelism.context", "context", {"context_parallel_size"}, "", Axis::Context, true, "parallelism: { context: 2 }", "", {}, 0, 0},
    {"parallelism.expert", "expert", {"expert_model_parallel_size"}, "", Axis::Expert, true, "parallelism: { expert: 2 }", "", {}, 0, 0},
    {"parallelism.expert_tensor", "expert_tensor", {"expert_tensor_parallel_size"}, "", Axis::ExpertTensor, true, "parallelism: { tensor: 2, expert_tensor: 1 }", "parallelism: { tensor: 2 }", {}, 0, 0},
    {"batch.global", "global_batch", {"global_batch_size"}, "batch.microbatches", {}, false, "batch: { global: 8 }", "", {}, 0, 0},
    {"batch.micro", "micro_batch", {"micro_batch_size"}, "", {}, true, "batch: { micro: 2 }", "", &PlanSettings::micro_batch, 1, 1'000'000},
    {"batch.microbatches", "microbatches", {"microbatches"}, "batch.global", {}, false, "batch: { microbatches: 8 }", "", {}, 0, 0},
    {"schedule", "", {"pipeline"}, "", {}, true, "schedule: dualpipe", "", {}, 0, 0},
    {"microbatch_group_size_per_vp_stage", "microbatch_group_size", {}, "", {}, false, "microbatch_group_size_per_vp_stage: 2", "", {}, 0, 0},
    {"active_microbatches", "", {}, "", {}, false, "active_microbatches: 2", "", {}, 0, 0},
    {"zb_memory_limit", "", {}, "", {}, false, "zb_memory_limit: 2", "", {}, 0, 0},
    {"partition", "", {}, "", {}, false, "partition: [0, 2, 4]", "", {}, 0, 0},
    {"replica_microbatches", "", {}, "", {}, false, "parallelism: { data: 2 }\nbatch: { microbatches: 4 }\nreplica_microbatches: [6, 2]", "parallelism: { data: 2 }\nbatch: { microbatches: 4 }", {}, 0, 0},
    {"placement", "", {"placement_strategy"}, "", {}, false, "placement: tp-pp-dp", "", {}, 0, 0},
    {"recompute", "", {"recompute_granularity"}, "", {}, true, "recompute: full", "", {}, 0, 0},
    {"recompute_modules", "", {}, "", {}, false, "recompute: selective\nrecompute_modules: [mlp]", "recompute: selective", {}, 0, 0},
    {"recompute_method", "", {}, "", {}, false, "recompute: full\nrecompute_method: block", "recompute: full", {}, 0, 0},
    {"recompute_num_layers", "", {}, "", {}, false, "recompute: full\nrecompute_num_layers: 2", "recompute: full", &PlanSettings::recompute_num_layers, 1, 1'000'000},
    {"selective_ac_option", "", {}, "", {}, true, "recompute: selective\nselective_ac_option: op", "recompute: selective", {}, 0, 0},
    {"distribute_saved_activations", "", {"partition_activations"}, "", {}, false, "parallelism: { tensor: 2 }\nrecompute: full\ndistribute_saved_activations: true", "parallelism: { tensor: 2 }\nrecompute: full", &PlanSettings::distribute_saved_activations, 0, 0},
    {"activation_offload_layers", "", {"cpu_offloading_num_layers"}, "", {}, false, "activation_offload_layers: 1", "", &PlanSettings::activation_offload_layers, 0, 1'000'000},
    {"sequence_parallel", "", {}, "", {}, true, "sequence_parallel: true", "", &PlanSettings::sequence_parallel, 0, 0},
    {"cp_comm_type", "", {}, "", {}, false, "cp_comm_type: a2a", "", {}, 0, 0},
    {"precision", "", {"fp8", "fp8_recipe", "bf16", "fp16"}, "", {}, true, "precision: fp8", "", {}, 0, 0},
    {"fp8_param_gather", "", {"fp8_params"}, "", {}, false, "fp8_param_gather: true", "", &PlanSettings::fp8_param_gather, 0, 0},
    {"attention", "", {"attention_backend", "use_flash_attn"}, "", {}, true, "attention: standard", "", {}, 0, 0},
    {"attention_kernel", "", {}, "", {}, true, "attention_kernel: fa2", "", {}, 0, 0},
    {"overlap.grad_reduce", "overlap.grad_reduce", {"overlap_grad_reduce"}, "", {}, false, "overlap: { grad_reduce: true }", "", &PlanSettings::overlap_grad_reduce, 0, 0},
    {"overlap.param_gather", "overlap.param_gather", {"overlap_param_gather"}, "", {}, false, "overlap: { param_gather: true }", "", &PlanSettings::overlap_param_gather, 0, 0},
    {"overlap.tensor_comm", "overlap.tensor_comm", {"tp_comm_overlap"}, "", {}, true, "overlap: { tensor_comm: true }", "", &PlanSettings::overlap_tensor_comm, 0, 0},
    {"overlap.moe_expert_comm", "overlap.moe_expert_comm", {"overlap_moe_expert_parallel_comm"}, "", {}, false, "overlap: { moe_expert_comm: true }", "", &PlanSettings::overlap_moe_expert_comm, 0, 0},
    {"zero", "", {"use_distributed_optimizer"}, "", {}, false, "zero: 3", "", {}, 0, 0},
    {"shard_groups", "", {"num_distributed_optimizer_instances", "data_parallel_replicate_degree"}, "", Axis::DataReplica, false, "shard_groups: 2", "", {}, 0, 0},
    {"grad_reduce_in_fp32", "", {"accumulate_allreduce_grads_in_fp32"}, "", {}, false, "grad_reduce_in_fp32: false", "", &PlanSettings::grad_reduce_in_fp32, 0, 0},
    {"optimizer", "", {}, "", {}, false, "optimizer: muon", "", {}, 0, 0},
    {"precision_aware_optimizer", "", {"use_precision_aware_optimizer"}, "", {}, false, "precision_aware_optimizer: true", "", &PlanSettings::precision_aware_optimizer, 0, 0},
    {"exp_avg_dtype", "", {}, "", {}, false, "precision_aware_optimizer: true\nexp_avg_dtype: bf16", "precision_aware_optimizer: true", {}, 0, 0},
    {"exp_avg_sq_dtype", "", {}, "", {}, false, "precision_aware_optimizer: true\nexp_avg_sq_dtype: bf16", "precision_aware_optimizer: true", {}, 0, 0},
    {"cross_entropy", "", {"cross_entropy_fusion_impl"}, "", {}, true, "cross_entropy: pytorch", "", {}, 0, 0},
    {"routing_imbalance", "", {}, "", {}, false, "routing_imbalance: 1.5", "", &PlanSettings::routing_imbalance, 1.0, 1000.0},
    {"moe_expert_capacity_factor", "", {}, "", {}, false, "moe_expert_capacity_factor: 1.0", "", {}, 0, 0},
    {"moe_pad_expert_input_to_capacity", "", {}, "", {}, false, "moe_expert_capacity_factor: 1.0\nmoe_pad_expert_input_to_capacity: true", "moe_expert_capacity_factor: 1.0", {}, 0, 0},
    {"moe_token_dispatcher_type", "", {"moe_enable_deepep"}, "", {}, true, "moe_token_dispatcher_type: flex", "", {}, 0, 0},
    {"moe_flex_dispatcher_backend", "", {}, "", {}, true, "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep", "moe_token_dispatcher_type: flex", {}, 0, 0},
    {"moe_deepep_num_sms", "", {}, "", {}, true, "moe_token_dispatcher_type: flex\nmoe_deepep_num_sms: 24", "moe_token_dispatcher_type: flex", {}, 0, 0},
    {"moe_hybridep_num_sms", "", {}, "", {}, true, "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep\nmoe_hybridep_num_sms: 24", "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep", {}, 0, 0},
    {"optimize", "", {}, "", {}, false, "optimize: memory", "", {}, 0, 0},
    {"allow_tensor_across_nodes", "", {}, "", {}, false, "allow_tensor_across_nodes: true", "", &PlanSettings::allow_tensor_across_nodes, 0, 0},
};
// clang-format on

/// Calls `use(value, default_value)` with a plain setting's value in `settings` and its default (a
/// bool, an int or a double); does nothing for a row without one.
template <typename Use>
void visit_setting(const PlanField& field, const PlanSettings& settings, Use&& use) {
  static const PlanSettings kDefaults;
  std::visit(
      [&](auto member) {
        if constexpr (!std::is_same_v<decltype(member), std::monostate>) use(settings.*member, kDefaults.*member);
      },
      field.setting);
}

/// The row at `path`, or null.
[[nodiscard]] constexpr const PlanField* plan_field(std::string_view path) noexcept {
  for (const PlanField& f : kPlanFields) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

}  // namespace mpsim::plan
