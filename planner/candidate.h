#pragma once
/// A candidate made concrete without simulating it: its partition, its stages' costs from the unit
/// costs, its peak memory and its step-time lower bound.
#include <cstdint>
#include <vector>

#include "planner/lower_bound.h"
#include "planner/memory_model.h"
#include "planner/sync_bound.h"
#include "planner/unit_costs.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/plan.h"
#include "sim/schedule/program.h"

namespace mpsim::planner {

/// The cost-model key of `spec`'s units.
[[nodiscard]] UnitCostKey unit_cost_key(const plan::PlanSpec& spec);

/// Units' forward + backward time, the weight the partitioner balances.
[[nodiscard]] std::vector<std::int64_t> partition_weights(const std::vector<UnitCost>& units);

/// Sums of unit costs per virtual stage of `partition` (boundaries over units).
struct StageCosts {
  std::vector<StageTimes> times;                ///< lower bounds: kUnitRoundingSlack per unit subtracted
  std::vector<TimeNs> in_layer_comm;            ///< per microbatch: bound on the stage's in-layer collectives
  std::vector<ChunkActivations> activations;    ///< exact
  std::vector<std::int64_t> parameters;         ///< exact, on one tensor rank
  std::vector<std::int64_t> fp8_parameters;     ///< of those, weights of FP8 GEMMs
  std::vector<std::int64_t> largest_layer_parameters;  ///< the stage's largest layer
  std::vector<std::int64_t> expert_parameters;         ///< routed experts' among `parameters`
  std::vector<std::int64_t> output_table;  ///< engine::ChunkCost::output_table, by stage
  std::vector<char> holds_table;           ///< engine::ChunkCost::holds_table, by stage
};
/// The model-state parameters of pipeline rank `rank` of `spec` (its virtual stages' sums).
[[nodiscard]] engine::RankParameters rank_parameters(const plan::PlanSpec& spec, const StageCosts& costs, int rank);
/// The flex dispatcher's buffers of `spec` as the bound counts them: the engine's rule at its floor
/// (engine::dispatcher_buffer_floor), since where the expert group lands is not known before the layout.
[[nodiscard]] Bytes dispatcher_buffers_bound(const plan::PlanSpec& spec, const model::Model& model);
[[nodiscard]] StageCosts stage_costs(const std::vector<UnitCost>& units, const std::vector<int>& partition);
/// A bidirectional schedule's costs by virtual stage: the partition's p stages, then the same p again
/// (virtual stage p + k holds stage k; plan::is_bidirectional).
[[nodiscard]] StageCosts repeated_for_second_direction(StageCosts costs);

struct Estimate {
  /// The largest over pipeline ranks (and with uneven shares over replicas, each at its own count, as
  /// prepare_candidates estimates them): what the simulator reports.
  Bytes peak_memory;
  int peak_rank = 0;      ///< the pipeline rank that holds it
  Bytes static_memory;    ///< that rank's weights, gradients and optimizer state
  TimeNs lower_bound;     ///< on the simulated step time (zero when times are not additive)
};

/// What the estimate needs besides the candidate.
struct EstimateContext {
  int dtype_bytes = 2;
  bool additive_times = true;             ///< UnitCostModel::additive_times(); false: no step-time bound
  const LayoutSyncBounds* sync = nullptr;  ///< the candidate's layout; null: no collective bounds
  bool overlap_grad_reduce = false;        ///< the engine's --overlap-grad-reduce, on top of the plan's
  engine::OptimizerPace optimizer_pace;   ///< the optimizer step's price (the GPUs' memory bandwidth, the model's measured times)
  Bytes dispatcher_buffers;                ///< the candidate's dispatcher_buffers_bound
};

/// Peak memory (static + in-flight activations, per rank) and the step-time bound of `spec` cut by
/// `costs`. `in_flight` comes from in_flight_vectors(schedule::shape_of(spec)). O(p v x kept vectors).
[[nodiscard]] Estimate estimate(const plan::PlanSpec& spec, const StageCosts& costs,
                                const std::vector<CountVectors>& in_flight, const EstimateContext& context);

}  // namespace mpsim::planner
