// `mpsim model ...`: inspect model files.
#include <cstdint>
#include <iostream>
#include <optional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/table.h"
#include "sim/model/model.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan.h"

namespace mpsim::cli {
namespace {

using model::Layer;
using model::Model;
using Json = nlohmann::ordered_json;

struct ShowOptions {
  std::string file;
  bool json = false;
};

/// What `model show --json` reports as a layer's activations: no parallelism, no recomputation.
Bytes plain_activation_bytes(const Layer& layer) {
  return model::stashed_activation_bytes(layer, 1, 1, false, model::Recompute::None);
}

// ---- JSON ("model show --json"; SI units, docs/formats.md "Units") ------------------------------------

Json shape_json(const model::TransformerShape& s) {
  Json j;
  j["family"] = model::to_string(s.family);
  j["layers"] = s.layers;
  if (s.family == model::Family::T5) {
    j["encoder_layers"] = s.encoder_layers;
    j["decoder_layers"] = s.decoder_layers;
  }
  j["hidden"] = s.hidden;
  j["heads"] = s.heads;
  j["kv_heads"] = s.kv_heads;
  j["head_dim"] = s.head_dim;
  j["ffn"] = s.ffn;
  j["seq_len"] = s.seq_len;
  if (s.family == model::Family::T5) j["decoder_seq_len"] = s.decoder_seq_len;
  j["vocab"] = s.vocab;
  j["norm"] = model::to_string(s.norm);
  j["positions"] = model::to_string(s.positions);
  if (s.positions == model::PositionKind::Learned) j["max_positions"] = s.max_positions;
  if (s.positions == model::PositionKind::Rotary) j["rotary_base"] = s.rotary_base;
  if (s.rope_scaling) {
    const model::RopeScaling& r = *s.rope_scaling;
    Json scaling = {{"type", model::to_string(r.kind)},
                                      {"factor", r.factor},
                                      {"original_max_position_embeddings", r.original_max_position_embeddings}};
    if (r.kind == model::RopeScalingKind::Llama3) {
      scaling["low_freq_factor"] = r.low_freq_factor;
      scaling["high_freq_factor"] = r.high_freq_factor;
    } else {
      scaling["beta_fast"] = r.beta_fast;
      scaling["beta_slow"] = r.beta_slow;
      scaling["mscale"] = r.mscale;
      scaling["mscale_all_dim"] = r.mscale_all_dim;
    }
    j["rope_scaling"] = scaling;
  }
  j["norm_epsilon"] = s.norm_epsilon;
  if (s.token_types > 0) j["token_types"] = s.token_types;
  j["tied_embeddings"] = s.tied_embeddings;
  j["gated_mlp"] = s.gated_mlp;
  j["activation"] = std::string(model::to_string(s.activation));
  j["biases"] = s.biases;
  j["dropout"] = s.dropout;
  if (s.family == model::Family::Bert) j["pooler"] = s.pooler;
  if (s.qk_norm) j["qk_norm"] = true;
  if (s.attention_sinks) j["attention_sinks"] = true;
  if (s.moe) {
    const model::MoeShape& e = *s.moe;
    j["moe"] = {{"experts", e.experts},         {"top_k", e.top_k},
                {"expert_ffn", e.expert_ffn},   {"shared_experts", e.shared_experts},
                {"shared_expert_ffn", e.shared_expert_ffn}, {"dense_layers", e.dense_layers},
                {"frequency", e.frequency},     {"router_bias", e.router_bias}};
  }
  if (s.mla) {
    const model::MlaShape& a = *s.mla;
    j["mla"] = {{"q_lora_rank", a.q_lora_rank},
                {"kv_lora_rank", a.kv_lora_rank},
                {"qk_nope_head_dim", a.qk_nope_head_dim},
                {"qk_rope_head_dim", a.qk_rope_head_dim},
                {"v_head_dim", a.v_head_dim}};
  }
  return j;
}

Json layer_json(const Layer& l) {
  Json j;
  j["name"] = l.name;
  j["kind"] = model::to_string(l.kind);
  j["parameters"] = l.parameters;
  j["forward_flops"] = l.forward_flops.count();
  j["backward_flops"] = l.backward_flops().count();
  j["backward_input_flops"] = l.backward_input_flops.count();
  j["backward_weight_flops"] = l.backward_weight_flops.count();
  j["activation_bytes"] = plain_activation_bytes(l).count();
  j["output_bytes"] = l.output_bytes.count();
  j["stashed_bytes"] = {{"tp_replicated", l.stashed.tp_replicated.count()},
                        {"tp_sharded", l.stashed.tp_sharded.count()},
                        {"attention_scores", l.stashed.attention_scores.count()},
                        {"layer_input", l.stashed.layer_input.count()}};
  if (l.forward_time) j["forward_time_s"] = l.forward_time->to_seconds();
  if (l.backward_input_time) j["backward_input_time_s"] = l.backward_input_time->to_seconds();
  if (l.backward_weight_time) j["backward_weight_time_s"] = l.backward_weight_time->to_seconds();
  j["tensor_parallel_allreduces_forward"] = l.tensor_parallel_allreduces_forward;
  return j;
}

Json model_json(const Model& m) {
  Json j;
  j["name"] = m.name;
  j["family"] = m.family;
  j["dtype_bytes"] = m.dtype_bytes;
  j["parameters"] = m.parameters();
  j["active_parameters"] = m.active_parameters();
  j["parameter_bytes"] = m.parameter_bytes().count();
  j["training_flops_per_sample"] = m.training_flops_per_sample().count();
  if (m.shape) j["shape"] = shape_json(*m.shape);
  // A profiled model's measurements (mpsim profile --model-out).
  if (m.profile_spread) j["profile_spread"] = *m.profile_spread;
  if (!m.optimizer_seconds_per_parameter.empty()) {
    Json per = Json::object();
    for (const auto& [optimizer, seconds] : m.optimizer_seconds_per_parameter) {
      per[std::string(plan::name_of(model::kOptimizerNames, optimizer))] = seconds;
    }
    j["optimizer_time_per_parameter_s"] = std::move(per);
  }
  if (m.profiled_from) j["profiled_from"] = m.profiled_from->name;
  Json layers = Json::array();
  for (const Layer& l : m.layers) layers.push_back(layer_json(l));
  j["layers"] = std::move(layers);
  return j;
}

// ---- Human table ------------------------------------------------------------------------------------

/// "1.81 B", "654 M", "24.6 K", "320": parameter counts as model cards write them.
std::string readable_count(std::int64_t n) {
  struct Scale {
    double factor;
    const char* suffix;
  };
  constexpr Scale kScales[] = {{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}};
  const auto v = static_cast<double>(n);
  for (const auto& s : kScales) {
    if (v >= s.factor) {
      const double x = v / s.factor;
      return fmt::format("{} {}", x >= 100 ? fmt::format("{:.0f}", x) : x >= 10 ? fmt::format("{:.1f}", x)
                                                                              : fmt::format("{:.2f}", x),
                         s.suffix);
    }
  }
  return fmt::format("{}", n);
}

std::string grouped(std::int64_t n) {
  std::string digits = fmt::format("{}", n);
  std::string out;
  const std::size_t first = digits.size() % 3 == 0 ? 3 : digits.size() % 3;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i >= first && (i - first) % 3 == 0 && i > 0) out += ',';
    out += digits[i];
  }
  return out;
}

/// A row name for `count` layers starting at `first`: "block0..95 ×96" when the names are a common
/// prefix followed by consecutive numbers, "first..last ×n" otherwise.
std::string run_name(const std::vector<Layer>& layers, std::size_t first, std::size_t count) {
  if (count == 1) return layers[first].name;
  const std::string& a = layers[first].name;
  const std::string& b = layers[first + count - 1].name;
  const auto split = [](const std::string& s) {
    std::size_t i = s.size();
    while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9') --i;
    return i;
  };
  const std::size_t ia = split(a);
  const std::size_t ib = split(b);
  std::string range;
  if (ia < a.size() && ib < b.size() && a.compare(0, ia, b, 0, ib) == 0 && ia == ib) {
    range = fmt::format("{}..{}", a, b.substr(ib));
  } else {
    range = fmt::format("{}..{}", a, b);
  }
  return fmt::format("{} \u00d7{}", range, count);
}

void print_human(const Model& m) {
  std::cout << fmt::format("model       {} ({}, {} bytes per element)\n", m.name, m.family, m.dtype_bytes);
  if (m.shape) {
    const model::TransformerShape& s = *m.shape;
    std::string layers = s.family == model::Family::T5
                             ? fmt::format("{} + {} layers", s.encoder_layers, s.decoder_layers)
                             : fmt::format("{} layers", s.layers);
    std::string seq = s.family == model::Family::T5 ? fmt::format("{}/{}", s.seq_len, s.decoder_seq_len)
                                                    : fmt::format("{}", s.seq_len);
    std::cout << fmt::format("shape       {}, hidden {}, {} heads of {} ({} kv), ffn {}{}, seq {}, vocab {}\n",
                             layers, s.hidden, s.heads, s.head_dim, s.kv_heads, s.ffn,
                             s.gated_mlp ? " gated" : "", seq, s.vocab);
    if (s.moe) {
      const model::MoeShape& e = *s.moe;
      std::cout << fmt::format("experts     {} routed of {} (top {}){}{}{}\n", e.experts, e.expert_ffn, e.top_k,
                               e.shared_experts > 0 ? fmt::format(" + {} shared of {}", e.shared_experts,
                                                                  e.shared_expert_ffn)
                                                    : "",
                               e.dense_layers > 0 ? fmt::format(", first {} blocks dense", e.dense_layers) : "",
                               e.frequency > 1 ? fmt::format(", every {} blocks", e.frequency) : "");
    }
    if (s.mla) {
      const model::MlaShape& a = *s.mla;
      std::cout << fmt::format("attention   latent: q rank {}, kv rank {}, query-key {} + {} rotary, value {}\n",
                               a.q_lora_rank, a.kv_lora_rank, a.qk_nope_head_dim, a.qk_rope_head_dim, a.v_head_dim);
    }
  }
  std::cout << fmt::format("parameters  {} ({}; {} of weights)\n", grouped(m.parameters()),
                           readable_count(m.parameters()), to_string(m.parameter_bytes()));
  if (m.active_parameters() != m.parameters()) {
    std::cout << fmt::format("active      {} ({}) per token\n", grouped(m.active_parameters()),
                             readable_count(m.active_parameters()));
  }
  std::cout << fmt::format("training    {} per sample (forward + backward, no recomputation)\n",
                           to_string(m.training_flops_per_sample()));
  if (m.profiled_from) std::cout << fmt::format("profiled    from {}\n", m.profiled_from->name);
  for (const auto& [optimizer, seconds] : m.optimizer_seconds_per_parameter) {
    std::cout << fmt::format("optimizer   {}: {} per parameter (measured)\n", plan::name_of(model::kOptimizerNames, optimizer),
                             to_string(TimeNs::seconds(seconds)));
  }
  if (m.profile_spread) std::cout << fmt::format("spread      the profile's rounds within {:.1f}%\n", *m.profile_spread * 100);
  std::cout << "\n";

  bool timed = false;
  for (const Layer& l : m.layers) timed = timed || l.forward_time || l.backward_input_time || l.backward_weight_time;
  const auto time_or_dash = [](const std::optional<TimeNs>& t) { return t ? to_string(*t) : std::string("-"); };

  Table table;
  std::vector<std::string> header{"layer", "kind", "params", "forward", "backward", "activations", "output"};
  if (timed) {
    for (const char* h : {"fwd time", "bwd-input time", "bwd-weight time"}) header.emplace_back(h);
  }
  table.add_row(std::move(header));
  for (const model::LayerRun& run : model::identical_runs(m.layers)) {
    const Layer& l = m.layers[run.first];
    std::vector<std::string> row{run_name(m.layers, run.first, run.count),
                                 std::string(model::to_string(l.kind)),
                                 readable_count(l.parameters),
                                 to_string(l.forward_flops),
                                 to_string(l.backward_flops()),
                                 to_string(plain_activation_bytes(l)),
                                 to_string(l.output_bytes)};
    if (timed) {
      row.push_back(time_or_dash(l.forward_time));
      row.push_back(time_or_dash(l.backward_input_time));
      row.push_back(time_or_dash(l.backward_weight_time));
    }
    table.add_row(std::move(row));
  }
  std::cout << table.render();
  std::cout << "\nper layer and per sample; activations: stashed for backward, no parallelism or recomputation";
  std::cout << (timed ? "; times: profiled, per microbatch\n" : "\n");
}

void run_show(const ShowOptions& options) {
  const Model m = model::load_model_file(options.file);
  if (options.json) {
    std::cout << model_json(m).dump(2) << '\n';
  } else {
    print_human(m);
  }
}

}  // namespace

void add_model_commands(CLI::App& app) {
  CLI::App* group = app.add_subcommand("model", "Inspect model files");
  group->require_subcommand(1);
  auto options = std::make_shared<ShowOptions>();
  CLI::App* show = group->add_subcommand("show", "Parameters, FLOPs per sample and the per-layer table of a model");
  show->add_option("FILE", options->file, "model YAML file")->required();
  show->add_flag("--json", options->json, "print JSON in SI units instead of a table");
  show->callback([options] { run_show(*options); });
}

}  // namespace mpsim::cli
