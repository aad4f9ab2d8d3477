#pragma once
/// What each partition unit costs, asked once of the engine's cost model and reused by every
/// candidate that shares the tensor degree, micro batch and recomputation.
///
/// A unit is one partitionable layer (plan::partitionable_layer_count()) together with the layers
/// plan::virtual_stage_layers() attaches to it: the embedding to the first unit, the output head to
/// the last. A stage's cost is then a sum over its units (prefix sums make it O(1)), which is what the
/// partitioner and the bounds need; the simulator still prices the real plan with the cost model.
///
/// The cost model is probed on a compressed model holding each distinct unit once (the blocks of a
/// transformer are identical), so one probe costs O(distinct units), not O(layers).
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "sim/core/units.h"
#include "sim/engine/route_cache.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// The cost model's ChunkCost of one unit on one tensor-parallel rank, per microbatch.
struct UnitCost {
  /// A pass's compute and the exchanges the compute stream waits for (its tensor collectives too,
  /// unless they overlap). With --tp-comm-overlap the tensor collectives run beside the whole chunk's
  /// compute, so a chunk's pass lasts at least the longer of the two sums, never the sum of the units'
  /// longer ones: `*_overlapped` hold the other sum's terms (tensor collectives plus what blocks), zero
  /// without overlap, and a stage takes max(sum of passes, sum of overlapped).
  TimeNs forward;
  TimeNs backward;         ///< fused, recomputation included
  TimeNs backward_input;   ///< recomputation included
  TimeNs backward_weight;
  TimeNs forward_overlapped;
  TimeNs backward_overlapped;
  TimeNs backward_input_overlapped;
  TimeNs in_layer_comm;    ///< bound on all its in-layer collectives (forward and backward), run one at a time
  Bytes stashed;           ///< activations held from F to the backward
  Bytes forward_working;   ///< held while F runs beyond the stash (engine::WorkingMemory)
  Bytes backward_working;  ///< held while the backward runs, the unit's own stash included (engine::WorkingMemory)
  Bytes stashed_after_input;  ///< what a split backward keeps from I until W (engine::kept_after_input)
  Bytes activation_send;   ///< what the unit's last layer sends on
  std::int64_t parameters = 0;  ///< on one tensor-parallel rank
  std::int64_t fp8_parameters = 0;  ///< of those, weights of FP8 GEMMs
  std::int64_t largest_layer_parameters = 0;  ///< of the unit's largest layer
  std::int64_t expert_parameters = 0;         ///< routed experts' among `parameters`
  std::int64_t output_table = 0;  ///< engine::ChunkCost::output_table
  bool holds_table = false;       ///< engine::ChunkCost::holds_table
};

/// What the costs depend on besides the unit.
struct UnitCostKey {
  /// tensor, context (each context rank runs its share of every layer), expert (the grouped GEMMs
  /// hold experts / expert) and expert_tensor (which splits each expert's width); the other axes 1
  plan::Degrees degrees;
  int micro_batch = 1;
  model::Recompute recompute = model::Recompute::None;
  bool sequence_parallel = false;
  std::optional<plan::Precision> precision;  ///< unset: the model's dtype
  plan::AttentionKernel attention = plan::kDefaultAttention;
  std::optional<topology::AttentionGeneration> attention_kernel;  ///< unset: the GPU kind's default rate
  bool overlap_tensor_comm = false;  ///< tensor collectives beside the compute: a pass takes the longer of the two
  plan::MoeDispatcher dispatcher = plan::MoeDispatcher::AllToAll;  ///< how the expert all-to-alls move tokens
  std::optional<int> flex_dispatcher_sms;  ///< the SMs its kernels hold (unset: the backend's default)
  /// F&B pairs run every in-layer exchange of both passes beside their compute: a bound
  /// charges a pass its compute and what its MoE blocks' slots add (sim/engine/pair_slots.h)
  bool pairs_hide_comm = false;
  plan::CrossEntropy cross_entropy = plan::CrossEntropy::Native;  ///< the loss's working memory on the last unit
  friend auto operator<=>(const UnitCostKey&, const UnitCostKey&) = default;
};

/// Rounding slack of a stage's time summed over units: the cost model rounds each time term of a
/// chunk up to a nanosecond once, the unit sums once per unit, so a chunk of n units may take up to
/// n x kUnitRoundingSlack less than the sum of its units' times. Lower bounds subtract it.
inline constexpr TimeNs kUnitRoundingSlack = TimeNs::ns(4);

class UnitCostModel {
 public:
  /// Prepares the compressed model; O(layers). `cluster` and `model` must outlive this object.
  UnitCostModel(const topology::Cluster& cluster, const model::Model& model);

  /// Costs of every unit, in order (partitionable_layer_count() entries). Thread-safe (const; the
  /// routes it looks up are shared, behind their own lock); O(distinct units x tensor degree) route look-ups.
  [[nodiscard]] std::vector<UnitCost> costs(const UnitCostKey& key) const;

  [[nodiscard]] int units() const noexcept { return static_cast<int>(distinct_of_.size()); }
  /// Whether a stage's time is the sum of its units' times up to kUnitRoundingSlack per unit. False
  /// when the model mixes profiled and FLOP-derived layers (the cost model then prices a chunk by
  /// FLOPs unless all of its layers are profiled), or the cluster mixes GPU kinds (the probe runs on
  /// the first GPUs only); step-time bounds are then not derived from unit costs.
  [[nodiscard]] bool additive_times() const noexcept { return additive_times_; }

 private:
  const topology::Cluster* cluster_;
  const model::Model* model_;
  model::Model probe_;               ///< each distinct unit once, in order of first appearance
  std::vector<int> distinct_of_;     ///< unit -> its distinct unit (a chunk of the probe)
  std::vector<std::vector<int>> unit_layers_;  ///< unit -> indices into model.layers
  std::unique_ptr<engine::SharedRoutes> routes_;  ///< the cluster's, shared by every key's probe
  bool additive_times_ = true;
};

}  // namespace mpsim::planner
