#pragma once
/// Exporting a plan as the launch configuration of the framework people run it with: Megatron-LM
/// arguments (a torchrun script), a Megatron-Bridge / NeMo recipe override, a DeepSpeed config JSON,
/// a TorchTitan job TOML and SageMaker model parallelism's `parameters`. Names are each project's
/// own (docs/export.md lists them with their sources). A setting a target cannot express is an
/// InputError at the plan field that holds it, never a silent drop.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"

namespace mpsim::interop {

enum class Framework : std::uint8_t { Megatron, Nemo, DeepSpeed, TorchTitan, SageMaker };
inline constexpr std::pair<std::string_view, Framework> kFrameworkNames[] = {
    {"megatron", Framework::Megatron},     {"nemo", Framework::Nemo},
    {"deepspeed", Framework::DeepSpeed},   {"torchtitan", Framework::TorchTitan},
    {"sagemaker", Framework::SageMaker}};
/// The framework of a name of kFrameworkNames (the command line's word), if it is one.
[[nodiscard]] constexpr std::optional<Framework> framework_named(std::string_view name) noexcept {
  for (const auto& [word, framework] : kFrameworkNames) {
    if (word == name) return framework;
  }
  return std::nullopt;
}

/// How the framework computes the loss (plan::CrossEntropy): Megatron-LM and NeMo with Megatron-Core's
/// in-place vocabulary-parallel cross-entropy; TorchTitan with torch.nn.functional.cross_entropy on
/// fp32-cast logits; DeepSpeed and SageMaker train the user's model, whose loss is taken to be the
/// same as Hugging Face's causal language models compute it (torch's cross-entropy on `logits.float()`).
[[nodiscard]] constexpr plan::CrossEntropy loss_of(Framework f) noexcept {
  return f == Framework::Megatron || f == Framework::Nemo ? plan::CrossEntropy::Native : plan::CrossEntropy::Pytorch;
}

/// The nodes the plan's GPUs span, as the launcher is told them (torchrun's --nnodes and --nproc_per_node).
struct LaunchShape {
  int nodes = 1;
  int gpus_per_node = 1;
};

/// The nodes a cluster's GPUs sit on (those a job keeps, topology::Cluster::keep_job_gpus), and the
/// most GPUs on one of them.
[[nodiscard]] LaunchShape launch_shape(const topology::Cluster& cluster);

/// What an export reads: the resolved plan, the spec it came from (where each field was written,
/// and whether the partition was left balanced), the model and the job's shape.
struct ExportInput {
  const plan::Plan& plan;
  const plan::PlanSpec& spec;
  const model::Model& model;
  std::string model_file;  ///< where the model was read, for errors about it
  LaunchShape shape;
  /// TorchTitan: the name, beside the TOML, of the schedule CSV the TOML names for a schedule
  /// TorchTitan has no class for (torchtitan_runs_from_csv); empty where no file is written (stdout).
  std::string schedule_csv = {};
};

/// The launch configuration's text. Throws InputError naming the plan (or model) field a target cannot express.
[[nodiscard]] std::string export_plan(Framework target, const ExportInput& input);

[[nodiscard]] std::string export_megatron(const ExportInput& input);
[[nodiscard]] std::string export_nemo(const ExportInput& input);
[[nodiscard]] std::string export_deepspeed(const ExportInput& input);
[[nodiscard]] std::string export_torchtitan(const ExportInput& input);
[[nodiscard]] std::string export_sagemaker(const ExportInput& input);

/// Whether TorchTitan runs the plan's pipeline schedule from a CSV (`pipeline_parallel_schedule_csv`,
/// torch.distributed.pipelining's _PipelineScheduleRuntime) rather than by a schedule class's name:
/// zb-h1, zb-h2, zb-auto, sagemaker-interleaved, v-half and v-min, with pipeline > 1.
[[nodiscard]] bool torchtitan_runs_from_csv(const plan::Plan& plan);
/// That CSV: the plan's per-rank compute order in PyTorch's format (interop/formats/torch_csv.h).
[[nodiscard]] std::string torchtitan_schedule_csv(const plan::Plan& plan);

/// Throws the InputError for `field` (a plan field's canonical name: "schedule", "zero", "context",
/// ...) that `target` cannot express, located where the plan wrote it (or at the plan file when the
/// value was derived or defaulted).
[[noreturn]] void cannot_express(const ExportInput& input, std::string_view target, std::string_view field,
                                 const std::string& why);
/// The same for a field of the model (`moe`, `family`, ...), located at the model file.
[[noreturn]] void cannot_express_model(const ExportInput& input, std::string_view target, std::string_view field,
                                       const std::string& why);

/// The shape of a decoder-only GPT / Llama-style model, which Megatron-LM's pretrain_gpt.py and
/// Megatron-Bridge's GPT providers build; otherwise the error at the model field: a model given as a
/// list of layers, T5 and BERT (other scripts and providers), relative positions, attention sinks.
[[nodiscard]] const model::TransformerShape& decoder_shape(const ExportInput& input, std::string_view target);

/// Megatron's layer split of the plan, as its arguments say it: how many transformer blocks each
/// virtual stage holds, in virtual-stage order (the plan's partition, over blocks).
[[nodiscard]] std::vector<int> blocks_per_stage(const plan::Plan& plan);
/// Whether every stage holds the same number of blocks (Megatron's default split; no flag needed).
[[nodiscard]] bool is_uniform_split(const plan::Plan& plan);
/// Megatron-Core's pipeline_model_parallel_layout of the plan's split: the stages in virtual-stage
/// order separated by |, E the embedding, t a block (t*N for N), L the loss: "Et*10|t*6|t*8|t*8L".
[[nodiscard]] std::string pipeline_layout(const plan::Plan& plan);
/// The plan's rank order over the axes it splits (degree above 1), fastest first, under `placement`.
[[nodiscard]] std::vector<plan::Axis> split_order(const plan::Plan& plan, const plan::Placement& placement);
/// Selective recomputation of the attention scores alone, under FlashAttention: the kernel's own
/// backward recomputes them, so a target has nothing to configure for it.
[[nodiscard]] bool selective_is_flash_attention(const plan::Plan& plan);

}  // namespace mpsim::interop
