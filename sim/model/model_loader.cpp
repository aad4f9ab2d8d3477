#include "sim/model/model_loader.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "sim/core/input_kind.h"
#include "sim/core/yaml_field.h"
#include "sim/model/transformer.h"

namespace mpsim::model {
namespace {

// Upper bounds far beyond any published model; they keep every product the generator forms
// (5·heads·seq²·micro_batch bytes, vocab·hidden parameters) well inside 64-bit integers.
// Far above any model's depth (Llama 3 405B: 126 blocks) and any hand-listed model's layer count; a
// bound keeps a typo (or a fuzzed input) from expanding millions of layers.
constexpr std::int64_t kMaxLayers = 10'000;
constexpr std::int64_t kMaxMtpLayers = 16;  // DeepSeek-V3 trains one depth; more than a handful is a typo
constexpr std::int64_t kMaxWidth = std::int64_t{1} << 20;  // hidden, ffn, head_dim
constexpr std::int64_t kMaxHeads = std::int64_t{1} << 12;
constexpr std::int64_t kMaxSeqLen = std::int64_t{1} << 20;
constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;
constexpr std::int64_t kMaxTokenTypes = 1024;
constexpr std::int64_t kMaxParams = std::int64_t{1} << 50;
constexpr std::int64_t kMaxRepeat = kMaxLayers;
constexpr std::int64_t kMaxAllreduces = 64;
constexpr std::int64_t kMaxExperts = 1 << 16;
constexpr std::int64_t kMaxRotaryBase = std::int64_t{1} << 40;  // released models use 1e4 to 1e7
// Released models use 1e-6 to 1e-5; outside these bounds a value is a typo (a missing minus sign).
constexpr double kMinNormEpsilon = 1e-12;
constexpr double kMaxNormEpsilon = 1e-2;
// RoPE scaling: released models extend their context 4x to 64x; the YaRN betas and temperature
// scales are of order 1 to 32.
constexpr double kMaxRopeFactor = 1024.0;
constexpr double kMaxYarnParameter = 1024.0;

constexpr std::pair<std::string_view, Family> kFamilies[] = {
    {"gpt", Family::Gpt}, {"llama", Family::Llama}, {"t5", Family::T5}, {"bert", Family::Bert}};
constexpr std::pair<std::string_view, NormKind> kNorms[] = {{"layernorm", NormKind::LayerNorm},
                                                            {"rmsnorm", NormKind::RmsNorm}};
constexpr std::pair<std::string_view, PositionKind> kPositions[] = {{"learned", PositionKind::Learned},
                                                                    {"rotary", PositionKind::Rotary},
                                                                    {"relative", PositionKind::Relative}};
constexpr std::pair<std::string_view, RopeScalingKind> kRopeScalingKinds[] = {{"llama3", RopeScalingKind::Llama3},
                                                                          {"yarn", RopeScalingKind::Yarn}};
constexpr std::pair<std::string_view, LayerKind> kLayerKinds[] = {{"embedding", LayerKind::Embedding},
                                                                  {"transformer", LayerKind::Transformer},
                                                                  {"output_head", LayerKind::OutputHead},
                                                                  {"generic", LayerKind::Generic}};
/// Bytes per element of the training dtypes.
constexpr std::pair<std::string_view, int> kDtypes[] = {{"bf16", 2}, {"fp16", 2}, {"fp32", 4}};
constexpr int kDefaultDtypeBytes = 2;  // bf16: what large models are trained in

/// An integer of at least `min`; above `max` it is refused as beyond what the arithmetic supports.
std::int64_t bounded_int(const Field& f, std::int64_t min, std::int64_t max) {
  const std::int64_t v = f.as_int_in(min, std::numeric_limits<std::int64_t>::max());
  if (v > max) f.fail(fmt::format("{} is larger than supported (at most {})", v, max));
  return v;
}

std::string child_path(const Field& parent, std::string_view key) {
  return parent.path().empty() ? std::string(key) : parent.path() + "." + std::string(key);
}

[[noreturn]] void fail_missing(const Field& parent, std::string_view key, const std::string& why) {
  throw InputError(parent.location(), child_path(parent, key), why);
}

int dtype_bytes_of(const Field& model) {
  const auto f = model.get("dtype");
  return f ? f->as_enum(kDtypes) : kDefaultDtypeBytes;
}

std::string name_of(const Field& model, std::string_view default_name) {
  const auto f = model.get("name");
  if (!f) return std::string(default_name);
  std::string name = f->as_string();
  if (name.empty()) f->fail("must not be empty");
  return name;
}

std::optional<bool> optional_bool(const Field& m, std::string_view key) {
  const auto f = m.get(key);
  return f ? std::optional<bool>(f->as_bool()) : std::nullopt;
}

/// The longest optimizer step per parameter a model may give: a thousand times what a CPU core's Adam takes.
constexpr double kMaxOptimizerSecondsPerParameter = 1e-5;

/// `optimizer_time_per_parameter: { adam: "7.2 ns" }`: one optimizer step's measured time per parameter,
/// by optimizer.
void read_optimizer_times(const Field& m, Model& model) {
  const auto f = m.get("optimizer_time_per_parameter");
  if (!f) return;
  if (!f->is_map()) f->fail("expected a mapping of optimizer to time per parameter, e.g. { adam: \"7.2 ns\" }");
  std::vector<std::string_view> names;
  for (const auto& [name, optimizer] : kOptimizerNames) names.push_back(name);
  f->expect_keys(names);
  for (const auto& [name, optimizer] : kOptimizerNames) {
    const auto time = f->get(name);
    if (!time) continue;
    const double seconds = time->as_time_seconds();
    if (seconds <= 0) time->fail("must be positive: the measured time of one optimizer step per parameter");
    if (seconds > kMaxOptimizerSecondsPerParameter) {
      time->fail(fmt::format("is more than {} per parameter: is it the whole step's time?",
                             to_string(TimeNs::seconds(kMaxOptimizerSecondsPerParameter))));
    }
    model.optimizer_seconds_per_parameter[optimizer] = seconds;
  }
}

// ---- Hyperparameter form ---------------------------------------------------------------------------

MoeShape parse_moe(const Field& f, const TransformerShape& s) {
  f.expect_keys({"experts", "top_k", "expert_ffn", "shared_experts", "shared_expert_ffn", "dense_layers", "frequency",
                 "router_bias"});
  MoeShape e;
  e.experts = bounded_int(f.require("experts"), 1, kMaxExperts);
  const auto top_k = f.require("top_k");
  e.top_k = bounded_int(top_k, 1, kMaxExperts);
  if (e.top_k > e.experts) top_k.fail(fmt::format("top_k ({}) exceeds the experts ({})", e.top_k, e.experts));
  e.expert_ffn = bounded_int(f.require("expert_ffn"), 1, kMaxWidth);
  if (const auto g = f.get("shared_experts")) e.shared_experts = bounded_int(*g, 0, kMaxExperts);
  e.shared_expert_ffn = e.expert_ffn;
  if (const auto g = f.get("shared_expert_ffn")) e.shared_expert_ffn = bounded_int(*g, 1, kMaxWidth);
  if (const auto g = f.get("dense_layers")) {
    e.dense_layers = static_cast<int>(g->as_int_in(0, s.layers - 1));
  }
  if (const auto g = f.get("frequency")) e.frequency = static_cast<int>(bounded_int(*g, 1, kMaxLayers));
  if (const auto v = optional_bool(f, "router_bias")) e.router_bias = *v;
  return e;
}

MlaShape parse_mla(const Field& f) {
  f.expect_keys({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"});
  MlaShape a;
  if (const auto g = f.get("q_lora_rank")) a.q_lora_rank = bounded_int(*g, 0, kMaxWidth);
  a.kv_lora_rank = bounded_int(f.require("kv_lora_rank"), 1, kMaxWidth);
  a.qk_nope_head_dim = bounded_int(f.require("qk_nope_head_dim"), 0, kMaxWidth);
  a.qk_rope_head_dim = bounded_int(f.require("qk_rope_head_dim"), 0, kMaxWidth);
  if (a.qk_head_dim() < 1) f.fail("qk_nope_head_dim + qk_rope_head_dim must be positive");
  a.v_head_dim = bounded_int(f.require("v_head_dim"), 1, kMaxWidth);
  return a;
}

/// rope_scaling in Hugging Face's names: `type` (its rope_type), `factor`, `original_max_position_embeddings`,
/// and llama3's frequency band edges or YaRN's betas and temperature scales.
RopeScaling parse_rope_scaling(const Field& f) {
  f.expect_keys({"type", "factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor",
                 "beta_fast", "beta_slow", "mscale", "mscale_all_dim"});
  RopeScaling r;
  r.kind = f.require("type").as_enum(kRopeScalingKinds);
  r.factor = f.require("factor").as_double_in(1.0, kMaxRopeFactor);
  r.original_max_position_embeddings = bounded_int(f.require("original_max_position_embeddings"), 1, kMaxSeqLen);
  const bool llama3 = r.kind == RopeScalingKind::Llama3;
  for (const char* key : {"low_freq_factor", "high_freq_factor"}) {
    if (!llama3 && f.has(key)) f.require(key).fail(fmt::format("only type llama3 has {}", key));
  }
  for (const char* key : {"beta_fast", "beta_slow", "mscale", "mscale_all_dim"}) {
    if (llama3 && f.has(key)) f.require(key).fail(fmt::format("only type yarn has {}", key));
  }
  if (llama3) {
    r.low_freq_factor = f.require("low_freq_factor").as_double_in(0.0, kMaxYarnParameter);
    const auto high = f.require("high_freq_factor");
    r.high_freq_factor = high.as_double_in(0.0, kMaxYarnParameter);
    if (r.high_freq_factor <= r.low_freq_factor) high.fail("high_freq_factor must exceed low_freq_factor");
    return r;
  }
  if (const auto g = f.get("beta_fast")) r.beta_fast = g->as_double_in(0.0, kMaxYarnParameter);
  if (const auto g = f.get("beta_slow")) r.beta_slow = g->as_double_in(0.0, kMaxYarnParameter);
  if (const auto g = f.get("mscale")) r.mscale = g->as_double_in(0.0, kMaxYarnParameter);
  if (const auto g = f.get("mscale_all_dim")) r.mscale_all_dim = g->as_double_in(0.0, kMaxYarnParameter);
  return r;
}

Model parse_hyperparameters(const Field& m, std::string_view default_name) {
  m.expect_keys({"name", "family", "dtype", "layers", "encoder_layers", "decoder_layers", "hidden", "heads",
                 "kv_heads", "head_dim", "ffn", "seq_len", "decoder_seq_len", "vocab", "max_positions",
                 "token_types", "tied_embeddings", "activation", "gated_mlp", "biases", "dropout", "pooler", "norm", "positions",
                 "moe", "mla", "qk_norm", "attention_sinks", "mtp_layers", "rotary_base", "rope_scaling", "norm_epsilon",
                 "optimizer_time_per_parameter"});
  const Family family = m.require("family").as_enum(kFamilies);
  const bool t5 = family == Family::T5;

  // Blocks. T5 follows Hugging Face's T5Config: `layers` is the depth of each stack.
  const auto layers_field = m.get("layers");
  const auto encoder_field = m.get("encoder_layers");
  const auto decoder_field = m.get("decoder_layers");
  std::int64_t layers = 0;
  if (t5) {
    if (!layers_field && !(encoder_field && decoder_field)) {
      fail_missing(m, "layers", "family t5 needs layers (blocks per stack) or encoder_layers and decoder_layers");
    }
    if (layers_field) layers = bounded_int(*layers_field, 1, kMaxLayers);
  } else {
    layers = bounded_int(m.require("layers"), 1, kMaxLayers);
    for (const char* key : {"encoder_layers", "decoder_layers", "decoder_seq_len"}) {
      if (const auto f = m.get(key)) f->fail(fmt::format("only family t5 has {}", key));
    }
  }
  const auto hidden_field = m.require("hidden");
  const std::int64_t hidden = bounded_int(hidden_field, 1, kMaxWidth);
  const auto heads_field = m.require("heads");
  const std::int64_t heads = bounded_int(heads_field, 1, kMaxHeads);
  const std::int64_t seq_len = bounded_int(m.require("seq_len"), 1, kMaxSeqLen);
  const std::int64_t vocab = bounded_int(m.require("vocab"), 1, kMaxVocab);

  TransformerShape s = default_shape(family, static_cast<int>(layers), hidden, heads, seq_len, vocab);
  if (t5) {
    if (encoder_field) s.encoder_layers = static_cast<int>(bounded_int(*encoder_field, 1, kMaxLayers));
    if (decoder_field) s.decoder_layers = static_cast<int>(bounded_int(*decoder_field, 1, kMaxLayers));
    s.layers = s.encoder_layers + s.decoder_layers;
    if (const auto f = m.get("decoder_seq_len")) s.decoder_seq_len = bounded_int(*f, 1, kMaxSeqLen);
  }

  if (const auto f = m.get("head_dim")) {
    s.head_dim = bounded_int(*f, 1, kMaxWidth);
  } else if (hidden % heads != 0) {
    heads_field.fail(fmt::format("heads ({}) must divide hidden ({}); give head_dim when the attention width "
                                 "differs from hidden",
                                 heads, hidden));
  }
  if (const auto f = m.get("kv_heads")) {
    s.kv_heads = f->as_int_in(1, heads);
    if (heads % s.kv_heads != 0) f->fail(fmt::format("kv_heads ({}) must divide heads ({})", s.kv_heads, heads));
  }
  if (const auto f = m.get("ffn")) {
    s.ffn = bounded_int(*f, 1, kMaxWidth);
  } else if (family == Family::Llama) {
    fail_missing(m, "ffn", "family llama needs ffn (its MLP width is not a fixed multiple of hidden)");
  }

  if (const auto v = optional_bool(m, "tied_embeddings")) s.tied_embeddings = *v;
  if (const auto f = m.get("activation")) {
    constexpr std::pair<std::string_view, Activation> kActivations[] = {{"gelu", Activation::Gelu},
                                                                        {"swiglu", Activation::Swiglu},
                                                                        {"squared-relu", Activation::SquaredRelu},
                                                                        {"relu", Activation::Relu}};
    s.activation = f->as_enum(kActivations);
    s.gated_mlp = s.activation == Activation::Swiglu;
  }
  if (const auto v = optional_bool(m, "gated_mlp")) s.gated_mlp = *v;
  if (const auto v = optional_bool(m, "biases")) s.biases = *v;
  if (const auto v = optional_bool(m, "dropout")) s.dropout = *v;
  if (const auto f = m.get("pooler")) {
    if (family != Family::Bert) f->fail("only family bert has a pooler");
    s.pooler = f->as_bool();
  }
  if (const auto f = m.get("norm")) s.norm = f->as_enum(kNorms);
  if (const auto f = m.get("positions")) set_positions(s, f->as_enum(kPositions));
  if (const auto f = m.get("max_positions")) {
    if (s.positions != PositionKind::Learned) f->fail("only learned positions have a position table");
    s.max_positions = bounded_int(*f, s.seq_len, kMaxSeqLen);
  }
  if (const auto f = m.get("token_types")) s.token_types = bounded_int(*f, 0, kMaxTokenTypes);
  if (const auto v = optional_bool(m, "qk_norm")) s.qk_norm = *v;
  if (const auto v = optional_bool(m, "attention_sinks")) s.attention_sinks = *v;
  if (const auto f = m.get("rotary_base")) {
    if (s.positions != PositionKind::Rotary) f->fail("only rotary positions have a base");
    s.rotary_base = bounded_int(*f, 1, kMaxRotaryBase);
  }
  if (const auto f = m.get("rope_scaling")) {
    if (s.positions != PositionKind::Rotary) f->fail("only rotary positions have rope_scaling");
    s.rope_scaling = parse_rope_scaling(*f);
  }
  if (const auto f = m.get("norm_epsilon")) s.norm_epsilon = f->as_double_in(kMinNormEpsilon, kMaxNormEpsilon);
  if (const auto f = m.get("moe")) s.moe = parse_moe(*f, s);
  if (const auto f = m.get("mla")) {
    if (m.has("head_dim")) m.require("head_dim").fail("with mla, the query-key head width comes from mla");
    if (m.has("kv_heads")) m.require("kv_heads").fail("with mla, keys and values come from mla's latent");
    s.mla = parse_mla(*f);
    s.head_dim = s.mla->qk_head_dim();
  }
  if (const auto f = m.get("mtp_layers")) {
    if (family == Family::T5 || family == Family::Bert) f->fail("multi-token prediction is for decoder-only families (gpt, llama)");
    s.mtp_layers = static_cast<int>(bounded_int(*f, 0, kMaxMtpLayers));
  }

  if (const std::string error = shape_error(s); !error.empty()) m.fail(error);
  Model model = make_transformer(s, name_of(m, default_name), dtype_bytes_of(m));
  read_optimizer_times(m, model);
  return model;
}

// ---- Explicit layer list ---------------------------------------------------------------------------

std::optional<Flops> optional_flops(const Field& layer, std::string_view key) {
  const auto f = layer.get(key);
  return f ? std::optional<Flops>(f->as_flops()) : std::nullopt;
}

std::optional<TimeNs> optional_time(const Field& layer, std::string_view key) {
  const auto f = layer.get(key);
  return f ? std::optional<TimeNs>(f->as_time()) : std::nullopt;
}

/// Backward FLOPs: the total alone is split 50/50; with one half given, the other is the rest.
void read_backward_flops(const Field& layer, Layer& out) {
  const auto total = optional_flops(layer, "backward_flops");
  const auto input = optional_flops(layer, "backward_input_flops");
  const auto weight = optional_flops(layer, "backward_weight_flops");
  if (!total) {
    out.backward_input_flops = input.value_or(Flops{});
    out.backward_weight_flops = weight.value_or(Flops{});
    return;
  }
  if (input && weight) {
    const double sum = (*input + *weight).base();
    // Tolerate the rounding of decimal spellings ("1.2 TFLOP" vs "0.4 TFLOP" + "0.8 TFLOP").
    constexpr double kRelativeTolerance = 1e-9;
    if (std::abs(sum - total->base()) > kRelativeTolerance * std::max(sum, total->base())) {
      layer.require("backward_flops")
          .fail(fmt::format("is {}, but backward_input_flops + backward_weight_flops is {}", to_string(*total),
                            to_string(Flops::flop(sum))));
    }
    out.backward_input_flops = *input;
    out.backward_weight_flops = *weight;
  } else if (input || weight) {
    const Flops given = input ? *input : *weight;
    if (given > *total) {
      layer.require(input ? "backward_input_flops" : "backward_weight_flops")
          .fail(fmt::format("{} exceeds backward_flops ({})", to_string(given), to_string(*total)));
    }
    out.backward_input_flops = input ? *input : Flops(*total - *weight);
    out.backward_weight_flops = weight ? *weight : Flops(*total - *input);
  } else {
    out.backward_input_flops = *total / 2.0;
    out.backward_weight_flops = *total / 2.0;
  }
}

/// Backward times: the total alone is split equally (the odd nanosecond goes to the input half); with one
/// half given, the other is the rest; halves alone are kept as given (a missing half falls back to FLOPs).
void read_backward_times(const Field& layer, Layer& out) {
  const auto total = optional_time(layer, "backward_time");
  const auto input = optional_time(layer, "backward_input_time");
  const auto weight = optional_time(layer, "backward_weight_time");
  out.backward_input_time = input;
  out.backward_weight_time = weight;
  if (!total) return;
  if (input && weight) {
    if (*input + *weight != *total) {
      layer.require("backward_time")
          .fail(fmt::format("is {}, but backward_input_time + backward_weight_time is {}", to_string(*total),
                            to_string(TimeNs(*input + *weight))));
    }
  } else if (input || weight) {
    const TimeNs given = input ? *input : *weight;
    if (given > *total) {
      layer.require(input ? "backward_input_time" : "backward_weight_time")
          .fail(fmt::format("{} exceeds backward_time ({})", to_string(given), to_string(*total)));
    }
    const TimeNs rest = *total - given;
    if (input) out.backward_weight_time = rest;
    else out.backward_input_time = rest;
  } else {
    const TimeNs weight_half = TimeNs::ns(total->base() / 2);
    out.backward_weight_time = weight_half;
    out.backward_input_time = *total - weight_half;
  }
}

int default_allreduces(LayerKind kind) {
  switch (kind) {
    case LayerKind::Transformer: return 2;  // Megatron: after self-attention and after the MLP
    case LayerKind::Embedding: return 1;    // Megatron: the vocabulary-parallel embedding's output
    case LayerKind::OutputHead:
    case LayerKind::Generic: return 0;
  }
  return 0;
}

/// `profiled_from`: the hyperparameter form of the model a profiled model was measured on, which the
/// executor trains in its place. It must have the list's layers, in number and kind, so that a plan's
/// partition cuts both alike.
void read_profiled_from(const Field& f, Model& model) {
  if (!f.is_map()) f.fail("expected the model the profile ran, as a mapping of hyperparameters (family, layers, hidden, ...)");
  if (const auto layers = f.get("layers"); layers && layers->is_sequence()) {
    layers->fail("profiled_from is the hyperparameter form (family, layers, hidden, ...): a listed model is trained as listed");
  }
  auto source = std::make_shared<Model>(parse_hyperparameters(f, model.name));
  if (source->layers.size() != model.layers.size()) {
    f.fail(fmt::format("has {} layers, the list {}: a profiled model keeps the layers of the model it was profiled from",
                       source->layers.size(), model.layers.size()));
  }
  for (std::size_t i = 0; i < model.layers.size(); ++i) {
    if (source->layers[i].kind != model.layers[i].kind) {
      f.fail(fmt::format("layer {} ({}) is {} there and {} in the list: a profiled model keeps the layers' kinds", i,
                         model.layers[i].name, to_string(source->layers[i].kind), to_string(model.layers[i].kind)));
    }
  }
  model.profiled_from = std::move(source);
}

Model parse_layer_list(const Field& m, const Field& list, std::string_view default_name) {
  m.expect_keys({"name", "family", "dtype", "layers", "profile_spread", "optimizer_time_per_parameter", "profiled_from"});
  Model model;
  model.name = name_of(m, default_name);
  model.family = "custom";
  if (const auto f = m.get("profile_spread")) model.profile_spread = f->as_double_in(0.0, 100.0);
  read_optimizer_times(m, model);
  if (const auto f = m.get("family")) {
    model.family = f->as_string();
    if (model.family.empty()) f->fail("must not be empty");
  }
  model.dtype_bytes = dtype_bytes_of(m);

  const std::vector<Field> items = list.items();
  if (items.empty()) list.fail("needs at least one layer");
  std::map<std::string, std::string, std::less<>> seen_names;  // name -> path of its first use
  for (const Field& item : items) {
    item.expect_keys({"name", "kind", "repeat", "params", "forward_flops", "backward_flops",
                      "backward_input_flops", "backward_weight_flops", "forward_time", "backward_time",
                      "backward_input_time", "backward_weight_time", "activation_bytes", "input_bytes",
                      "output_bytes", "tp_allreduces"});
    Layer layer;
    layer.kind = LayerKind::Generic;
    if (const auto f = item.get("kind")) layer.kind = f->as_enum(kLayerKinds);
    if (const auto f = item.get("params")) layer.parameters = bounded_int(*f, 0, kMaxParams);
    layer.forward_flops = optional_flops(item, "forward_flops").value_or(Flops{});
    read_backward_flops(item, layer);
    layer.forward_time = optional_time(item, "forward_time");
    read_backward_times(item, layer);
    // A hand-listed layer is not known to be split by tensor parallelism: all its bytes are replicated.
    if (const auto f = item.get("activation_bytes")) layer.stashed.tp_replicated = f->as_bytes();
    if (const auto f = item.get("output_bytes")) layer.output_bytes = f->as_bytes();
    if (const auto f = item.get("input_bytes")) {
      layer.stashed.layer_input = f->as_bytes();
      if (layer.stashed.layer_input > layer.stashed.tp_replicated) {
        f->fail(fmt::format("{} exceeds activation_bytes ({}): full recomputation never keeps more",
                            to_string(layer.stashed.layer_input), to_string(layer.stashed.tp_replicated)));
      }
    } else {
      const Bytes previous_output = model.layers.empty() ? Bytes::bytes(0) : model.layers.back().output_bytes;
      layer.stashed.layer_input = std::min(previous_output, layer.stashed.tp_replicated);
    }
    layer.tensor_parallel_allreduces_forward = default_allreduces(layer.kind);
    if (const auto f = item.get("tp_allreduces")) {
      layer.tensor_parallel_allreduces_forward = static_cast<int>(bounded_int(*f, 0, kMaxAllreduces));
    }

    const auto name_field = item.get("name");
    const std::string base_name = name_field ? name_field->as_string() : std::string();
    if (name_field && base_name.empty()) name_field->fail("must not be empty");
    const std::int64_t repeat = item.has("repeat") ? bounded_int(item.require("repeat"), 1, kMaxRepeat) : 1;
    if (static_cast<std::int64_t>(model.layers.size()) + repeat > kMaxLayers) {
      (item.has("repeat") ? item.require("repeat") : item)
          .fail(fmt::format("the model would have more than {} layers", kMaxLayers));
    }
    for (std::int64_t i = 0; i < repeat; ++i) {
      Layer copy = layer;
      if (base_name.empty()) {
        copy.name = fmt::format("layer{}", model.layers.size());
      } else {
        copy.name = repeat == 1 ? base_name : fmt::format("{}{}", base_name, i);
      }
      if (i > 0) {
        // Each copy keeps its predecessor's output, which is the copy's own output size.
        const auto input = item.get("input_bytes");
        if (!input) copy.stashed.layer_input = std::min(copy.output_bytes, copy.stashed.tp_replicated);
      }
      const std::string where = item.path();
      if (const auto [it, inserted] = seen_names.emplace(copy.name, where); !inserted) {
        (name_field ? *name_field : item)
            .fail(fmt::format("layer name '{}' is already used by {}", copy.name, it->second));
      }
      model.layers.push_back(std::move(copy));
    }
  }
  if (const auto f = m.get("profiled_from")) read_profiled_from(*f, model);
  return model;
}

}  // namespace

Model parse_model(const Field& model, std::string_view default_name) {
  if (!model.is_map()) model.fail("expected a mapping of model fields");
  if (const auto layers = model.get("layers"); layers && layers->is_sequence()) {
    return parse_layer_list(model, *layers, default_name);
  }
  return parse_hyperparameters(model, default_name);
}

Model load_model(const Field& root) {
  expect_input_kind(root, InputKind::Model);
  root.expect_keys({"model"});
  const std::string stem = std::filesystem::path(root.file()).stem().string();
  return parse_model(root.require("model"), stem.empty() ? std::string("model") : stem);
}

Model load_model_file(const std::filesystem::path& path) { return load_model(YamlDocument::load(path).root()); }

std::string executed_model_yaml(const std::filesystem::path& path) {
  const YamlDocument document = YamlDocument::load(path);
  const Model model = load_model(document.root());
  const Field m = document.root().require("model");
  YAML::Node source;
  std::string name = model.name;
  if (const auto from = m.get("profiled_from")) {
    source = YAML::Clone(from->node());
    name = executed_model(model).name;
  } else if (const auto layers = m.get("layers"); layers && layers->is_sequence()) {
    return {};
  } else {
    source = YAML::Clone(m.node());
  }
  if (!source["name"]) source["name"] = name;
  // What the optimizer took on another machine is not part of the model the executor builds.
  source.remove("optimizer_time_per_parameter");
  YAML::Emitter out;
  out.SetMapFormat(YAML::Flow);
  out.SetSeqFormat(YAML::Flow);
  out << source;
  return out.c_str();
}

}  // namespace mpsim::model
