#include "executor/profile/layer_profiler.h"

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "executor/net/buffer.h"
#include "executor/net/init.h"
#include "executor/net/layers.h"
#include "executor/net/network.h"
#include "sim/plan/plan.h"

namespace mpsim::executor::profile {
namespace {

/// One pipeline stage holding every layer of `model`, tensor degree 1: the plan build_chunk_layers()
/// needs to hand out the whole model (partition boundaries over the partitionable layers).
plan::Plan whole_model_plan(const model::Model& model, int micro_batch) {
  const bool has_blocks = std::any_of(model.layers.begin(), model.layers.end(),
                                      [](const model::Layer& l) { return l.kind == model::LayerKind::Transformer; });
  int units = 0;
  for (const model::Layer& l : model.layers) units += (!has_blocks || l.kind == model::LayerKind::Transformer) ? 1 : 0;
  plan::Plan p;
  p.micro_batch = micro_batch;
  p.global_batch = micro_batch;
  p.microbatches = 1;
  p.partition = {0, units};
  return p;
}

/// One microbatch of seeded data, as Network makes it for step 0, microbatch 0.
Batch make_batch(const NetDims& dims, int micro_batch, std::uint64_t seed) {
  Batch b;
  b.samples = micro_batch;
  b.rows = static_cast<std::int64_t>(micro_batch) * dims.seq;
  b.loss_scale = 1.0f;
  for (std::int64_t s = 0; s < b.samples; ++s) {
    const auto tokens = sample_tokens(seed, 0, s, dims.seq, dims.vocab);
    b.tokens.insert(b.tokens.end(), tokens.begin(), tokens.end() - 1);
    b.labels.insert(b.labels.end(), tokens.begin() + 1, tokens.end());
    for (std::int64_t p = 0; p < dims.seq; ++p) b.positions.push_back(static_cast<std::int32_t>(p));
    for (std::int64_t p = 0; p < dims.seq * dims.hidden; ++p) {
      b.inputs.push_back(seeded_uniform(seed, 0xDA7A, 0, static_cast<std::uint64_t>(s * dims.seq * dims.hidden + p)));
    }
  }
  return b;
}

/// Device memory released on scope exit.
class Flat {
 public:
  Flat(Backend& backend, std::size_t count) : backend_(backend), data_(backend.allocate(count)) {}
  ~Flat() { backend_.release(data_); }
  Flat(const Flat&) = delete;
  Flat& operator=(const Flat&) = delete;
  [[nodiscard]] float* data() const noexcept { return data_; }

 private:
  Backend& backend_;
  float* data_;
};

double seconds_between(const std::vector<std::int64_t>& marks, std::size_t i) {
  return static_cast<double>(marks[i + 1] - marks[i]) * 1e-9;
}

/// "12.345678 ms": whole nanoseconds, exactly.
std::string time_text(double seconds) {
  const auto ns = static_cast<std::int64_t>(seconds * 1e9 + 0.5);
  return fmt::format("\"{}.{:06d} ms\"", ns / 1000000, ns % 1000000);
}

std::string yaml_quoted(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

/// The executor's backends compute and keep every tensor in fp32 (backend.h).
constexpr int kExecutorDtypeBytes = 4;

}  // namespace

LayerProfile profile_layers(Backend& backend, const model::Model& model, const LayerProfileOptions& options) {
  if (options.micro_batch < 1) throw std::invalid_argument("the micro batch must be at least 1");
  if (options.repetitions < 1) throw std::invalid_argument("at least one timed repetition is needed");
  if (options.rounds < 1) throw std::invalid_argument("at least one round is needed");
  if (model.layers.empty()) throw std::invalid_argument("the model has no layers");
  const plan::Plan plan = whole_model_plan(model, options.micro_batch);
  const NetDims dims = net_dims(model, 1);
  std::vector<std::unique_ptr<Layer>> layers = build_chunk_layers(model, plan, 0, 0);

  // Parameters and gradients in flat buffers, initialised as Network initialises them.
  std::size_t count = 0;
  for (auto& layer : layers) {
    for (Param& p : layer->params()) {
      p.offset = count;
      count += p.count();
    }
  }
  const std::size_t flat = std::max<std::size_t>(count, 1);
  const Flat params(backend, flat), grads(backend, flat), adam_m(backend, flat), adam_v(backend, flat);
  std::vector<float> host(flat, 0.0f);
  for (auto& layer : layers) {
    for (Param& p : layer->params()) {
      p.data = params.data() + p.offset;
      p.grad = grads.data() + p.offset;
      for (std::int64_t r = 0; r < p.local_rows; ++r) {
        for (std::int64_t c = 0; c < p.local_cols; ++c) {
          host[p.offset + static_cast<std::size_t>(r * p.local_cols + c)] =
              initial_value(options.seed, layer->model_index(), p, r, c);
        }
      }
    }
  }
  backend.upload(host, params.data());

  MemoryMeter meter;
  LayerContext ctx;
  ctx.backend = &backend;
  ctx.meter = &meter;
  const Batch batch = make_batch(dims, options.micro_batch, options.seed);
  const std::size_t n = layers.size();

  // Which model layer each executor layer's time belongs to: stand-ins go to their neighbour.
  std::vector<std::size_t> owner(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int index = layers[i]->model_index();
    owner[i] = index >= 0 ? static_cast<std::size_t>(index) : (i == 0 ? 0 : model.layers.size() - 1);
  }

  LayerProfile out;
  out.backend = backend.name();
  out.micro_batch = options.micro_batch;
  out.repetitions = options.repetitions;
  out.rounds = std::min(options.rounds, options.repetitions);
  out.layers.assign(model.layers.size(), LayerTiming{});
  // Every timed repetition's passes, per layer.
  std::vector<std::vector<LayerTiming>> timed;
  out.executor_parameters = static_cast<std::int64_t>(count);

  for (int rep = 0; rep < options.warmup + options.repetitions; ++rep) {
    backend.reset_marks();
    std::vector<std::unique_ptr<Stash>> stashes;
    static_cast<void>(backend.record_mark());
    MatrixView x;
    for (std::size_t i = 0; i < n; ++i) {
      stashes.push_back(layers[i]->forward(ctx, batch, x));
      x = stashes.back()->output.view();
      static_cast<void>(backend.record_mark());
    }
    MatrixView dy;
    for (std::size_t i = n; i-- > 0;) {
      layers[i]->backward_input(ctx, batch, *stashes[i], dy);
      dy = stashes[i]->input_grad.view();
      static_cast<void>(backend.record_mark());
    }
    for (std::size_t i = n; i-- > 0;) {
      layers[i]->backward_weight(ctx, batch, *stashes[i]);
      static_cast<void>(backend.record_mark());
    }
    backend.synchronize();
    const std::vector<std::int64_t> marks = backend.mark_times_ns();
    backend.reset_marks();
    if (marks.size() != 3 * n + 1) throw std::logic_error("the backend lost a time mark");
    if (rep < options.warmup) continue;
    std::vector<LayerTiming>& passes = timed.emplace_back(model.layers.size());
    for (std::size_t i = 0; i < n; ++i) {
      LayerTiming& t = passes[owner[i]];
      t.forward_s += seconds_between(marks, i);
      t.backward_input_s += seconds_between(marks, n + (n - 1 - i));
      t.backward_weight_s += seconds_between(marks, 2 * n + (n - 1 - i));
    }
  }
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t k = v.size();
    return k % 2 == 1 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
  };
  // Each pass: the median over the repetitions, as execute reports its median step.
  for (std::size_t l = 0; l < out.layers.size(); ++l) {
    std::vector<double> forward, input, weight;
    for (const auto& passes : timed) {
      forward.push_back(passes[l].forward_s);
      input.push_back(passes[l].backward_input_s);
      weight.push_back(passes[l].backward_weight_s);
    }
    out.layers[l] = {median(forward), median(input), median(weight)};
  }
  // The spread: the repetitions in rounds, in order; each round's median whole-model time.
  std::vector<double> round_medians;
  for (int r = 0; r < out.rounds; ++r) {
    std::vector<double> totals;
    for (std::size_t k = 0; k < timed.size(); ++k) {
      if (static_cast<int>(k * static_cast<std::size_t>(out.rounds) / timed.size()) != r) continue;
      double total = 0;
      for (const LayerTiming& t : timed[k]) total += t.forward_s + t.backward_input_s + t.backward_weight_s;
      totals.push_back(total);
    }
    round_medians.push_back(median(totals));
  }
  const double middle = median(round_medians);
  const auto [fastest, slowest] = std::minmax_element(round_medians.begin(), round_medians.end());
  out.spread = middle > 0 ? (*slowest - *fastest) / middle : 0;
  const double reps = options.repetitions;

  // The optimizer: Adam over every parameter, timed like the passes (mean after a warm-up).
  if (count > 0) {
    std::vector<std::int64_t> marks;
    backend.reset_marks();
    for (int rep = 0; rep < options.warmup + options.repetitions; ++rep) {
      if (rep == options.warmup) static_cast<void>(backend.record_mark());
      AdamHyper hyper;
      hyper.learning_rate = 1e-4f;
      hyper.step = rep + 1;
      backend.adam_step(params.data(), grads.data(), adam_m.data(), adam_v.data(), count, hyper);
    }
    static_cast<void>(backend.record_mark());
    backend.synchronize();
    marks = backend.mark_times_ns();
    backend.reset_marks();
    if (marks.size() == 2) {
      out.adam_s_per_parameter = seconds_between(marks, 0) / reps / static_cast<double>(count);
    }
  }
  return out;
}

LayerProfile profile_layers_on_all_ranks(Backend& backend, const model::Model& model,
                                         const LayerProfileOptions& options) {
  LayerProfile p = profile_layers(backend, model, options);
  const int size = backend.world_size();
  p.ranks = size;
  p.rank_time_factors.assign(static_cast<std::size_t>(size), 1.0);
  if (size == 1) return p;
  std::vector<int> all(static_cast<std::size_t>(size));
  for (int r = 0; r < size; ++r) all[static_cast<std::size_t>(r)] = r;
  const std::unique_ptr<Group> world = backend.make_group(all);
  std::vector<float> values;
  for (const LayerTiming& t : p.layers) {
    values.push_back(static_cast<float>(t.forward_s));
    values.push_back(static_cast<float>(t.backward_input_s));
    values.push_back(static_cast<float>(t.backward_weight_s));
  }
  // Each rank's whole-model time in its own slot (ms: fp32 keeps it well), zeros in the others'.
  const std::size_t rank_slots = values.size();
  double own_total = 0;
  for (const LayerTiming& t : p.layers) own_total += t.forward_s + t.backward_input_s + t.backward_weight_s;
  values.resize(rank_slots + static_cast<std::size_t>(size), 0.0f);
  values[rank_slots + static_cast<std::size_t>(backend.world_rank())] = static_cast<float>(own_total * 1e3);
  values.push_back(static_cast<float>(p.adam_s_per_parameter * 1e9));  // ns: fp32 keeps it well
  values.push_back(static_cast<float>(p.spread));
  const Flat buffer(backend, values.size());
  backend.upload(values, buffer.data());
  backend.all_reduce_sum(*world, buffer.data(), values.size());
  backend.download(buffer.data(), values);
  const double n = size;
  for (std::size_t i = 0; i < p.layers.size(); ++i) {
    p.layers[i].forward_s = values[3 * i] / n;
    p.layers[i].backward_input_s = values[3 * i + 1] / n;
    p.layers[i].backward_weight_s = values[3 * i + 2] / n;
  }
  p.spread = values.back() / n;
  p.adam_s_per_parameter = values[values.size() - 2] / n * 1e-9;
  double mean_total = 0;
  for (int r = 0; r < size; ++r) mean_total += values[rank_slots + static_cast<std::size_t>(r)] / n;
  for (int r = 0; r < size; ++r) {
    const double total = values[rank_slots + static_cast<std::size_t>(r)];
    p.rank_time_factors[static_cast<std::size_t>(r)] = mean_total > 0 ? total / mean_total : 1.0;
  }
  return p;
}

std::string profiled_model_yaml(const model::Model& original, const LayerProfile& profile,
                                const ProfiledModelHeader& header) {
  if (profile.layers.size() != original.layers.size()) {
    throw std::invalid_argument(fmt::format("{} layer timings for a model of {} layers", profile.layers.size(),
                                            original.layers.size()));
  }
  std::string out;
  out += fmt::format("# {} profiled layer by layer: {} backend, micro batch {}, the median of {} repetitions "
                     "(spread over {} rounds)",
                     original.name, profile.backend, profile.micro_batch, profile.repetitions, profile.rounds);
  out += profile.ranks > 1 ? fmt::format(", mean over {} ranks\n", profile.ranks) : "\n";
  if (profile.rank_time_factors.size() > 1) {
    // The model's times are the ranks' mean; a rank far from 1 here computes at its own pace.
    out += "# each rank's whole-model time over the ranks' mean:";
    for (std::size_t r = 0; r < profile.rank_time_factors.size(); ++r) {
      out += fmt::format("{} rank {} {:.3f}", r == 0 ? "" : ",", r, profile.rank_time_factors[r]);
    }
    out += "\n";
  }
  if (!header.command.empty()) out += fmt::format("# measured by: {}\n", header.command);
  if (!header.host.empty() || !header.utc_time.empty()) {
    out += fmt::format("# on {} at {}\n", header.host, header.utc_time);
  }
  out += fmt::format(
      "# Times are per microbatch of {} sample(s) on one rank with no tensor parallelism: plans with another\n"
      "# micro batch or tensor degree need their own profile. Bytes and FLOPs are per sample, from the\n"
      "# original model; activation_bytes is what a layer stashes without tensor parallelism or\n"
      "# recomputation.\n",
      profile.micro_batch);
  if (profile.adam_s_per_parameter > 0) {
    out += fmt::format("# Adam step: timed over the executor's {} parameters\n", profile.executor_parameters);
  }
  if (original.dtype_bytes != kExecutorDtypeBytes) {
    out += fmt::format("# The executor computes in fp32: the model's {}-byte parameters and activations are 4 bytes here.\n",
                       original.dtype_bytes);
  }
  out += "model:\n";
  out += fmt::format("  name: {}\n", yaml_quoted(fmt::format("{}-profiled-mb{}", original.name, profile.micro_batch)));
  out += fmt::format("  family: {}\n", yaml_quoted(original.family.empty() ? std::string("custom") : original.family));
  out += "  dtype: fp32\n";
  // (slowest - fastest) / median of the rounds' median whole-model times: the band a prediction carries.
  out += fmt::format("  profile_spread: {:.4f}\n", profile.spread);
  if (profile.adam_s_per_parameter > 0) {
    // Four significant digits, in picoseconds' resolution: the time parses without rounding.
    out += fmt::format("  optimizer_time_per_parameter: {{ adam: \"{:.4g} ns\" }}\n", profile.adam_s_per_parameter * 1e9);
  }
  if (!header.profiled_from.empty()) out += fmt::format("  profiled_from: {}\n", header.profiled_from);
  out += "  layers:\n";
  for (std::size_t i = 0; i < original.layers.size(); ++i) {
    const model::Layer& l = original.layers[i];
    const LayerTiming& t = profile.layers[i];
    // Bytes in the executor's fp32, not the original's dtype.
    const auto executed = [&](Bytes b) { return Bytes::bytes(b.count() * kExecutorDtypeBytes / original.dtype_bytes); };
    const Bytes activation = executed(model::stashed_activation_bytes(l, 1, 1, false, model::Recompute::None));
    const Bytes input = executed(std::min(l.stashed.layer_input, model::stashed_activation_bytes(l, 1, 1, false, model::Recompute::None)));
    out += fmt::format("    - {{ name: {}, kind: {}, params: {},\n", yaml_quoted(l.name), model::to_string(l.kind),
                       l.parameters);
    out += fmt::format("        forward_time: {}, backward_input_time: {}, backward_weight_time: {},\n",
                       time_text(t.forward_s), time_text(t.backward_input_s), time_text(t.backward_weight_s));
    out += fmt::format("        forward_flops: \"{:.0f} FLOP\", backward_input_flops: \"{:.0f} FLOP\", "
                       "backward_weight_flops: \"{:.0f} FLOP\",\n",
                       l.forward_flops.base(), l.backward_input_flops.base(), l.backward_weight_flops.base());
    out += fmt::format("        activation_bytes: \"{} B\", input_bytes: \"{} B\", output_bytes: \"{} B\", "
                       "tp_allreduces: {} }}\n",
                       activation.count(), input.count(), executed(l.output_bytes).count(), l.tensor_parallel_allreduces_forward);
  }
  return out;
}

}  // namespace mpsim::executor::profile
