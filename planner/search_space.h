#pragma once
/// The plans the planner may choose from, for one cluster, model and global batch.
///
/// A candidate is a PlanSpec with every degree, the batch split, the schedule, recomputation, ZeRO
/// stage, placement, sequence parallelism and overlap set, and the partition left empty (the
/// partitioner chooses it). The axes:
/// - tensor t: divisors of the GPUs per node, at most `max_tensor`, that resolve_plan accepts for the
///   cluster and the model (within one NVLink domain, dividing the attention heads);
/// - context c: divisors of GPUs / t with seq_len divisible by 2c and at least `min_context_tokens`
///   tokens of a sequence per context rank (at most `max_context`; 1 for hand-listed models);
/// - pipeline p: divisors of GPUs / (t c) with p <= the model's partitionable layers;
/// - data d = GPUs / (t c p), which must divide the global batch B;
/// - expert e (MoE models): divisors of the experts, at most `max_expert`, with expert_tensor et in
///   {1, t} dividing the experts' width, e x et dividing t x c x d (Megatron's folding);
/// - micro batch b: powers of two dividing B / d (at most `max_micro_batch`); microbatches m = B / (b d);
/// - schedule: every ScheduleKind (narrowed by `schedules`); interleaved-1f1b with p >= 2 and each
///   v >= 2 dividing layers / p, when Megatron's group rule holds for the default group size N = p
///   (m <= p, or m a multiple of p);
/// - interleaved-1f1b runs Megatron's default group size N = p and sagemaker-interleaved SageMaker's
///   default cap of p + 2 active microbatches; both are set in the spec;
/// - recomputation; ZeRO stage (`zero`, by default 0-3; above 0 only when d c > 1, where it shards
///   something); placement (tp-dp-pp and tp-pp-dp; the second only when d > 1 and p > 1, where the
///   layouts differ);
/// - sequence parallelism (off, and on when t > 1) and overlap (off, and on: gradient reduction and
///   parameter gather during the passes when d c > 1, tensor-parallel communication beside the
///   compute when t > 1), each narrowed by its option;
/// - precision (`precisions`; empty: the model's own, left unset in the spec), each kept only where
///   the cluster's GPU has a peak for its GEMMs' type (FP8 ones: Hopper and later).
/// The validity rules are resolve_plan()'s own (plan::stage_count_error, plan::interleaved_group_error,
/// plan::degrees_error), called, not copied, so candidates are valid plans; resolve_plan()
/// stays the judge: the planner resolves every candidate before simulating it, and the `Resolve`
/// rules mode (for tests) enumerates the raw product and keeps what resolves.
///
/// Order is deterministic: t, c, p, e, et, b, schedule (kScheduleTraits order), v, recompute, ZeRO,
/// placement, sequence parallelism, overlap, precision (as listed), each ascending. A candidate's index in this order is its
/// identity in the rest of the search.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"

namespace mpsim::planner {

/// How candidates are checked while enumerating.
enum class SpaceRules : std::uint8_t {
  Mirror,   ///< apply the rules above directly (fast); a per-tensor-degree resolve_plan() call checks t
  Resolve,  ///< enumerate the raw product of the axes and keep only what resolve_plan() accepts (slow)
};

struct SearchSpaceOptions {
  int global_batch = 256;
  int max_tensor = 0;                             ///< 0: no cap beyond the NVLink domain
  int max_micro_batch = 0;                        ///< 0: no cap
  std::vector<plan::ScheduleKind> schedules;      ///< empty: every kind
  std::vector<model::Recompute> recompute{model::Recompute::None, model::Recompute::Selective,
                                          model::Recompute::Full};
  std::vector<int> zero{0, 1, 2, 3};
  std::vector<plan::Placement> placements{plan::kMegatronPlacement,
                                          {plan::Axis::Tensor, plan::Axis::Pipeline, plan::Axis::Data}};
  std::vector<bool> sequence_parallel{false, true};  ///< with t = 1: off only
  std::vector<bool> overlap{false, true};            ///< with nothing to overlap: off only
  int max_context = 0;                               ///< 0: as `min_context_tokens` allows
  /// Shortest share of a sequence a context rank holds: shorter shards leave the attention and the
  /// GEMMs too thin to hide the K/V exchange, and Megatron's recipes split 8k and longer sequences.
  std::int64_t min_context_tokens = 4096;
  int max_expert = 0;                                ///< 0: up to the model's experts
  /// The only degrees an axis may take (`plan --tensor 2,4`), by axis (tensor, context, pipeline,
  /// expert); an axis not listed is searched. A listed context degree skips `min_context_tokens`:
  /// that cut is the search's guess, and the user chose.
  std::map<plan::Axis, std::vector<int>> only_degrees;
  std::vector<plan::Precision> precisions;           ///< empty: the model's own
  /// The FlashAttention generation the run's software ships, set in every candidate (the plan field
  /// `attention_kernel`); unset: the GPU kind's `attention_efficiency`. Not an axis: a release has one.
  std::optional<topology::AttentionGeneration> attention_kernel;
  /// The MoE token dispatcher, set in every candidate of a model with experts (the plan fields
  /// moe_token_dispatcher_type / moe_flex_dispatcher_backend). Not an axis: the software has one.
  plan::MoeDispatcher dispatcher = plan::MoeDispatcher::AllToAll;
  /// How the software computes the loss, set in every candidate (the plan field `cross_entropy`;
  /// `plan --framework` sets its framework's). Not an axis: the software has one.
  plan::CrossEntropy cross_entropy = plan::CrossEntropy::Native;
  /// How the optimizer keeps its state, set in every candidate (the plan fields precision_aware_optimizer,
  /// exp_avg_dtype and exp_avg_sq_dtype: Megatron-Core's). Not an axis: the recipe chooses it.
  bool precision_aware_optimizer = false;
  plan::StateDtype exp_avg_dtype = plan::StateDtype::Fp32;
  plan::StateDtype exp_avg_sq_dtype = plan::StateDtype::Fp32;
  plan::Objective objective = plan::Objective::Speed;  ///< written into every candidate's plan
  SpaceRules rules = SpaceRules::Mirror;
};

struct SearchSpace {
  std::vector<plan::PlanSpec> candidates;  ///< in the deterministic order above
  std::vector<int> tensor_degrees;         ///< the tensor degrees that passed
  int invalid = 0;                         ///< raw combinations resolve_plan() rejected (Resolve rules only)
};

/// Every schedule kind the simulator has, in kScheduleTraits order.
[[nodiscard]] std::vector<plan::ScheduleKind> all_schedule_kinds();

/// The schedules searched when none are named (plan::ScheduleTraits::searched_by_default, which says
/// why the others are left out; --schedules names them).
[[nodiscard]] std::vector<plan::ScheduleKind> default_schedule_kinds();

/// Why no plan on `cluster` for `model` can have `degree` on `axis` (tensor, context, pipeline or
/// expert), in a few words for an error line ("a tensor-parallel group stays within a node of 8
/// GPUs"); nothing when some can.
[[nodiscard]] std::optional<std::string> fixed_degree_error(plan::Axis axis, int degree, const topology::Cluster& cluster,
                                                             const model::Model& model);

/// Enumerates the candidates. O(size of the space); with Mirror rules it calls resolve_plan() once per
/// tensor degree. An empty cluster, a model without layers or a global batch < 1 give an empty space.
[[nodiscard]] SearchSpace enumerate_search_space(const topology::Cluster& cluster, const model::Model& model,
                                                 const SearchSpaceOptions& options);

}  // namespace mpsim::planner
