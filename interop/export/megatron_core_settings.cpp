#include "interop/export/megatron_core_settings.h"

#include <algorithm>
#include <stdexcept>
#include <type_traits>

#include <fmt/format.h>

namespace mpsim::interop {

namespace {

const MegatronFlagName* flag_name(std::string_view key) {
  const auto* it = std::find_if(std::begin(kMegatronFlagNames), std::end(kMegatronFlagNames),
                                [&](const MegatronFlagName& f) { return f.key == key; });
  return it == std::end(kMegatronFlagNames) ? nullptr : it;
}

/// Appends the settings of one run.
struct RunWriter {
  std::vector<McoreSetting>& out;
  McoreRun run;
  void set(std::string_view key, McoreValue value) { out.push_back({run, key, std::move(value)}); }
  void set(std::string_view key, std::string_view value) { set(key, McoreValue(std::string(value))); }
  void set(std::string_view key, const char* value) { set(key, McoreValue(std::string(value))); }
  void set(std::string_view key, std::int64_t value) { set(key, McoreValue(value)); }
  void set(std::string_view key, int value) { set(key, McoreValue(std::int64_t{value})); }
  void set(std::string_view key, bool value) { set(key, McoreValue(value)); }
  void unset(std::string_view key) { set(key, McoreValue()); }
};

void shape_settings(const model::TransformerShape& s, std::vector<McoreSetting>& out) {
  RunWriter size{out, McoreRun::Size};
  size.set("num_layers", s.layers);
  size.set("hidden_size", s.hidden);
  size.set("ffn_hidden_size", s.ffn);
  size.set("num_attention_heads", s.heads);
  RunWriter{out, McoreRun::Sequence}.set("seq_length", s.seq_len);
  RunWriter embedding{out, McoreRun::Embedding};
  embedding.set("position_embedding_type", s.positions == model::PositionKind::Rotary ? "rope" : "learned_absolute");
  embedding.set("normalization", s.norm == model::NormKind::RmsNorm ? "RMSNorm" : "LayerNorm");
  // Both frameworks default to 10000 and 1e-5, which silently trains a different Llama-3 (500000)
  // or Qwen3 (1000000, 1e-6): the model's values are always written.
  if (s.positions == model::PositionKind::Rotary) embedding.set("rotary_base", s.rotary_base);
  // Llama 3.1's frequency bands (Megatron-Core's RotaryEmbedding._apply_scaling: its band edges and
  // original context are fixed; decoder_shape refuses others). Latent attention takes YaRN below.
  if (s.rope_scaling && s.rope_scaling->kind == model::RopeScalingKind::Llama3 && !s.mla) {
    embedding.set("rope_scaling", true);
    embedding.set("rope_scaling_factor", McoreValue(s.rope_scaling->factor));
  }
  embedding.set("layernorm_epsilon", McoreValue(s.norm_epsilon));
  RunWriter linear{out, McoreRun::Linear};
  linear.set("add_bias_linear", s.biases);
  linear.set("share_embeddings_and_output_weights", s.tied_embeddings);
  linear.set("qk_layernorm", s.qk_norm);
  // The model's vocabulary as mpsim counts it; a divisor of 1 keeps Megatron from padding it further
  // (it still rounds up to a multiple of the tensor size).
  RunWriter attention{out, McoreRun::VocabAttention};
  attention.set("vocab_size", s.vocab);
  attention.set("make_vocab_size_divisible_by", 1);
  if (s.mla) {
    attention.set("multi_latent_attention", true);
    if (s.mla->q_lora_rank > 0) attention.set("q_lora_rank", s.mla->q_lora_rank);
    attention.set("kv_lora_rank", s.mla->kv_lora_rank);
    attention.set("qk_head_dim", s.mla->qk_nope_head_dim);
    attention.set("qk_pos_emb_head_dim", s.mla->qk_rope_head_dim);
    attention.set("v_head_dim", s.mla->v_head_dim);
    // MLATransformerConfig defaults to YaRN with factor 40 (and Megatron-LM's --rotary-scaling-factor to
    // 1): the model's own RoPE is always written.
    const bool yarn = s.rope_scaling && s.rope_scaling->kind == model::RopeScalingKind::Yarn;
    attention.set("rope_type", yarn ? "yarn" : "rope");
    // MLATransformerConfig refuses fused RoPE (Megatron-LM's default) for any rope_type but yarn.
    if (!yarn) attention.set("apply_rope_fusion", false);
    if (yarn) {
      attention.set("rotary_scaling_factor", McoreValue(s.rope_scaling->factor));
      attention.set("mscale", McoreValue(s.rope_scaling->mscale));
      attention.set("mscale_all_dim", McoreValue(s.rope_scaling->mscale_all_dim));
    }
  }
  RunWriter experts{out, McoreRun::Experts};
  RunWriter routing{out, McoreRun::Routing};
  if (s.moe) {
    experts.set("num_moe_experts", s.moe->experts);
    experts.set("moe_router_topk", s.moe->top_k);
    experts.set("moe_ffn_hidden_size", s.moe->expert_ffn);
    if (s.moe->shared_experts > 0) {
      experts.set("moe_shared_expert_intermediate_size", s.moe->shared_experts * s.moe->shared_expert_ffn);
    }
    if (s.moe->router_bias) routing.set("moe_router_enable_expert_bias", true);
    routing.set("moe_grouped_gemm", true);
  }
  if (s.mtp_layers > 0) routing.set("mtp_num_layers", s.mtp_layers);
}

void plan_settings(const plan::Plan& p, std::vector<McoreSetting>& out) {
  RunWriter sizes{out, McoreRun::ParallelSizes};
  sizes.set("tensor_model_parallel_size", p.degrees[plan::Axis::Tensor]);
  sizes.set("pipeline_model_parallel_size", p.degrees[plan::Axis::Pipeline]);
  if (plan::deduplicates_tokens(p.dispatcher)) {
    RunWriter flex{out, McoreRun::FlexDispatcher};
    flex.set("moe_token_dispatcher_type", "flex");
    flex.set("moe_flex_dispatcher_backend", plan::name_of(plan::kFlexBackendNames, p.dispatcher));
    if (p.flex_dispatcher_sms)
      flex.set(plan::name_of(plan::kFlexDispatcherSmsKeys, p.dispatcher), *p.flex_dispatcher_sms);
  }
  RunWriter recompute{out, McoreRun::Recompute};
  switch (p.recompute) {
    case plan::Recompute::None:
      recompute.unset("recompute_granularity");
      recompute.unset("recompute_method");
      recompute.unset("recompute_num_layers");
      break;
    case plan::Recompute::Full:
      // Megatron-Core's choice of layers (transformer_config.py requires both under full granularity);
      // the exports refuse a method Megatron has no word for (megatron_recompute_error).
      recompute.set("recompute_granularity", model::traits(p.recompute).megatron);
      recompute.set("recompute_method", model::traits(p.recompute_method).megatron);
      recompute.set("recompute_num_layers", p.recompute_num_layers);
      if (p.distribute_saved_activations) recompute.set("distribute_saved_activations", true);
      break;
    case plan::Recompute::Op:
      throw std::logic_error("Megatron-Core has no per-op checkpointing; the exports refuse it (megatron_recompute_error)");
    case plan::Recompute::Selective:
      recompute.set("recompute_granularity", model::traits(p.recompute).megatron);
      recompute.unset("recompute_method");
      recompute.unset("recompute_num_layers");
      break;
  }
  if (p.activation_offload_layers > 0) {
    RunWriter offload{out, McoreRun::Offload};
    offload.set("cpu_offloading", true);
    offload.set("cpu_offloading_num_layers", p.activation_offload_layers);
  }
  RunWriter attention{out, McoreRun::Attention};
  if (p.attention == plan::AttentionKernel::Standard) attention.set("attention_backend", "unfused");
  if (p.cross_entropy == plan::CrossEntropy::Te) {
    // Megatron-Core runs Transformer Engine's kernel only with the fusion switch on.
    attention.set("cross_entropy_loss_fusion", true);
    attention.set("cross_entropy_fusion_impl", name_of(plan::kCrossEntropyNames, p.cross_entropy));
  }
  RunWriter capacity{out, McoreRun::Capacity};
  if (p.expert_capacity_factor) capacity.set("moe_expert_capacity_factor", McoreValue(*p.expert_capacity_factor));
  if (p.pad_expert_input_to_capacity) capacity.set("moe_pad_expert_input_to_capacity", true);
}

}  // namespace

std::string McoreSetting::flag() const {
  const MegatronFlagName* name = flag_name(key);
  return name != nullptr ? std::string(name->flag) : plan::command_line_flag(key);
}

bool McoreSetting::switch_sets() const {
  const MegatronFlagName* name = flag_name(key);
  return name == nullptr || name->switch_sets;
}

std::optional<std::string> McoreSetting::megatron_argument() const {
  if (std::holds_alternative<std::monostate>(value)) return std::nullopt;
  if (const bool* b = std::get_if<bool>(&value)) {
    if (*b != switch_sets()) return std::nullopt;
    return flag();
  }
  return fmt::format("{} {}", flag(), config_value());
}

std::string McoreSetting::config_value() const {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::monostate>) {
          return "null";
        } else if constexpr (std::is_same_v<T, double>) {
          // YAML 1.1 (PyYAML) reads 1e-05 as a string; 1.0e-05 is a float there and to argparse.
          std::string text = fmt::format("{}", v);
          if (const auto e = text.find('e'); e != std::string::npos && text.find('.') == std::string::npos)
            text.insert(e, ".0");
          return text;
        } else {
          return fmt::format("{}", v);
        }
      },
      value);
}

std::optional<std::string> megatron_recompute_error(const plan::Plan& p) {
  if (p.recompute == plan::Recompute::Op) {
    return std::string("Megatron-Core has no per-op checkpointing (TorchTitan's selective_ac_option \"op\"); use "
                       "recompute: selective with recompute_modules, or full");
  }
  if (p.recompute == plan::Recompute::Full && model::traits(p.recompute_method).megatron.empty()) {
    return fmt::format("Megatron-Core's recompute_method is uniform or block, not {} (TorchTitan's "
                       "selective_ac_option N)",
                       model::to_string(p.recompute_method));
  }
  return std::nullopt;
}

std::vector<McoreSetting> megatron_core_settings(const model::TransformerShape& shape, const plan::Plan& plan) {
  std::vector<McoreSetting> out;
  shape_settings(shape, out);
  plan_settings(plan, out);
  return out;
}

}  // namespace mpsim::interop
