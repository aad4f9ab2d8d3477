// Candidates made concrete, in parallel: unit costs, partitions, in-flight counts, bounds.
#include <algorithm>
#include <map>
#include <tuple>
#include <utility>

#include "planner/partitioner.h"
#include "planner/search.h"
#include "planner/thread_pool.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"

namespace mpsim::planner {
namespace {

/// Distinct values of `key(item)` over `items`, in first-appearance order, and each item's index into them.
template <typename Key, typename Item, typename Fn>
std::pair<std::vector<Key>, std::vector<std::size_t>> distinct(const std::vector<Item>& items, Fn key) {
  std::map<Key, std::size_t> index;
  std::vector<Key> keys;
  std::vector<std::size_t> of;
  of.reserve(items.size());
  for (const Item& item : items) {
    const Key k = key(item);
    const auto [it, added] = index.emplace(k, keys.size());
    if (added) keys.push_back(k);
    of.push_back(it->second);
  }
  return {std::move(keys), std::move(of)};
}

/// A spec with one partition, before its estimate.
struct Draft {
  std::size_t spec = 0;
  std::vector<int> partition;
  Bytes static_peak;  ///< the largest static memory over ranks
};

Bytes largest_static_memory(const plan::PlanSpec& spec, const StageCosts& costs, int dtype_bytes) {
  Bytes worst;
  for (int r = 0; r < spec.degrees[plan::Axis::Pipeline]; ++r) {
    worst = std::max(
        worst, engine::static_memory(rank_parameters(spec, costs, r), engine::state_format(spec, dtype_bytes)).total());
  }
  return worst;
}

}  // namespace

Bytes gpu_capacity(const topology::Cluster& cluster) {
  Bytes most;
  for (const topology::GpuKind& k : cluster.gpu_kinds()) most = std::max(most, k.memory);
  return most;
}

std::vector<Prepared> prepare_candidates(const topology::Cluster& cluster, const model::Model& model,
                                         const PlannerOptions& options) {
  const SearchSpace space = enumerate_search_space(cluster, model, options.space);
  if (options.on_progress) options.on_progress({.candidates = space.candidates.size()});
  const int threads = effective_threads(options.threads);
  const UnitCostModel units(cluster, model);
  // Without the margin: the candidates only the margin prunes are estimated whole, for the search's
  // best plan within the margin (PlannerResult::within_margin).
  const Bytes usable = gpu_capacity(cluster) - options.memory_reserve;

  // Unit costs, once per (tensor, micro batch, recomputation).
  const auto keys_and_key_of = distinct<UnitCostKey>(space.candidates, unit_cost_key);
  const auto& keys = keys_and_key_of.first;
  const auto& key_of = keys_and_key_of.second;
  std::vector<std::vector<UnitCost>> costs(keys.size());
  parallel_for(keys.size(), threads, [&](std::size_t i) { costs[i] = units.costs(keys[i]); });

  // Balanced partitions, once per (unit costs, stage count).
  std::vector<std::size_t> spec_ids(space.candidates.size());
  for (std::size_t i = 0; i < spec_ids.size(); ++i) spec_ids[i] = i;
  const auto cuts_and_cut_of = distinct<std::pair<std::size_t, int>>(spec_ids, [&](std::size_t i) {
    const plan::PlanSpec& s = space.candidates[i];
    return std::make_pair(key_of[i],
                          plan::partition_stage_count(s.schedule, s.degrees[plan::Axis::Pipeline], s.virtual_stages));
  });
  const auto& cuts = cuts_and_cut_of.first;
  const auto& cut_of = cuts_and_cut_of.second;
  std::vector<std::vector<int>> balanced(cuts.size());
  parallel_for(cuts.size(), threads, [&](std::size_t i) {
    balanced[i] = balanced_partition(partition_weights(costs[cuts[i].first]), cuts[i].second);
  });

  // Drafts: each spec with its balanced partition, then the even one where it differs.
  std::vector<Draft> drafts;
  const int layers = units.units();
  for (std::size_t i = 0; i < space.candidates.size(); ++i) {
    const plan::PlanSpec& s = space.candidates[i];
    const std::vector<int>& mine = balanced[cut_of[i]];
    drafts.push_back({i, mine, {}});
    if (options.even_partition) {
      std::vector<int> even = plan::even_partition(
          layers, plan::partition_stage_count(s.schedule, s.degrees[plan::Axis::Pipeline], s.virtual_stages));
      if (even != mine) drafts.push_back({i, std::move(even), {}});
    }
  }
  // A draft's stage costs are made twice (here for its static memory, below for its estimate if that
  // fits) rather than kept: at 2048 GPUs a million drafts' costs would take gigabytes.
  const auto stage_costs_of = [&](std::size_t spec, const std::vector<int>& partition) {
    StageCosts c = stage_costs(costs[key_of[spec]], partition);
    if (plan::is_bidirectional(space.candidates[spec].schedule)) c = repeated_for_second_direction(std::move(c));
    return c;
  };
  parallel_for(drafts.size(), threads, [&](std::size_t i) {
    Draft& d = drafts[i];
    d.static_peak = largest_static_memory(space.candidates[d.spec], stage_costs_of(d.spec, d.partition), model.dtype_bytes);
  });

  // In-flight activations, once per pipeline shape, for the drafts whose static memory fits.
  std::vector<std::size_t> fitting;
  for (std::size_t i = 0; i < drafts.size(); ++i) {
    if (drafts[i].static_peak <= usable) fitting.push_back(i);
  }
  const auto shapes_and_shape_of_fitting = distinct<schedule::PipelineShape>(
      fitting, [&](std::size_t i) { return schedule::shape_of(space.candidates[drafts[i].spec]); });
  const auto& shapes = shapes_and_shape_of_fitting.first;
  const auto& shape_of_fitting = shapes_and_shape_of_fitting.second;
  std::vector<std::vector<CountVectors>> in_flight(shapes.size());
  parallel_for(shapes.size(), threads, [&](std::size_t i) { in_flight[i] = in_flight_vectors(shapes[i]); });

  // Lower bounds on the data-parallel collectives, once per layout: the gradient sync after the last
  // backward (without overlap) and ZeRO 3's per-layer gathers.
  const auto layouts_and_layout_of_fitting = distinct<SyncLayout>(fitting, [&](std::size_t i) {
    const plan::PlanSpec& s = space.candidates[drafts[i].spec];
    // HSDP's groups are not searched: the gradient sync is bounded over all data-parallel ranks.
    return SyncLayout{plan::degrees_of(s, s.written(plan::Axis::Data).value_or(1)).set(plan::Axis::DataReplica, 1),
                      s.placement};
  });
  const auto& layouts = layouts_and_layout_of_fitting.first;
  const auto& layout_of_fitting = layouts_and_layout_of_fitting.second;
  std::vector<LayoutSyncBounds> sync(layouts.size());
  parallel_for(layouts.size(), threads, [&](std::size_t i) {
    sync[i] = layout_sync_bounds(cluster, layouts[i], options.engine.collective);
  });
  EstimateContext context;
  context.dtype_bytes = model.dtype_bytes;
  context.additive_times = units.additive_times();
  context.optimizer_pace = engine::optimizer_pace(
      model, cluster.gpus().empty() ? BytesPerSec{} : cluster.gpu_kind_of(cluster.gpus().front()).memory_bandwidth);

  std::vector<Prepared> out(drafts.size());
  parallel_for(drafts.size(), threads, [&](std::size_t i) {
    Draft& d = drafts[i];
    Prepared& p = out[i];
    p.id = i;
    p.spec = space.candidates[d.spec];
    p.spec.partition = std::move(d.partition);
    p.estimate.peak_memory = d.static_peak;  // over capacity already: the static part says enough
    p.estimate.static_memory = d.static_peak;
  });
  parallel_for(fitting.size(), threads, [&](std::size_t f) {
    const std::size_t i = fitting[f];
    EstimateContext mine = context;
    mine.sync = &sync[layout_of_fitting[f]];
    mine.overlap_grad_reduce = options.engine.overlap_grad_reduce;
    const StageCosts c = stage_costs_of(drafts[i].spec, out[i].spec.partition);
    out[i].estimate = estimate(out[i].spec, c, in_flight[shape_of_fitting[f]], mine);
  });
  return out;
}

}  // namespace mpsim::planner
