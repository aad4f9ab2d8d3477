#pragma once
/// The exports the framework rule tests check (framework_rules_test.cpp for Megatron-LM and
/// Megatron-Bridge, torchtitan_rules_test.cpp, deepspeed_rules_test.cpp, sagemaker_rules_test.cpp):
/// every shipped plan's, where the target can express it (one it cannot is refused with an InputError,
/// which is the export's job), and the planner's first plans that users reported.
#include <gtest/gtest.h>

#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/input_error.h"
#include "tests/unit/interop/interop_test_support.h"

namespace mpsim::interop::testing {

inline constexpr std::string_view kScheduleCsv = "schedule.csv";

struct ExportCase {
  std::string name;
  std::string topology;
  std::string model;
  std::string plan;  ///< a shipped plan's path, or the plan's YAML when it starts with "inline:"
  int gpus = 0;      ///< the job's first GPUs; 0: the whole topology
  /// The plan field each export refuses, where it cannot express the plan; empty: it must export.
  std::string megatron_refuses = {};
  std::string bridge_refuses = {};
  std::string torchtitan_refuses = {};
  std::string deepspeed_refuses = {};
  std::string sagemaker_refuses = {};
};

inline void PrintTo(const ExportCase& c, std::ostream* os) { *os << c.name; }

inline ResolvedPlan resolve(const ExportCase& c) {
  constexpr std::string_view kInline = "inline:";
  if (c.plan.rfind(kInline, 0) == 0) {
    return ResolvedPlan(c.topology, c.model, spec_from(c.plan.substr(kInline.size())), c.gpus);
  }
  return ResolvedPlan(c.topology, c.model, c.plan, c.gpus);
}

/// The export, or nothing when the target refuses the plan as the case expects: with an InputError at
/// `refuses` (a schedule or precision it has no setting for), which is the export's job, not a rule's.
/// A TorchTitan TOML names its schedule CSV (for a schedule it runs from one) as kScheduleCsv.
inline std::optional<std::string> export_or_refusal(const ResolvedPlan& r, Framework target,
                                                    const std::string& refuses) {
  try {
    std::string text = r.exported(target, target == Framework::TorchTitan ? std::string(kScheduleCsv) : std::string());
    EXPECT_TRUE(refuses.empty()) << "exported, though the case expects a refusal at " << refuses;
    return text;
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), refuses) << e.what();
    return std::nullopt;
  }
}

// The planner's first plan for Llama-3 70B on 64 H100 (8 DGX H100 of topologies/16x-dgx-h100.yaml,
// the default global batch of 256), as `mpsim plan --topology topologies/16x-dgx-h100.yaml --gpus 64
// --model configs/models/llama3-70b.yaml` wrote it: Megatron FSDP (ZeRO-3) beside tensor and context
// parallelism, the launch users reported. Pinned rather than searched here (the search takes seconds):
// should the planner come to prefer another plan, this one stays the reported case.
inline constexpr const char* kLlama70bPlannerFirst =
    "inline:parallelism: { tensor: 2, pipeline: 1, data: 16, virtual_stages: 1, context: 2 }\n"
    "batch: { global: 256, micro: 1 }\nschedule: 1f1b\npartition: [0, 80]\nrecompute: none\nprecision: bf16\n"
    "attention: flash\noverlap: { grad_reduce: true, param_gather: true, tensor_comm: true }\nzero: 3\n"
    "placement: tp-dp-pp\nsequence_parallel: true\n";
// Megatron FSDP with tensor parallelism alone, and ZeRO-2 style sharding.
inline constexpr const char* kLlama70bFsdp =
    "inline:parallelism: { tensor: 2 }\nbatch: { global: 128, micro: 1 }\nsequence_parallel: true\nzero: 2\n"
    "overlap: { grad_reduce: true, param_gather: true }\n";
// The planner's first plan for Qwen3-30B-A3B on 16 H100 (2 DGX H100 of topologies/16x-dgx-h100.yaml) at the
// global batch of Megatron-Bridge's published 16-GPU H100 rows (512), searching only what Megatron-LM runs, as
// `mpsim plan --topology topologies/16x-dgx-h100.yaml --gpus 16 --model configs/models/qwen3-30b-a3b.yaml
// --global-batch 512 --framework megatron` wrote it: eight uneven pipeline stages (a layout), ZeRO-2 over two
// data-parallel ranks, no expert parallelism. Pinned like the 70B plan: the search takes 20 s.
inline constexpr const char* kQwen3PlannerFirst =
    "inline:parallelism: { tensor: 1, pipeline: 8, data: 2, virtual_stages: 1 }\n"
    "batch: { global: 512, micro: 1 }\nschedule: 1f1b\npartition: [0, 3, 10, 17, 24, 31, 38, 45, 48]\n"
    "recompute: none\nprecision: bf16\nattention: flash\n"
    "overlap: { grad_reduce: true, param_gather: true, tensor_comm: false }\nzero: 2\nplacement: tp-dp-pp\n";
/// FP8 weights gathered under FSDP (TorchTitan's enable_fsdp_float8_all_gather; Megatron's --fp8-param-gather).
inline constexpr const char* kLlama8bFp8Gather = "inline:precision: fp8\nfp8_param_gather: true\nzero: 3\n";
inline constexpr const char* kQwen3MoeFsdp =
    "inline:parallelism: { expert: 8 }\nbatch: { global: 256, micro: 2 }\nzero: 3\n";

inline const ExportCase kExportCases[] = {
    {"cpu_tiny_1f1b_pp2", "topologies/dgx-a100.yaml", "configs/models/cpu-gpt-tiny.yaml",
     "configs/plans/cpu-tiny-1f1b-pp2.yaml", 2, "", "precision", "", "", "schedule"},
    {"cpu_tiny_zb_h1_pp2", "topologies/dgx-a100.yaml", "configs/models/cpu-gpt-tiny.yaml",
     "configs/plans/cpu-tiny-zb-h1-pp2.yaml", 2, "schedule", "schedule", "", "schedule", "schedule"},
    {"gpt3_1_3b_sagemaker", "topologies/p4d.24xlarge.yaml", "configs/models/gpt3-1.3b.yaml",
     "configs/plans/gpt3-1.3b-sagemaker.yaml", 0, "schedule", "schedule", "placement", "schedule", ""},
    {"gpt3_13b_4x_p4d", "topologies/4x-p4d.yaml", "configs/models/gpt3-13b.yaml", "configs/plans/gpt3-13b-4x-p4d.yaml",
     0, "", "", "", "sequence_parallel", "schedule"},
    {"gpt3_175b_h100_weak_scaling", "topologies/512x-dgx-h100.yaml", "configs/models/gpt3-175b.yaml",
     "configs/plans/gpt3-175b-h100-weak-scaling.yaml", 0, "", "", "", "virtual_stages", "virtual_stages"},
    {"megatron_175b_interleaved", "topologies/16x-dgx-h100.yaml", "configs/models/gpt3-175b.yaml",
     "configs/plans/megatron-175b-interleaved.yaml", 0, "", "", "sequence_parallel", "virtual_stages", "virtual_stages"},
    {"megatron_sc21_1_7b", "topologies/selene.yaml", "configs/models/megatron-1.7b.yaml",
     "configs/plans/megatron-sc21-1.7b.yaml", 32, "", "", "", "", "recompute"},
    {"megatron_sc21_3_6b", "topologies/selene.yaml", "configs/models/megatron-3.6b.yaml",
     "configs/plans/megatron-sc21-3.6b.yaml", 64, "", "", "sequence_parallel", "", "recompute"},
    {"megatron_sc21_7_5b", "topologies/selene.yaml", "configs/models/megatron-7.5b.yaml",
     "configs/plans/megatron-sc21-7.5b.yaml", 128, "", "", "sequence_parallel", "", "recompute"},
    {"megatron_sc21_18_4b", "topologies/selene.yaml", "configs/models/megatron-18.4b.yaml",
     "configs/plans/megatron-sc21-18.4b.yaml", 256, "", "", "sequence_parallel", "", "recompute"},
    {"megatron_sc21_39_1b", "topologies/selene.yaml", "configs/models/megatron-39.1b.yaml",
     "configs/plans/megatron-sc21-39.1b.yaml", 512, "", "", "sequence_parallel", "", "schedule"},
    {"megatron_sc21_76_1b", "topologies/selene.yaml", "configs/models/megatron-76.1b.yaml",
     "configs/plans/megatron-sc21-76.1b.yaml", 1024, "", "", "sequence_parallel", "virtual_stages", "virtual_stages"},
    {"megatron_sc21_145_6b", "topologies/selene.yaml", "configs/models/megatron-145.6b.yaml",
     "configs/plans/megatron-sc21-145.6b.yaml", 1536, "", "", "sequence_parallel", "virtual_stages", "virtual_stages"},
    {"megatron_sc21_310_1b", "topologies/selene.yaml", "configs/models/megatron-310.1b.yaml",
     "configs/plans/megatron-sc21-310.1b.yaml", 1920, "", "", "sequence_parallel", "virtual_stages", "virtual_stages"},
    {"megatron_sc21_529_6b", "topologies/selene.yaml", "configs/models/megatron-529.6b.yaml",
     "configs/plans/megatron-sc21-529.6b.yaml", 2520, "", "", "sequence_parallel", "virtual_stages", "virtual_stages"},
    {"megatron_sc21_1008b", "topologies/selene.yaml", "configs/models/megatron-1008b.yaml",
     "configs/plans/megatron-sc21-1008b.yaml", 3072, "", "", "sequence_parallel", "", "schedule"},
    {"llama3_70b_64_h100_planner_first", "topologies/16x-dgx-h100.yaml", "configs/models/llama3-70b.yaml",
     kLlama70bPlannerFirst, 64, "", "", "", "context", "context"},
    {"llama3_70b_64_h100_fsdp", "topologies/16x-dgx-h100.yaml", "configs/models/llama3-70b.yaml", kLlama70bFsdp, 64, "",
     "", "", "sequence_parallel", "sequence_parallel"},
    {"qwen3_30b_a3b_16_h100_planner_first", "topologies/16x-dgx-h100.yaml", "configs/models/qwen3-30b-a3b.yaml",
     kQwen3PlannerFirst, 16, "", "", "zero", "zero", "schedule"},
    // The model settings the RoPE rules read: Llama 3.1's scaling, latent attention's YaRN (Kimi K2's
    // betas are Megatron-Bridge fields only).
    {"llama31_405b_64_h100", "topologies/16x-dgx-h100.yaml", "configs/models/llama31-405b.yaml",
     "inline:parallelism: { tensor: 8, pipeline: 2 }\nsequence_parallel: true\n", 64, "", "", "", "sequence_parallel",
     "schedule"},
    {"deepseek_v3_64_h100", "topologies/16x-dgx-h100.yaml", "configs/models/deepseek-v3.yaml",
     "inline:parallelism: { tensor: 8, expert: 8 }\nsequence_parallel: true\n", 64, "", "", "expert", "sequence_parallel",
     "expert"},
    {"kimi_k2_64_h100", "topologies/16x-dgx-h100.yaml", "configs/models/kimi-k2.yaml",
     "inline:parallelism: { tensor: 8, expert: 8 }\nsequence_parallel: true\n", 64, "model.rope_scaling", "", "expert",
     "sequence_parallel", "expert"},
    {"llama3_8b_fp8_param_gather", "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml", kLlama8bFp8Gather, 0,
     "", "", "", "precision", "precision"},
    {"qwen3_30b_a3b_64_h100_fsdp", "topologies/16x-dgx-h100.yaml", "configs/models/qwen3-30b-a3b.yaml", kQwen3MoeFsdp,
     64, "", "", "", "expert", "expert"},
    // Full recomputation's choice of layers and TorchTitan's per-op checkpointing, each where its framework
    // has it: Megatron's block and uniform groups, TorchTitan's every nth block and per op.
    {"llama3_8b_recompute_block", "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml",
     "inline:parallelism: { tensor: 2, pipeline: 2 }\nsequence_parallel: true\nrecompute: full\nrecompute_method: block\nrecompute_num_layers: 4\n",
     0, "", "", "recompute_method", "sequence_parallel", "schedule"},
    {"llama3_8b_recompute_uniform_groups", "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml",
     "inline:parallelism: { tensor: 2, pipeline: 2 }\nsequence_parallel: true\nrecompute: full\nrecompute_num_layers: 2\n", 0, "", "",
     "recompute_method", "sequence_parallel", "schedule"},
    {"llama3_8b_selective_every_2", "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml",
     "inline:parallelism: { tensor: 2 }\nsequence_parallel: true\nrecompute: selective\nselective_ac_option: 2\n", 0, "recompute", "recompute", "",
     "sequence_parallel", "sequence_parallel"},
    {"llama3_8b_selective_op", "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml",
     "inline:parallelism: { tensor: 2 }\nsequence_parallel: true\nrecompute: selective\nselective_ac_option: op\n", 0, "recompute", "recompute",
     "", "sequence_parallel", "sequence_parallel"},
    // Full recomputation's checkpoints split over the tensor ranks (Megatron-LM's
    // --distribute-saved-activations, DeepSpeed's partition_activations), without sequence parallelism.
    {"llama3_8b_distribute_saved_activations", "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml",
     "inline:parallelism: { tensor: 2 }\nrecompute: full\ndistribute_saved_activations: true\n", 0, "", "",
     "sequence_parallel", "", "recompute"},
    // Transformer Engine's precision-aware FusedAdam with bf16 moments (the DeepSeek and Qwen3 MoE
    // performance recipes' optimizer): Megatron-Core's alone.
    {"llama3_8b_precision_aware_optimizer", "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml",
     "inline:zero: 1\nprecision_aware_optimizer: true\nexp_avg_dtype: bf16\nexp_avg_sq_dtype: bf16\n",
     0, "", "", "zero", "precision_aware_optimizer", "precision_aware_optimizer"},
};

/// The rules of `table` (rows with the words `rule` and a test `holds`) that `job` breaks, by their words.
template <typename Table, typename Job>
std::vector<std::string_view> failed_rules(const Table& table, const Job& job) {
  std::vector<std::string_view> failed;
  for (const auto& rule : table) {
    if (!rule.holds(job)) failed.push_back(rule.rule);
  }
  return failed;
}

/// Every rule of `table` holds for `job`; a failure names the rule, its source and the exported `text`.
template <typename Table, typename Job>
void expect_every_rule_holds(const Table& table, const Job& job, const std::string& text) {
  for (const auto& rule : table) EXPECT_TRUE(rule.holds(job)) << rule.rule << " (" << rule.source << ")\n" << text;
}

}  // namespace mpsim::interop::testing
