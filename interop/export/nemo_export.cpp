// Megatron-Bridge's ConfigContainer overrides (megatron/bridge/training/config.py), written as the
// YAML override file its recipe scripts merge into a recipe (--config-file: OmegaConf.merge, then
// apply_overrides). Field names are Megatron-Core's TransformerConfig / ModelParallelConfig (model),
// DistributedDataParallelConfig (ddp) and OptimizerConfig (optimizer), Bridge's CommOverlapConfig
// (comm_overlap) and a registered mixed-precision preset (mixed_precision).
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/export/export.h"
#include "interop/export/megatron_core_settings.h"

namespace mpsim::interop {

namespace {

constexpr std::string_view kBridgeTarget = "Megatron-Bridge";

/// One top-level section of the override file: `key: value` lines, indented under its name.
struct Section {
  std::string name;
  std::vector<std::string> lines;
  template <typename T>
  void set(std::string_view key, const T& value) {
    lines.push_back(fmt::format("{}: {}", key, value));
  }
  void null(std::string_view key) { lines.push_back(fmt::format("{}: null", key)); }
  void comment(std::string_view text) { lines.push_back(fmt::format("# {}", text)); }
};

/// A YAML string in double quotes (the layout's `|` and `*` are YAML syntax when bare).
std::string yaml_string(std::string_view s) { return fmt::format("\"{}\"", s); }

/// Megatron-Core's moe_layer_freq: N (one MoE block in every N, from the first), or one 0/1 per block.
std::string moe_layer_freq(const model::TransformerShape& s) {
  if (s.moe->dense_layers == 0) return std::to_string(s.moe->frequency);
  std::vector<int> pattern;
  for (int i = 0; i < s.layers; ++i) pattern.push_back(s.is_moe_block(i) ? 1 : 0);
  return fmt::format("[{}]", fmt::join(pattern, ", "));
}

/// The Megatron-Core settings of one run, as the section's fields.
void core_fields(const std::vector<McoreSetting>& core, McoreRun run, Section& m) {
  for (const McoreSetting& c : core) {
    if (c.run == run) m.set(c.key, c.config_value());
  }
}

void model_shape(const ExportInput& in, const std::vector<McoreSetting>& core, Section& m) {
  const model::TransformerShape& s = decoder_shape(in, kBridgeTarget);
  if (s.activation != model::Activation::Gelu && s.activation != model::Activation::Swiglu) {
    cannot_express_model(in, kBridgeTarget, "activation",
                         fmt::format("the export writes GELU or SwiGLU models (gated_linear_unit), not {}",
                                     model::to_string(s.activation)));
  }
  if (s.gated_mlp != (s.activation == model::Activation::Swiglu)) {
    cannot_express_model(in, kBridgeTarget, "activation", "the export writes GELU or SwiGLU models (gated_linear_unit)");
  }
  m.comment("The model's shape (TransformerConfig). The MLP's activation_func is the recipe provider's");
  m.comment("(a Python callable, not overridden here): hence the recipe the header names.");
  core_fields(core, McoreRun::Size, m);
  if (!s.mla) {
    m.set("num_query_groups", s.kv_heads);
    m.set("kv_channels", s.head_dim);
  }
  core_fields(core, McoreRun::Sequence, m);
  if (s.positions == model::PositionKind::Learned && s.max_positions != s.seq_len) {
    m.comment(fmt::format("the model's position table has {} rows; Megatron sizes it to seq_length", s.max_positions));
  }
  core_fields(core, McoreRun::Embedding, m);
  m.set("gated_linear_unit", s.gated_mlp);
  core_fields(core, McoreRun::Linear, m);
  m.set("hidden_dropout", s.dropout ? 0.1 : 0.0);
  m.set("attention_dropout", s.dropout ? 0.1 : 0.0);
  core_fields(core, McoreRun::VocabAttention, m);
  if (s.mla && s.rope_scaling && s.rope_scaling->kind == model::RopeScalingKind::Yarn) {
    // MLATransformerConfig's YaRN fields that Megatron-LM has no flag for.
    m.set("original_max_position_embeddings", s.rope_scaling->original_max_position_embeddings);
    m.set("beta_fast", s.rope_scaling->beta_fast);
    m.set("beta_slow", s.rope_scaling->beta_slow);
  }
  core_fields(core, McoreRun::Experts, m);
  if (s.moe) m.set("moe_layer_freq", moe_layer_freq(s));
  core_fields(core, McoreRun::Routing, m);
}

/// The parallel sizes and the layer split. Every field is written, 1 and null included, so that
/// what the recipe set does not survive the merge.
void model_parallel(const ExportInput& in, const std::vector<McoreSetting>& core, Section& m) {
  const plan::Plan& p = in.plan;
  if (p.degrees[plan::Axis::Pipeline] > 1 &&
      !plan::traits(p.schedule).megatron) {  // one stage runs no pipeline schedule
    cannot_express(in, kBridgeTarget, "schedule",
                   fmt::format("Megatron-Core runs 1F1B, or interleaved 1F1B with virtual stages, not {}",
                               plan::to_string(p.schedule)));
  }
  if (plan::complete_order(p.placement) != plan::complete_order(plan::kMegatronPlacement)) {
    cannot_express(in, kBridgeTarget, "placement",
                   fmt::format("the export writes Megatron-Core's default rank order tp-cp-ep-dp-pp, not {}",
                               plan::to_string(p.placement)));
  }
  core_fields(core, McoreRun::ParallelSizes, m);
  m.set("context_parallel_size", p.degrees[plan::Axis::Context]);
  if (p.degrees[plan::Axis::Context] > 1) m.set("cp_comm_type", plan::name_of(plan::kContextCommNames, p.context_comm));
  m.set("expert_model_parallel_size", p.degrees[plan::Axis::Expert]);
  m.set("expert_tensor_parallel_size", p.degrees[plan::Axis::ExpertTensor]);
  m.set("sequence_parallel", p.sequence_parallel);
  m.set("account_for_embedding_in_pipeline_split", false);
  m.set("account_for_loss_in_pipeline_split", false);
  const std::vector<int> blocks = blocks_per_stage(p);
  bool layout = false;
  if (!is_uniform_split(p)) {
    const bool ends_only = p.virtual_stages == 1 && blocks.size() > 2 &&
                           std::all_of(blocks.begin() + 1, blocks.end() - 1, [&](int b) { return b == blocks[1]; });
    if (ends_only) {
      if (blocks.front() != blocks[1]) {
        m.set("num_layers_in_first_pipeline_stage", blocks.front());
      } else {
        m.null("num_layers_in_first_pipeline_stage");
      }
      if (blocks.back() != blocks[1]) {
        m.set("num_layers_in_last_pipeline_stage", blocks.back());
      } else {
        m.null("num_layers_in_last_pipeline_stage");
      }
      m.null("pipeline_model_parallel_layout");
    } else {
      // The layout gives the virtual stages as well; the virtual size follows from it.
      layout = true;
      m.null("num_layers_in_first_pipeline_stage");
      m.null("num_layers_in_last_pipeline_stage");
      m.set("pipeline_model_parallel_layout", yaml_string(pipeline_layout(p)));
    }
  } else {
    m.null("num_layers_in_first_pipeline_stage");
    m.null("num_layers_in_last_pipeline_stage");
    m.null("pipeline_model_parallel_layout");
  }
  if (p.virtual_stages > 1 && !layout) {
    m.set("virtual_pipeline_model_parallel_size", p.virtual_stages);
  } else {
    m.null("virtual_pipeline_model_parallel_size");
  }
  if (plan::traits(p.schedule).rule == plan::ShapeRule::MicrobatchGroup) {
    m.set("microbatch_group_size_per_vp_stage", p.microbatch_group_size);
  }
}

void model_training(const ExportInput& in, const std::vector<McoreSetting>& core, Section& m) {
  const plan::Plan& p = in.plan;
  core_fields(core, McoreRun::Recompute, m);
  if (p.recompute == plan::Recompute::Selective) {
    m.set("recompute_modules", fmt::format("[{}]", fmt::join(model::module_names(p.recompute_modules), ", ")));
  }
  core_fields(core, McoreRun::Offload, m);
  core_fields(core, McoreRun::Attention, m);
  core_fields(core, McoreRun::Capacity, m);
  if (plan::deduplicates_tokens(p.dispatcher)) {
    core_fields(core, McoreRun::FlexDispatcher, m);
  } else if (in.model.shape->moe) {
    // The exchange the simulator models. Written at any expert size: a recipe's dispatcher (Qwen3's
    // sets alltoall, and flex in its DeepEP variants) would otherwise survive the merge.
    m.set("moe_token_dispatcher_type", "alltoall");
  }
  // Megatron FSDP's sharded gradients: fused accumulation off, as in the Megatron-LM export and
  // Megatron-Bridge's own FSDP performance recipes (perf_recipes/llama/*/llama3.py).
  if (p.zero >= 2) m.set("gradient_accumulation_fusion", false);
}

/// The Megatron-Bridge recipe an override file is merged into: the recipe's model provider supplies
/// what the file does not override (the MLP's activation function, router settings, initialisation).
struct BridgeRecipe {
  std::string_view function;  ///< the recipe's generic name (megatron.bridge.recipes.<module>)
  std::string_view module;
  bool own = false;  ///< the model's own recipe, rather than one of the same architecture
};

/// Shipped models (configs/models) with a recipe of their own in Megatron-Bridge (its generic
/// *_pretrain_config names, src/megatron/bridge/recipes/*/__init__ aliases, mid-2026).
constexpr std::pair<std::string_view, BridgeRecipe> kOwnRecipes[] = {
    {"llama2-7b", {"llama2_7b_pretrain_config", "llama", true}},
    {"llama3-8b", {"llama3_8b_pretrain_config", "llama", true}},
    {"llama3-70b", {"llama3_70b_pretrain_config", "llama", true}},
    {"llama3-405b", {"llama31_405b_pretrain_config", "llama", true}},
    {"llama31-405b", {"llama31_405b_pretrain_config", "llama", true}},
    {"qwen3-30b-a3b", {"qwen3_30b_a3b_pretrain_config", "qwen", true}},
    {"qwen3-235b-a22b", {"qwen3_235b_a22b_pretrain_config", "qwen", true}},
    {"deepseek-v3", {"deepseek_v3_pretrain_config", "deepseek", true}},
    {"kimi-k2", {"kimi_k2_pretrain_config", "kimi", true}},
    {"gpt-oss-120b", {"gpt_oss_120b_pretrain_config", "gpt_oss", true}},
    {"gpt3-175b", {"gpt3_175b_pretrain_config", "gpt.gpt3_175b", true}},  // not re-exported by recipes.gpt
};

/// The model's own recipe, else one whose provider builds the same kind of blocks: latent attention
/// (DeepSeek-V3), RMSNorm and SwiGLU experts (Qwen3 MoE), a dense Llama, or a GELU GPT.
BridgeRecipe bridge_recipe(const model::TransformerShape& s, std::string_view model_name) {
  for (const auto& [name, recipe] : kOwnRecipes) {
    if (name == model_name) return recipe;
  }
  if (s.mla) return {"deepseek_v3_pretrain_config", "deepseek"};
  const bool llama_like = s.norm == model::NormKind::RmsNorm && s.activation == model::Activation::Swiglu;
  if (s.moe && llama_like) return {"qwen3_30b_a3b_pretrain_config", "qwen"};
  if (llama_like) return {"llama3_8b_pretrain_config", "llama"};
  return {"vanilla_gpt_pretrain_config", "gpt"};
}

/// The registered MixedPrecisionConfig preset (megatron/bridge/training/mixed_precision.py) of the
/// plan's precision. The preset's setup() writes its grad_reduce_in_fp32 and fp8_param_gather over
/// the ddp and model sections, so the plan's values must be the preset's.
std::string_view mixed_precision_preset(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  struct Preset {
    std::string_view name;
    bool grad_reduce_in_fp32;
    bool fp8_param_gather;
  };
  Preset preset{};
  switch (p.precision) {
    case plan::Precision::Bf16: preset = {"bf16_mixed", true, false}; break;
    case plan::Precision::Fp16: preset = {"fp16_mixed", false, false}; break;
    case plan::Precision::Fp8: preset = {"bf16_with_fp8_current_scaling_mixed", true, true}; break;
    case plan::Precision::Mxfp8: preset = {"bf16_with_mxfp8_mixed", true, true}; break;
    case plan::Precision::Fp8Blockwise: preset = {"bf16_with_fp8_subchannel_scaling_mixed", true, false}; break;
    case plan::Precision::Fp32:
      cannot_express(in, kBridgeTarget, "precision",
                     "Megatron-Bridge's mixed_precision presets are 16-bit (bf16_mixed, fp16_mixed and their FP8 "
                     "variants); fp32 training is a MixedPrecisionConfig set in Python");
  }
  if (p.grad_reduce_in_fp32 != preset.grad_reduce_in_fp32) {
    cannot_express(in, kBridgeTarget, "grad_reduce_in_fp32",
                   fmt::format("the {} preset sets grad_reduce_in_fp32: {} and overrides ddp.grad_reduce_in_fp32; "
                               "set grad_reduce_in_fp32: {} in the plan, or set it on a MixedPrecisionConfig in Python",
                               preset.name, preset.grad_reduce_in_fp32, preset.grad_reduce_in_fp32));
  }
  if (p.fp8_param_gather != preset.fp8_param_gather) {
    cannot_express(in, kBridgeTarget, "fp8_param_gather",
                   fmt::format("the {} preset sets fp8_param_gather: {} and overrides ddp.fp8_param_gather; set "
                               "fp8_param_gather: {} in the plan",
                               preset.name, preset.fp8_param_gather, preset.fp8_param_gather));
  }
  return preset.name;
}

void write_data_parallel(const ExportInput& in, Section& ddp, Section& dist, Section& optimizer, Section& overlap,
                         Section& checkpoint) {
  const plan::Plan& p = in.plan;
  if (p.optimizer != plan::Optimizer::Adam) {
    cannot_express(in, kBridgeTarget, "optimizer",
                   "the export writes Megatron-Core's Adam optimizer (optimizer.optimizer: adam); Muon has no "
                   "confirmed Megatron-Bridge field");
  }
  // Megatron FSDP (version 1, the default) runs on the distributed optimizer: Bridge's config check
  // turns it on by itself, but writing false beside use_megatron_fsdp states a launch that is not run.
  ddp.set("use_distributed_optimizer", p.zero >= 1);
  ddp.set("use_megatron_fsdp", p.zero >= 2);
  // Megatron FSDP's ZeRO-2 / ZeRO-3 analogues (Megatron-LM's --data-parallel-sharding-strategy).
  ddp.set("data_parallel_sharding_strategy",
          p.zero == 2 ? "optim_grads" : p.zero == 3 ? "optim_grads_params" : "no_shard");
  dist.set("use_megatron_fsdp", p.zero >= 2);
  ddp.set("num_distributed_optimizer_instances", p.degrees[plan::Axis::DataReplica]);
  if (p.overlap_param_gather && (!p.overlap_grad_reduce || p.zero == 0)) {
    cannot_express(in, kBridgeTarget, "overlap.param_gather",
                   "Megatron-Core overlaps the parameter all-gather only with a sharded optimizer (zero >= 1) and "
                   "overlap_grad_reduce (overlap.grad_reduce: true)");
  }
  if (p.overlap_tensor_comm && !p.sequence_parallel) {
    cannot_express(in, kBridgeTarget, "overlap.tensor_comm",
                   "Megatron-Core's tp_comm_overlap needs sequence_parallel (sequence_parallel: true)");
  }
  ddp.set("overlap_grad_reduce", p.overlap_grad_reduce);
  ddp.set("overlap_param_gather", p.overlap_param_gather);
  ddp.set("grad_reduce_in_fp32", p.grad_reduce_in_fp32);
  ddp.set("fp8_param_gather", p.fp8_param_gather);
  if (p.zero >= 2) {
    // Bridge's FSDP check turns averaging in the collective off unless symmetric registration is
    // disabled (its FSDP performance recipes set false); fsdp_dtensor is the only checkpoint format
    // it accepts with Megatron FSDP when saving or loading.
    ddp.set("average_in_collective", false);
    checkpoint.set("ckpt_format", "fsdp_dtensor");
  }
  optimizer.set("optimizer", "adam");
  optimizer.set("use_distributed_optimizer", p.zero >= 1);
  // Written either way: recipes turn the precision-aware optimizer on (the Qwen3 MoE ones) and store
  // moments in bf16 (the DeepSeek ones). Bridge turns "torch.bfloat16" back into the dtype; its dtype
  // names have no torch.uint8, Megatron-Core's FP8 moments.
  optimizer.set("use_precision_aware_optimizer", p.precision_aware_optimizer);
  for (const auto& [key, dtype] : plan::moment_dtypes(p)) {
    if (dtype == plan::StateDtype::Fp8) {
      cannot_express(in, kBridgeTarget, key,
                     "Megatron-Core stores FP8 moments as torch.uint8, which Megatron-Bridge's dtype names "
                     "(str_to_dtype) do not give; fp32, bf16 and fp16 are written");
    }
    optimizer.set(key, dtype == plan::StateDtype::Bf16   ? "torch.bfloat16"
                       : dtype == plan::StateDtype::Fp16 ? "torch.float16"
                                                         : "torch.float32");
  }
  // CommOverlapConfig turns the gradient and parameter overlaps on by itself when they are left
  // unset (data parallel > 1 with the distributed optimizer): they are written either way.
  overlap.set("_target_", "megatron.bridge.training.comm_overlap.CommOverlapConfig");
  overlap.set("tp_comm_overlap", p.overlap_tensor_comm);
  overlap.set("overlap_grad_reduce", p.overlap_grad_reduce);
  overlap.set("overlap_param_gather", p.overlap_param_gather);
  if (p.overlap_moe_expert_comm) overlap.set("overlap_moe_expert_parallel_comm", true);
}

std::string yaml_section(const Section& s) {
  std::string out = s.name + ":\n";
  for (const std::string& line : s.lines) out += "  " + line + "\n";
  return out + "\n";
}

}  // namespace

std::string export_nemo(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  if (const auto error = megatron_recompute_error(p)) cannot_express(in, kBridgeTarget, "recompute", *error);
  const std::vector<McoreSetting> core = megatron_core_settings(decoder_shape(in, kBridgeTarget), p);
  Section model{"model", {}};
  model_shape(in, core, model);
  model_parallel(in, core, model);
  model_training(in, core, model);
  Section train{"train", {}};
  train.set("micro_batch_size", p.micro_batch);
  train.set("global_batch_size", p.global_batch);
  Section dataset{"dataset", {}};
  dataset.set("seq_length", in.model.shape->seq_len);
  Section ddp{"ddp", {}};
  Section dist{"dist", {}};
  Section optimizer{"optimizer", {}};
  Section overlap{"comm_overlap", {}};
  Section checkpoint{"checkpoint", {}};
  write_data_parallel(in, ddp, dist, optimizer, overlap, checkpoint);
  const std::string_view precision = mixed_precision_preset(in);

  const std::string plan_name =
      in.spec.file.empty() ? "a plan" : std::filesystem::path(in.spec.file).filename().string();
  std::string out;
  out += fmt::format("# Megatron-Bridge overrides for {} ({}), written by `mpsim plan export --to nemo`.\n",
                     in.model.name, plan_name);
  out += fmt::format("# TP {} x CP {} x PP {} x DP {} = {} GPUs on {} node(s) of {}; {} microbatches of {} per step.\n",
                     p.degrees[plan::Axis::Tensor], p.degrees[plan::Axis::Context], p.degrees[plan::Axis::Pipeline],
                     p.degrees[plan::Axis::Data], p.gpus(), in.shape.nodes, in.shape.gpus_per_node, p.microbatches,
                     p.micro_batch);
  const BridgeRecipe recipe = bridge_recipe(*in.model.shape, in.model.name);
  out += fmt::format("# Recipe: {} (megatron.bridge.recipes.{}), {}.\n", recipe.function, recipe.module,
                     recipe.own ? "the model's own" : "the closest architecture (the model has none)");
  out += "# Merge this file into the recipe's ConfigContainer (OmegaConf.merge, then apply_overrides, as the\n"
         "# recipe scripts' --config-file does), or give each setting to Megatron-Bridge's recipe runner:\n";
  out += fmt::format("#   torchrun --nnodes {} --nproc-per-node {} scripts/training/run_recipe.py \\\n", in.shape.nodes,
                     in.shape.gpus_per_node);
  out += fmt::format("#     --recipe {} --mode pretrain section.field=value ...\n", recipe.function);
  if (p.zero >= 2) {
    out += "# Megatron FSDP: leave CUDA_DEVICE_MAX_CONNECTIONS unset or above 1 (Bridge asserts it).\n";
  }
  // As the Megatron-LM export's script does (megatron_export.cpp): the prediction is of tensors.
  out += "# Launch with PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: the predicted peak is of tensors, and\n"
         "# the allocator's fragmentation can fail a plan that fits without it (Bridge's memory tuning).\n";
  out += "# Each setting also goes on the command line as section.field=value (Hydra style), e.g.\n";
  out += fmt::format("#   model.tensor_model_parallel_size={} train.global_batch_size={} mixed_precision={}\n",
                     p.degrees[plan::Axis::Tensor], p.global_batch, precision);
  out += "# NeMo 2 recipes take the parallel sizes as trainer.strategy.<field> (e.g.\n";
  out += fmt::format("# trainer.strategy.tensor_model_parallel_size={}), the batch as data.micro_batch_size and\n",
                     p.degrees[plan::Axis::Tensor]);
  out += "# data.global_batch_size, and the model's fields as model.config.<field>.\n";
  if (p.precision == plan::Precision::Fp8) {
    out += "# bf16_with_fp8_current_scaling_mixed keeps the first and last transformer block in BF16\n"
           "# (num_layers_at_start_in_bf16 / num_layers_at_end_in_bf16: 1); the prediction ran every block in FP8.\n";
  }
  if (p.routing_imbalance != 1.0) {
    out += fmt::format("# The prediction assumed the busiest expert rank routes {}x the mean tokens (a property of\n"
                       "# the data and the router, not a launch setting).\n",
                       p.routing_imbalance);
  }
  out += "\n";
  for (const Section* s : {&model, &train, &dataset, &ddp, &dist, &optimizer, &overlap, &checkpoint}) {
    if (!s->lines.empty()) out += yaml_section(*s);
  }
  out += fmt::format("mixed_precision: {}\n", precision);
  return out;
}

}  // namespace mpsim::interop
