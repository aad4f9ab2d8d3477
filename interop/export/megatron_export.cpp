// Megatron-LM's pretrain_gpt.py arguments (megatron/training/arguments.py), written as the torchrun
// scripts of Megatron's examples/ write them: bash arrays of arguments, sizes in variables at the top.
#include <algorithm>
#include <filesystem>
#include <numeric>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/export/export.h"

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

void model_args(const ExportInput& in, ArgGroup& g) {
  const model::TransformerShape& s = decoder_shape(in, kMegatronTarget);
  if (s.activation == model::Activation::Relu || (s.gated_mlp && s.activation != model::Activation::Swiglu)) {
    cannot_express_model(in, kMegatronTarget, "activation", "Megatron's flags give GELU, SwiGLU (--swiglu) or squared ReLU (--squared-relu)");
  }
  g.arg("--num-layers", s.layers);
  g.arg("--hidden-size", s.hidden);
  g.arg("--ffn-hidden-size", s.ffn);
  g.arg("--num-attention-heads", s.heads);
  if (!s.mla) {
    if (s.kv_heads != s.heads) {
      g.flag("--group-query-attention");
      g.arg("--num-query-groups", s.kv_heads);
    }
    if (s.head_dim * s.heads != s.hidden) g.arg("--kv-channels", s.head_dim);
  }
  g.arg("--seq-length", s.seq_len);
  g.arg("--max-position-embeddings", s.positions == model::PositionKind::Learned ? s.max_positions : s.seq_len);
  g.arg("--position-embedding-type", s.positions == model::PositionKind::Rotary ? "rope" : "learned_absolute");
  g.arg("--normalization", s.norm == model::NormKind::RmsNorm ? "RMSNorm" : "LayerNorm");
  if (s.activation == model::Activation::Swiglu) g.flag("--swiglu");
  if (s.activation == model::Activation::SquaredRelu) g.flag("--squared-relu");
  if (!s.biases) g.flag("--disable-bias-linear");
  if (!s.tied_embeddings) g.flag("--untie-embeddings-and-output-weights");
  if (s.qk_norm) g.flag("--qk-layernorm");
  if (!s.dropout) {
    g.arg("--attention-dropout", 0);
    g.arg("--hidden-dropout", 0);
  }
  // The model's vocabulary as mpsim counts it; --make-vocab-size-divisible-by 1 keeps Megatron from
  // padding it further (it still rounds up to a multiple of the tensor size).
  g.arg("--vocab-size", s.vocab);
  g.arg("--make-vocab-size-divisible-by", 1);
  if (s.mla) {
    g.flag("--multi-latent-attention");
    if (s.mla->q_lora_rank > 0) g.arg("--q-lora-rank", s.mla->q_lora_rank);
    g.arg("--kv-lora-rank", s.mla->kv_lora_rank);
    g.arg("--qk-head-dim", s.mla->qk_nope_head_dim);
    g.arg("--qk-pos-emb-head-dim", s.mla->qk_rope_head_dim);
    g.arg("--v-head-dim", s.mla->v_head_dim);
  }
  if (s.moe) {
    g.arg("--num-experts", s.moe->experts);
    g.arg("--moe-router-topk", s.moe->top_k);
    g.arg("--moe-ffn-hidden-size", s.moe->expert_ffn);
    if (s.moe->shared_experts > 0) {
      g.arg("--moe-shared-expert-intermediate-size", s.moe->shared_experts * s.moe->shared_expert_ffn);
    }
    const std::string pattern = moe_layer_pattern(s);
    if (pattern != "1") g.arg("--moe-layer-freq", pattern);
    if (s.moe->router_bias) g.flag("--moe-router-enable-expert-bias");
    g.flag("--moe-grouped-gemm");
  }
  if (s.mtp_layers > 0) g.arg("--mtp-num-layers", s.mtp_layers);
}

void parallel_args(const ExportInput& in, ArgGroup& g) {
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
  g.arg("--tensor-model-parallel-size", p.degrees[plan::Axis::Tensor]);
  g.arg("--pipeline-model-parallel-size", p.degrees[plan::Axis::Pipeline]);
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
      g.arg("--moe-token-dispatcher-type", "flex");
      g.arg("--moe-flex-dispatcher-backend", std::string(plan::name_of(plan::kFlexBackendNames, p.dispatcher)));
      if (p.flex_dispatcher_sms) {
        g.arg(plan::command_line_flag(plan::name_of(plan::kFlexDispatcherSmsKeys, p.dispatcher)), *p.flex_dispatcher_sms);
      }
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

void training_args(const ExportInput& in, ArgGroup& g) {
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
  if (p.attention == plan::AttentionKernel::Standard) g.arg("--attention-backend", "unfused");

  switch (p.recompute) {
    case plan::Recompute::None: break;
    case plan::Recompute::Full:
      g.arg("--recompute-granularity", model::traits(p.recompute).megatron);
      g.arg("--recompute-method", "uniform");
      g.arg("--recompute-num-layers", 1);
      break;
    case plan::Recompute::Selective:
      g.arg("--recompute-granularity", model::traits(p.recompute).megatron);
      if (p.recompute_modules != model::RecomputeModules{}) {
        g.arg("--recompute-modules", fmt::format("{}", fmt::join(model::module_names(p.recompute_modules), " ")));
      }
      break;
  }
  if (p.activation_offload_layers > 0) {
    g.flag("--cpu-offloading");
    g.arg("--cpu-offloading-num-layers", p.activation_offload_layers);
  }

  switch (p.zero) {
    case 0: break;
    case 1:
      if (p.optimizer != plan::Optimizer::Muon) g.flag("--use-distributed-optimizer");
      break;
    default:
      // Megatron FSDP shards gradients (ZeRO-2) or gradients and parameters (ZeRO-3) as well.
      g.flag("--use-megatron-fsdp");
      g.arg("--data-parallel-sharding-strategy", p.zero == 2 ? "optim_grads" : "optim_grads_params");
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
  if (p.expert_capacity_factor) g.arg("--moe-expert-capacity-factor", *p.expert_capacity_factor);
  if (p.pad_expert_input_to_capacity) g.flag("--moe-pad-expert-input-to-capacity");
}

std::string bash_array(const ArgGroup& g) {
  std::string out = g.name + "=(\n";
  for (const std::string& line : g.lines) out += "    " + line + "\n";
  return out + ")\n\n";
}

}  // namespace

std::string export_megatron(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  ArgGroup model{"MODEL_ARGS", {}};
  model_args(in, model);
  ArgGroup parallel{"MODEL_PARALLEL_ARGS", {}};
  parallel_args(in, parallel);
  ArgGroup batch{"BATCH_ARGS", {}};
  batch.arg("--micro-batch-size", p.micro_batch);
  batch.arg("--global-batch-size", p.global_batch);
  ArgGroup training{"TRAINING_ARGS", {}};
  training_args(in, training);

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
  // Megatron-LM asserts it for tensor or context parallelism on Hopper and earlier GPUs, so that
  // the communication kernels launch in the order the overlap expects.
  if (p.degrees[plan::Axis::Tensor] > 1 || p.degrees[plan::Axis::Context] > 1)
    out += "export CUDA_DEVICE_MAX_CONNECTIONS=1\n";
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
