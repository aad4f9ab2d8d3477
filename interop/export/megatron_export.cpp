// Megatron-LM's pretrain_gpt.py arguments (megatron/training/arguments.py), written as the torchrun
// scripts of Megatron's examples/ write them: bash arrays of arguments, sizes in variables at the top.
#include <algorithm>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/export/export.h"
#include "interop/export/megatron_core_settings.h"

namespace mpsim::interop {

namespace {

constexpr std::string_view kMegatronTarget = "Megatron-LM";

/// One bash array of arguments.
struct ArgGroup {
  std::string name;
  std::vector<std::string> lines;
  void flag(std::string_view f) { lines.emplace_back(f); }
  template <typename T>
  void arg(std::string_view f, const T& value) {
    lines.push_back(fmt::format("{} {}", f, value));
  }
};

/// Megatron's --moe-layer-freq: N (one MoE block in every N, from the first), or a run-length list
/// such as "([0]*3+[1]*58)" when dense blocks come first.
std::string moe_layer_pattern(const model::TransformerShape& s) {
  std::vector<std::pair<int, int>> runs;  // (value, count)
  for (int i = 0; i < s.layers; ++i) {
    const int v = s.is_moe_block(i) ? 1 : 0;
    if (!runs.empty() && runs.back().first == v) {
      ++runs.back().second;
    } else {
      runs.emplace_back(v, 1);
    }
  }
  if (s.moe->dense_layers == 0) return std::to_string(s.moe->frequency);  // one MoE block in every N
  std::vector<std::string> parts;
  for (const auto& [v, n] : runs) parts.push_back(fmt::format("[{}]*{}", v, n));
  return fmt::format("\"({})\"", fmt::join(parts, "+"));
}

/// The Megatron-Core settings of one run, as pretrain_gpt.py's arguments.
void core_args(const std::vector<McoreSetting>& core, McoreRun run, ArgGroup& g) {
  for (const McoreSetting& c : core) {
    if (c.run != run) continue;
    if (std::optional<std::string> a = c.megatron_argument()) g.lines.push_back(std::move(*a));
  }
}

void model_args(const ExportInput& in, const std::vector<McoreSetting>& core, ArgGroup& g) {
  const model::TransformerShape& s = decoder_shape(in, kMegatronTarget);
  if (s.activation == model::Activation::Relu || (s.gated_mlp && s.activation != model::Activation::Swiglu)) {
    cannot_express_model(in, kMegatronTarget, "activation", "Megatron's flags give GELU, SwiGLU (--swiglu) or squared ReLU (--squared-relu)");
  }
  core_args(core, McoreRun::Size, g);
  if (!s.mla) {
    if (s.kv_heads != s.heads) {
      g.flag("--group-query-attention");
      g.arg("--num-query-groups", s.kv_heads);
    }
    if (s.head_dim * s.heads != s.hidden) g.arg("--kv-channels", s.head_dim);
  }
  core_args(core, McoreRun::Sequence, g);
  g.arg("--max-position-embeddings", s.positions == model::PositionKind::Learned ? s.max_positions : s.seq_len);
  core_args(core, McoreRun::Embedding, g);
  if (s.activation == model::Activation::Swiglu) g.flag("--swiglu");
  if (s.activation == model::Activation::SquaredRelu) g.flag("--squared-relu");
  core_args(core, McoreRun::Linear, g);
  if (!s.dropout) {
    g.arg("--attention-dropout", 0);
    g.arg("--hidden-dropout", 0);
  }
  core_args(core, McoreRun::VocabAttention, g);
  if (s.mla && s.rope_scaling && s.rope_scaling->kind == model::RopeScalingKind::Yarn) {
    // MLATransformerConfig's original_max_position_embeddings, beta_fast and beta_slow have no flag
    // (--yarn-* set GPTModel's yarn_* fields, which latent attention does not read): their defaults stand.
    const model::RopeScaling& r = *s.rope_scaling;
    if (r.original_max_position_embeddings != 4096 || r.beta_fast != 32.0 || r.beta_slow != 1.0) {
      cannot_express_model(in, kMegatronTarget, "rope_scaling",
                           fmt::format("Megatron-LM's latent attention runs YaRN with original_max_position_embeddings "
                                       "4096, beta_fast 32 and beta_slow 1 (no flag sets them), not {}, {} and {}; "
                                       "Megatron-Bridge's provider sets them (--to nemo)",
                                       r.original_max_position_embeddings, r.beta_fast, r.beta_slow));
    }
  }
  core_args(core, McoreRun::Experts, g);
  if (s.moe) {
    const std::string pattern = moe_layer_pattern(s);
    if (pattern != "1") g.arg("--moe-layer-freq", pattern);
  }
  core_args(core, McoreRun::Routing, g);
}

void parallel_args(const ExportInput& in, const std::vector<McoreSetting>& core, ArgGroup& g) {
  const plan::Plan& p = in.plan;
  // One stage runs no pipeline schedule (Megatron's forward_backward_no_pipelining).
  if (const plan::ScheduleTraits& schedule = plan::traits(p.schedule);
      p.degrees[plan::Axis::Pipeline] > 1 && !schedule.megatron) {
    cannot_express(in, kMegatronTarget, "schedule",
                   fmt::format("Megatron-LM runs 1F1B, or interleaved 1F1B with virtual stages, not {}{}", schedule.name,
                               schedule.torchtitan_run == plan::TorchTitanRun::ByName
                                   ? fmt::format(" (TorchTitan runs it: {})", schedule.torchtitan)
                                   : std::string()));
  }
  core_args(core, McoreRun::ParallelSizes, g);
  const std::vector<int> blocks = blocks_per_stage(p);
  if (!is_uniform_split(p)) {
    const bool ends_only = p.virtual_stages == 1 && blocks.size() > 2 &&
                           std::all_of(blocks.begin() + 1, blocks.end() - 1, [&](int b) { return b == blocks[1]; });
    if (ends_only) {
      if (blocks.front() != blocks[1]) g.arg("--decoder-first-pipeline-num-layers", blocks.front());
      if (blocks.back() != blocks[1]) g.arg("--decoder-last-pipeline-num-layers", blocks.back());
    } else {
      g.arg("--pipeline-model-parallel-layout", fmt::format("\"{}\"", pipeline_layout(p)));
    }
  } else if (p.virtual_stages > 1) {
    g.arg("--num-layers-per-virtual-pipeline-stage", blocks.front());
  }
  if (plan::traits(p.schedule).rule == plan::ShapeRule::MicrobatchGroup &&
      p.microbatch_group_size != p.degrees[plan::Axis::Pipeline]) {
    g.arg("--microbatch-group-size-per-virtual-pipeline-stage", p.microbatch_group_size);
  }
  if (p.sequence_parallel) g.flag("--sequence-parallel");
  if (p.degrees[plan::Axis::Context] > 1) {
    g.arg("--context-parallel-size", p.degrees[plan::Axis::Context]);
    g.arg("--cp-comm-type", plan::name_of(plan::kContextCommNames, p.context_comm));
  }
  if (p.degrees[plan::Axis::Expert] > 1) {
    g.arg("--expert-model-parallel-size", p.degrees[plan::Axis::Expert]);
    // The dispatchers the simulator models (Megatron's default all-gathers).
    if (plan::deduplicates_tokens(p.dispatcher)) {
      core_args(core, McoreRun::FlexDispatcher, g);
    } else {
      g.arg("--moe-token-dispatcher-type", "alltoall");
    }
  }
  if (p.degrees[plan::Axis::ExpertTensor] != p.degrees[plan::Axis::Tensor])
    g.arg("--expert-tensor-parallel-size", p.degrees[plan::Axis::ExpertTensor]);
  const plan::Placement order = plan::complete_order(p.placement);
  if (order == plan::complete_order({plan::Axis::Tensor, plan::Axis::Pipeline, plan::Axis::Data})) {
    g.flag("--use-tp-pp-dp-mapping");
  } else if (order != plan::complete_order(plan::kMegatronPlacement)) {
    cannot_express(in, kMegatronTarget, "placement",
                   fmt::format("Megatron-LM orders ranks tp-cp-ep-dp-pp, or tp-cp-ep-pp-dp with "
                               "--use-tp-pp-dp-mapping, not {}",
                               plan::to_string(p.placement)));
  }
}

void training_args(const ExportInput& in, const std::vector<McoreSetting>& core, ArgGroup& g) {
  const plan::Plan& p = in.plan;
  switch (p.precision) {
    case plan::Precision::Bf16: g.flag("--bf16"); break;
    case plan::Precision::Fp16: g.flag("--fp16"); break;
    case plan::Precision::Fp32: break;
    case plan::Precision::Fp8:
    case plan::Precision::Mxfp8:
    case plan::Precision::Fp8Blockwise:
      g.flag("--bf16");
      g.arg("--fp8-format", "hybrid");
      g.arg("--fp8-recipe", plan::name_of(plan::kMegatronFp8Recipes, p.precision));
  }
  if (p.fp8_param_gather) g.flag("--fp8-param-gather");
  const bool megatron_fp32_default = p.precision != plan::Precision::Fp16;  // fp16: Megatron reduces in fp16
  if (p.grad_reduce_in_fp32 && !megatron_fp32_default) g.flag("--accumulate-allreduce-grads-in-fp32");
  if (!p.grad_reduce_in_fp32 && megatron_fp32_default) g.flag("--grad-reduce-in-bf16");
  core_args(core, McoreRun::Attention, g);

  core_args(core, McoreRun::Recompute, g);
  if (p.recompute == plan::Recompute::Selective && p.recompute_modules != model::RecomputeModules{}) {
    g.arg("--recompute-modules", fmt::format("{}", fmt::join(model::module_names(p.recompute_modules), " ")));
  }
  core_args(core, McoreRun::Offload, g);

  switch (p.zero) {
    case 0: break;
    case 1:
      if (p.optimizer != plan::Optimizer::Muon) g.flag("--use-distributed-optimizer");
      break;
    default:
      // Megatron FSDP shards gradients (ZeRO-2) or gradients and parameters (ZeRO-3) as well. Its
      // version 1 (the default) runs Megatron-Core's distributed optimizer, and validate_args accepts
      // only the fsdp_dtensor checkpoint format with it. Fused gradient accumulation is off, as in the
      // required flags of the January 2026 Megatron FSDP user guide: validate_args warns that TE must
      // support it for sharded gradients, and off runs with any TE at the cost of a gradient copy.
      if (p.optimizer == plan::Optimizer::Muon) {
        cannot_express(in, kMegatronTarget, "optimizer",
                       "Megatron-LM's validate_args accepts only the Adam and SGD optimizers with Megatron FSDP "
                       "(zero 2 or 3); Muon runs with zero 0 or 1 (dist_muon)");
      }
      g.flag("--use-megatron-fsdp");
      g.arg("--data-parallel-sharding-strategy", p.zero == 2 ? "optim_grads" : "optim_grads_params");
      g.flag("--use-distributed-optimizer");
      g.flag("--no-gradient-accumulation-fusion");
      g.arg("--ckpt-format", "fsdp_dtensor");
  }
  if (p.degrees[plan::Axis::DataReplica] > 1)
    g.arg("--num-distributed-optimizer-instances", p.degrees[plan::Axis::DataReplica]);
  if (p.overlap_grad_reduce) g.flag("--overlap-grad-reduce");
  if (p.overlap_param_gather) {
    if (!p.overlap_grad_reduce || p.zero == 0) {
      cannot_express(in, kMegatronTarget, "overlap.param_gather",
                     "Megatron-LM overlaps the parameter all-gather only with a sharded optimizer (zero >= 1) "
                     "and --overlap-grad-reduce (overlap.grad_reduce: true)");
    }
    g.flag("--overlap-param-gather");
  }
  if (p.overlap_tensor_comm) {
    if (!p.sequence_parallel) {
      cannot_express(in, kMegatronTarget, "overlap.tensor_comm", "Megatron-LM's --tp-comm-overlap needs --sequence-parallel");
    }
    g.flag("--tp-comm-overlap");
  }
  if (p.overlap_moe_expert_comm) g.flag("--overlap-moe-expert-parallel-comm");
  // Muon's Megatron optimizer is not the distributed optimizer; dist_muon shards it.
  if (p.optimizer == plan::Optimizer::Muon) g.arg("--optimizer", p.zero >= 1 ? "dist_muon" : "muon");
  if (p.precision_aware_optimizer) g.flag("--use-precision-aware-optimizer");
  for (const auto& [key, dtype] : plan::moment_dtypes(p)) {
    if (dtype != plan::StateDtype::Fp32) g.arg(plan::command_line_flag(key), plan::name_of(plan::kStateDtypeNames, dtype));
  }
  core_args(core, McoreRun::Capacity, g);
}

std::string bash_array(const ArgGroup& g) {
  std::string out = g.name + "=(\n";
  for (const std::string& line : g.lines) out += "    " + line + "\n";
  return out + ")\n\n";
}

}  // namespace

std::string export_megatron(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  if (const auto error = megatron_recompute_error(p)) cannot_express(in, kMegatronTarget, "recompute", *error);
  const std::vector<McoreSetting> core = megatron_core_settings(decoder_shape(in, kMegatronTarget), p);
  ArgGroup model{"MODEL_ARGS", {}};
  model_args(in, core, model);
  ArgGroup parallel{"MODEL_PARALLEL_ARGS", {}};
  parallel_args(in, core, parallel);
  ArgGroup batch{"BATCH_ARGS", {}};
  batch.arg("--micro-batch-size", p.micro_batch);
  batch.arg("--global-batch-size", p.global_batch);
  ArgGroup training{"TRAINING_ARGS", {}};
  training_args(in, core, training);

  std::string out = "#!/bin/bash\n";
  out += fmt::format("# Megatron-LM launch of {} ({}), written by `mpsim plan export --to megatron`.\n", in.model.name,
                     in.spec.file.empty() ? "a plan" : std::filesystem::path(in.spec.file).filename().string());
  out += fmt::format("# TP {} x CP {} x PP {} x DP {} = {} GPUs on {} node(s) of {}; {} microbatches of {} per step.\n",
                     p.degrees[plan::Axis::Tensor], p.degrees[plan::Axis::Context], p.degrees[plan::Axis::Pipeline],
                     p.degrees[plan::Axis::Data], p.gpus(), in.shape.nodes, in.shape.gpus_per_node, p.microbatches,
                     p.micro_batch);
  out += "# Run it on every node with NODE_RANK and MASTER_ADDR set; the data, tokenizer, optimizer and\n"
         "# checkpoint arguments follow it on the command line (\"$@\").\n";
  if (p.routing_imbalance != 1.0) {
    out += fmt::format("# The prediction assumed the busiest expert rank routes {}x the mean tokens (a property of\n"
                       "# the data and the router, not a launch setting).\n",
                       p.routing_imbalance);
  }
  out += "set -euo pipefail\n\n";
  // Megatron-LM asserts one connection for tensor or context parallelism on Hopper and earlier GPUs,
  // so that the communication kernels launch in the order the overlap expects, but asserts more than
  // one under Megatron FSDP (which then only warns about tensor or context parallelism). Containers
  // often set it to 1, so the FSDP launch unsets it rather than leaving it alone.
  if (p.zero >= 2) {
    out += "# Megatron FSDP needs CUDA_DEVICE_MAX_CONNECTIONS unset or above 1.\nunset CUDA_DEVICE_MAX_CONNECTIONS\n";
  } else if (p.degrees[plan::Axis::Tensor] > 1 || p.degrees[plan::Axis::Context] > 1) {
    out += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
  }
  // The predicted peak is the tensors' (max_memory_allocated) under the planner's margin; the caching
  // allocator's fixed-size segments can fragment far past it (Megatron-Bridge's Llama 3 70B FP8 run went
  // out of memory on rank 0 from fragmentation and ran with expandable segments, docs/validation.md "Memory").
  // A setting made before the script stands.
  out += "# The predicted peak is of tensors: expandable segments keep the allocator's fragmentation from\n"
         "# failing a plan that fits (Megatron-Bridge's memory tuning); a setting made before this stands.\n"
         "export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}\n";
  out += fmt::format("GPUS_PER_NODE={}\nNUM_NODES={}\n\n", in.shape.gpus_per_node, in.shape.nodes);
  out += "DISTRIBUTED_ARGS=(\n"
         "    --nproc_per_node $GPUS_PER_NODE\n"
         "    --nnodes $NUM_NODES\n"
         "    --node_rank ${NODE_RANK:-0}\n"
         "    --master_addr ${MASTER_ADDR:-localhost}\n"
         "    --master_port ${MASTER_PORT:-6000}\n"
         ")\n\n";
  for (const ArgGroup* g : {&model, &parallel, &batch, &training}) {
    if (!g->lines.empty()) out += bash_array(*g);
  }
  out += "torchrun \"${DISTRIBUTED_ARGS[@]}\" pretrain_gpt.py \\\n";
  for (const ArgGroup* g : {&model, &parallel, &batch, &training}) {
    if (!g->lines.empty()) out += fmt::format("    \"${{{}[@]}}\" \\\n", g->name);
  }
  out += "    \"$@\"\n";
  return out;
}

}  // namespace mpsim::interop
