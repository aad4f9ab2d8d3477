#include "sim/model/model.h"

#include <algorithm>
#include <cassert>

namespace mpsim::model {

std::string_view to_string(LayerKind k) noexcept {
  switch (k) {
    case LayerKind::Embedding: return "embedding";
    case LayerKind::Transformer: return "transformer";
    case LayerKind::OutputHead: return "output_head";
    case LayerKind::Generic: return "generic";
  }
  return "?";
}

bool is_recomputed(LayerKind k) noexcept {
  switch (k) {
    case LayerKind::Transformer:
    case LayerKind::Generic: return true;
    case LayerKind::Embedding:
    case LayerKind::OutputHead: return false;
  }
  return false;
}

Flops recomputed_flops(const Model& model, const Layer& layer, Recompute recompute) noexcept {
  if (traits(recompute).whole_layer && is_recomputed(layer.kind)) return layer.forward_flops;
  if (recompute == Recompute::Selective && layer.kind == LayerKind::Transformer && model.shape) {
    // QK^T and scores x V of every attention core, 2 FLOP per multiply-add.
    double flops = 0;
    for (const AttentionCore& c : layer.attention) flops += 2.0 * c.score_macs_per_head() * static_cast<double>(c.heads);
    return Flops::flop(flops);
  }
  if (recompute == Recompute::Op && takes_op_checkpoint(layer)) {
    return op_checkpoint(layer, 1, 1, false, model.dtype_bytes, Bytes{}).matmul_flops;
  }
  return Flops{};
}

bool takes_op_checkpoint(const Layer& layer) noexcept {
  return layer.kind == LayerKind::Transformer && !layer.gemms.empty();
}

OpCheckpoint op_checkpoint(const Layer& layer, int micro_batch, int tensor, bool sequence_parallel, int dtype_bytes,
                           Bytes full_stash) noexcept {
  assert(micro_batch >= 1 && tensor >= 1);
  const std::int64_t b = micro_batch;
  const std::int64_t t = tensor;
  const std::int64_t z = dtype_bytes;
  const auto split = [t](std::int64_t n) { return (n + t - 1) / t; };
  std::int64_t kept = sequence_parallel ? split(layer.stashed.layer_input.count() * b) : layer.stashed.layer_input.count() * b;
  std::int64_t in_stash = kept;  // of `kept`, what the block's stash holds too
  double flops = 0;
  std::int64_t count = 0;
  for (const Gemm& g : layer.gemms) {
    for (std::int64_t i = 0; i < g.matmuls; ++i) {
      const std::int64_t elements = g.tokens * g.matmul_out(i) * b;
      const bool columns = g.split == TensorSplit::Columns;
      const double macs = static_cast<double>(g.tokens * b) * static_cast<double>(g.in) *
                          static_cast<double>(g.matmul_out(i)) / (g.split == TensorSplit::None ? 1.0 : static_cast<double>(t));
      if (++count % 2 == 0) {
        flops += 2 * macs;
        continue;
      }
      const std::int64_t saved = z * (columns ? split(elements) : elements);
      kept += saved;
      if (g.split != TensorSplit::Rows) in_stash += saved;
    }
    if (g.split == TensorSplit::Rows && t > 1 && sequence_parallel) kept += z * split(g.tokens * g.out * b);
  }
  for (const AttentionCore& c : layer.attention) {
    const std::int64_t output = z * split(c.q_tokens * c.heads * c.values() * b);
    constexpr std::int64_t kLogSumExpBytes = 4;
    kept += output + kLogSumExpBytes * split(c.q_tokens * c.heads * b);
    in_stash += output;
  }
  OpCheckpoint out;
  out.kept = Bytes::bytes(kept);
  out.rebuilt = Bytes::bytes(std::max<std::int64_t>(full_stash.count() - in_stash, 0));
  out.matmul_flops = Flops::flop(flops);
  return out;
}

Bytes stashed_activation_bytes(const Layer& layer, int micro_batch, int tensor, bool sequence_parallel,
                               Recompute recompute) noexcept {
  assert(micro_batch >= 1 && tensor >= 1);
  const std::int64_t b = micro_batch;
  const std::int64_t t = tensor;
  const auto whole = [b](Bytes per_sample) { return Bytes::bytes(per_sample.count() * b); };
  const auto split = [b, t](Bytes per_sample) { return Bytes::bytes((per_sample.count() * b + t - 1) / t); };
  const auto replicated = [&](Bytes per_sample) { return sequence_parallel ? split(per_sample) : whole(per_sample); };

  const ActivationFootprint& a = layer.stashed;
  if (traits(recompute).whole_layer && is_recomputed(layer.kind)) return replicated(a.layer_input);
  Bytes total = replicated(a.tp_replicated) + split(a.tp_sharded);
  if (recompute == Recompute::None) total += split(a.attention_scores);
  return total;
}

ModuleRecomputation module_recomputation(const Layer& layer, int micro_batch, int tensor, bool sequence_parallel,
                                         RecomputeModules modules) noexcept {
  assert(micro_batch >= 1 && tensor >= 1);
  const std::int64_t b = micro_batch;
  const std::int64_t t = tensor;
  const auto split = [&](std::int64_t n) { return (n * b + t - 1) / t; };
  ModuleRecomputation out;
  double flops = 0;
  for (const ModuleStash& m : layer.recomputable) {
    if (!modules.has(m.module)) continue;
    if (traits(m.module).inside_moe && modules.has(RecomputeModule::Moe)) continue;
    const std::int64_t replicated = sequence_parallel ? split(m.tp_replicated.count()) : m.tp_replicated.count() * b;
    out.dropped += Bytes::bytes(replicated + split(m.tp_sharded.count()));
    out.dropped_gemm_input_elements +=
        m.gemm_input_replicated && !sequence_parallel ? m.gemm_input_elements * b : split(m.gemm_input_elements);
    flops += m.matmul_flops * static_cast<double>(b) / static_cast<double>(t);
  }
  out.matmul_flops = Flops::flop(flops);
  return out;
}

std::int64_t stashed_gemm_input_elements(const Layer& layer, int micro_batch, int tensor,
                                         bool sequence_parallel) noexcept {
  std::int64_t total = 0;
  for (const Gemm& g : layer.gemms) {
    const std::int64_t elements = g.tokens * g.in * micro_batch;  // all groups together
    const bool split = g.split == TensorSplit::Rows || (g.split == TensorSplit::Columns && sequence_parallel);
    total += split ? (elements + tensor - 1) / tensor : elements;
  }
  return total;
}

WeightGradientStore weight_gradient_store(const Layer& layer, int micro_batch, int tensor) noexcept {
  WeightGradientStore out;
  const auto split = [tensor](std::int64_t elements) { return (elements + tensor - 1) / tensor; };
  for (const Gemm& g : layer.gemms) {
    const std::int64_t inputs = g.tokens * g.in * micro_batch;  // all groups together
    const std::int64_t gradients = g.tokens * g.out * micro_batch;
    out.input_elements += g.split == TensorSplit::Rows ? split(inputs) : inputs;
    out.output_gradient_elements += g.split == TensorSplit::Columns ? split(gradients) : gradients;
  }
  return out;
}

std::int64_t Model::parameters() const noexcept {
  std::int64_t total = 0;
  for (const Layer& l : layers) total += l.parameters - l.tied_copy_parameters;
  return total;
}

std::int64_t Model::active_parameters() const noexcept {
  std::int64_t total = 0;
  for (const Layer& l : layers) {
    total += l.parameters - l.tied_copy_parameters;
    if (l.routed.experts > 0) total -= l.expert_parameters - l.expert_parameters / l.routed.experts * l.routed.top_k;
  }
  return total;
}

Flops Model::training_flops_per_sample() const noexcept {
  Flops total;
  for (const Layer& l : layers) total += l.training_flops();
  return total;
}

Bytes Model::parameter_bytes() const noexcept { return Bytes::bytes(parameters() * dtype_bytes); }

Layer context_share(const Layer& layer, int context) {
  if (context <= 1) return layer;
  const auto part = [context](std::int64_t n) { return (n + context - 1) / context; };
  const auto bytes = [&](Bytes b) { return Bytes::bytes(part(b.count())); };
  const auto time = [&](const std::optional<TimeNs>& t) -> std::optional<TimeNs> {
    return t ? std::optional<TimeNs>(TimeNs::ns(part(t->base()))) : std::nullopt;
  };
  Layer l = layer;
  l.forward_flops = layer.forward_flops / static_cast<double>(context);
  l.backward_input_flops = layer.backward_input_flops / static_cast<double>(context);
  l.backward_weight_flops = layer.backward_weight_flops / static_cast<double>(context);
  l.stashed = {bytes(layer.stashed.tp_replicated), bytes(layer.stashed.tp_sharded),
               bytes(layer.stashed.attention_scores), bytes(layer.stashed.layer_input)};
  l.output_bytes = bytes(layer.output_bytes);
  l.forward_time = time(layer.forward_time);
  l.backward_input_time = time(layer.backward_input_time);
  l.backward_weight_time = time(layer.backward_weight_time);
  for (Gemm& g : l.gemms) g.tokens = part(g.tokens);
  for (AttentionCore& c : l.attention) c.q_tokens = part(c.q_tokens);
  l.routed.tokens = part(layer.routed.tokens);
  l.routed.stashed = bytes(layer.routed.stashed);
  for (ModuleStash& m : l.recomputable) {
    m.tp_replicated = bytes(m.tp_replicated);
    m.tp_sharded = bytes(m.tp_sharded);
    m.gemm_input_elements = part(m.gemm_input_elements);
    m.matmul_flops /= static_cast<double>(context);
  }
  return l;
}

bool same_cost(const Layer& a, const Layer& b) noexcept {
  const auto same_footprint = [](const ActivationFootprint& x, const ActivationFootprint& y) {
    return x.tp_replicated == y.tp_replicated && x.tp_sharded == y.tp_sharded &&
           x.attention_scores == y.attention_scores && x.layer_input == y.layer_input;
  };
  return a.kind == b.kind && a.parameters == b.parameters && a.forward_flops == b.forward_flops &&
         a.backward_input_flops == b.backward_input_flops && a.backward_weight_flops == b.backward_weight_flops &&
         same_footprint(a.stashed, b.stashed) && a.output_bytes == b.output_bytes &&
         a.forward_time == b.forward_time && a.backward_input_time == b.backward_input_time &&
         a.backward_weight_time == b.backward_weight_time &&
         a.tensor_parallel_allreduces_forward == b.tensor_parallel_allreduces_forward && a.gemms == b.gemms &&
         a.attention == b.attention && a.routed == b.routed && a.expert_parameters == b.expert_parameters &&
         a.tied_copy_parameters == b.tied_copy_parameters && a.recomputable == b.recomputable;
}

std::vector<LayerRun> identical_runs(const std::vector<Layer>& layers) {
  std::vector<LayerRun> runs;
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (!runs.empty() && same_cost(layers[runs.back().first], layers[i])) {
      ++runs.back().count;
    } else {
      runs.push_back({i, 1});
    }
  }
  return runs;
}

}  // namespace mpsim::model
