#pragma once
/// What each layer of a plan's model keeps and replays under the plan's recomputation, by its place in
/// its chunk and on its rank: the one answer the cost model, the in-layer collectives and the report
/// ask for.
#include <vector>

#include "sim/model/model.h"
#include "sim/plan/plan.h"

namespace mpsim::plan {

/// One layer's recomputation.
struct LayerRecompute {
  /// The rule the layer's stash follows: the plan's `recompute`, except that full recomputation leaves
  /// a layer its method does not checkpoint (and the embedding and output head, as before) with
  /// Recompute::None when checkpointing applies to its kind, and per-op checkpointing leaves layers
  /// other than generated transformer blocks with Recompute::None.
  model::Recompute rule = model::Recompute::None;
  /// Under Recompute::Full: whether the layer keeps its input, and whether its backward first replays
  /// its whole group (model::full_recompute_place).
  model::FullRecomputePlace place;
  friend bool operator==(const LayerRecompute&, const LayerRecompute&) = default;
};

/// One entry per layer of `model`, in order. A layer held by two virtual stages (a bidirectional
/// schedule's) takes its place in the first; a plan without a partition yet is one chunk of every
/// layer. O(layers).
[[nodiscard]] std::vector<LayerRecompute> layer_recompute(const Plan& plan, const model::Model& model);

/// Whether the layer's whole forward runs again before its backward.
[[nodiscard]] inline bool replays_forward(const LayerRecompute& r, model::LayerKind kind) noexcept {
  return r.rule == model::Recompute::Full && model::is_recomputed(kind) && r.place.checkpointed;
}

}  // namespace mpsim::plan
