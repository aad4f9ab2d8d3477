// Candidates made concrete, in parallel: unit costs, partitions, in-flight counts, bounds.
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <tuple>
#include <utility>

#include "planner/memory_margin.h"
#include "planner/partitioner.h"
#include "planner/replica_shares.h"
#include "planner/search.h"
#include "planner/thread_pool.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/route_cache.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"
#include "sim/schedule/generators.h"

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

/// The spec one data-parallel replica of `spec` runs: its own `microbatches`, no shares.
plan::PlanSpec replica_share(const plan::PlanSpec& spec, int microbatches) {
  plan::PlanSpec share = spec;
  share.replica_microbatches.clear();
  share.microbatches = microbatches;
  return share;
}

/// A spec with one partition, before its estimate.
struct Draft {
  std::size_t spec = 0;
  std::vector<int> partition;
  Bytes static_peak;  ///< the largest static memory over ranks
};

Bytes largest_static_memory(const plan::PlanSpec& spec, const StageCosts& costs, const model::Model& model) {
  engine::StateFormat format = engine::state_format(spec, model.dtype_bytes);
  format.dispatcher_buffers = dispatcher_buffers_bound(spec, model);
  Bytes worst;
  for (int r = 0; r < spec.degrees[plan::Axis::Pipeline]; ++r) {
    worst = std::max(worst, engine::static_memory(rank_parameters(spec, costs, r), format).total());
  }
  return worst;
}

/// Each unit at the fastest of its kinds' times (the memory is the same on every kind): a stage on any of
/// them takes at least this, so the bounds stay bounds.
std::vector<UnitCost> fastest_of(const std::vector<std::vector<UnitCost>>& by_kind) {
  std::vector<UnitCost> out = by_kind.front();
  for (const std::vector<UnitCost>& kind : by_kind) {
    for (std::size_t u = 0; u < out.size(); ++u) {
      UnitCost& o = out[u];
      const UnitCost& k = kind[u];
      for (auto member : {&UnitCost::forward, &UnitCost::backward, &UnitCost::backward_input, &UnitCost::backward_weight,
                          &UnitCost::forward_overlapped, &UnitCost::backward_overlapped,
                          &UnitCost::backward_input_overlapped, &UnitCost::in_layer_comm}) {
        o.*member = std::min(o.*member, k.*member);
      }
    }
  }
  return out;
}

/// What a balanced partition depends on: the unit costs, the stages it cuts, and on a cluster of several
/// kinds the kinds (positions in the job's kinds) of the ranks that hold each stage.
struct CutKey {
  std::size_t unit_key = 0;
  int stages = 0;
  std::vector<std::vector<int>> stage_kinds;  ///< by partition stage; empty on one kind
  friend auto operator<=>(const CutKey&, const CutKey&) = default;
};

/// The position of GPU kind `kind` in `job_kinds`.
int kind_position(const std::vector<int>& job_kinds, int kind) {
  return static_cast<int>(std::find(job_kinds.begin(), job_kinds.end(), kind) - job_kinds.begin());
}

/// Adds to `out` (by partition stage) the kinds (positions in `job_kinds`) of the ranks holding each
/// partition stage of `spec`, pipeline rank r running on GPU kind `rank_kinds[r]`.
void add_partition_stage_kinds(const plan::PlanSpec& spec, const std::vector<int>& rank_kinds,
                               const std::vector<int>& job_kinds, std::vector<std::vector<int>>& out) {
  const int p = spec.degrees[plan::Axis::Pipeline];
  const int chunks = plan::is_v_shaped(spec.schedule) ? 2 : spec.virtual_stages;
  const auto add = [&](int stage, int kind) {
    auto& kinds = out.at(static_cast<std::size_t>(stage));
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  };
  for (int r = 0; r < p; ++r) {
    const int kind = kind_position(job_kinds, rank_kinds[static_cast<std::size_t>(r)]);
    for (int c = 0; c < chunks; ++c) {
      add(plan::partition_stage_of(spec.schedule, p, plan::virtual_stage_of(spec.schedule, p, r, c)), kind);
    }
  }
  // A bidirectional schedule runs each stage on a rank and its mirror (Axis::PipelineMirror): both kinds
  // count, which leaves the stage at the slower's weight and the faster's bound.
  if (plan::is_bidirectional(spec.schedule)) {
    for (int stage = 0; stage < p && static_cast<std::size_t>(stage) < out.size(); ++stage) {
      add(stage, kind_position(job_kinds, rank_kinds[static_cast<std::size_t>(p - 1 - stage)]));
    }
  }
}

/// The GPU kinds of each pipeline rank in each data-parallel replica of `spec` on `cluster`.
plan::StageGpuKinds rank_kinds_of(const topology::Cluster& cluster, const plan::PlanSpec& spec) {
  return plan::stage_gpu_kinds(cluster, plan::degrees_of(spec, spec.written(plan::Axis::Data).value_or(1)),
                               spec.placement);
}

/// The kinds (positions in `job_kinds`) of the ranks holding each partition stage of `spec` on `cluster`,
/// in any data-parallel replica (one partition serves them all: their gradients are reduced layer by layer).
std::vector<std::vector<int>> partition_stage_kinds(const topology::Cluster& cluster, const plan::PlanSpec& spec,
                                                    const std::vector<int>& job_kinds) {
  const int p = spec.degrees[plan::Axis::Pipeline];
  const plan::StageGpuKinds ranks = rank_kinds_of(cluster, spec);
  std::vector<std::vector<int>> out(
      static_cast<std::size_t>(plan::partition_stage_count(spec.schedule, p, spec.virtual_stages)));
  if (ranks.kinds.size() != static_cast<std::size_t>(p)) return out;
  for (const std::vector<int>& replica : ranks.replica_kinds) add_partition_stage_kinds(spec, replica, job_kinds, out);
  for (auto& kinds : out) std::sort(kinds.begin(), kinds.end());
  return out;
}

/// Each data-parallel replica's time per microbatch where its replicas run on different GPU kinds
/// (replica_shares.h), from the same per-kind unit weights the partitioner balances: a replica's time
/// per microbatch is its slowest pipeline rank's, each rank summing its chunks' units at its own kind's
/// weights (a stage that two of its ranks hold, at the slower's). Empty where the replicas run alike.
std::vector<std::int64_t> replica_times_of(const topology::Cluster& cluster, const plan::PlanSpec& spec,
                                           const std::vector<int>& partition, const std::vector<int>& job_kinds,
                                           const std::vector<std::vector<std::int64_t>>& weights_by_kind) {
  const plan::StageGpuKinds ranks = rank_kinds_of(cluster, spec);
  if (ranks.mixed || !ranks.replicas_differ()) return {};
  const int p = spec.degrees[plan::Axis::Pipeline];
  const int stages = plan::partition_stage_count(spec.schedule, p, spec.virtual_stages);
  if (static_cast<int>(partition.size()) != stages + 1) return {};
  std::vector<std::int64_t> per_microbatch;
  for (const std::vector<int>& replica : ranks.replica_kinds) {
    std::vector<std::vector<int>> stage_kinds(static_cast<std::size_t>(stages));
    add_partition_stage_kinds(spec, replica, job_kinds, stage_kinds);
    const auto stage_time = [&](int stage) {
      std::int64_t slowest = 0;
      for (const int k : stage_kinds[static_cast<std::size_t>(stage)]) {
        const std::vector<std::int64_t>& w = weights_by_kind.at(static_cast<std::size_t>(k));
        std::int64_t sum = 0;
        for (int u = partition[static_cast<std::size_t>(stage)]; u < partition[static_cast<std::size_t>(stage) + 1]; ++u) {
          sum += w.at(static_cast<std::size_t>(u));
        }
        slowest = std::max(slowest, sum);
      }
      return slowest;
    };
    const int chunks = plan::is_v_shaped(spec.schedule) ? 2 : spec.virtual_stages;
    std::int64_t slowest_rank = 0;
    for (int r = 0; r < p; ++r) {
      std::int64_t rank_time = 0;
      for (int c = 0; c < chunks; ++c) {
        rank_time += stage_time(plan::partition_stage_of(spec.schedule, p, plan::virtual_stage_of(spec.schedule, p, r, c)));
      }
      slowest_rank = std::max(slowest_rank, rank_time);
    }
    per_microbatch.push_back(std::max<std::int64_t>(1, slowest_rank));
  }
  return per_microbatch;
}

/// The microbatches of every replica of `spec` together: microbatches x data.
int total_microbatches(const plan::PlanSpec& spec, std::size_t replicas) {
  return schedule::shape_of(spec).microbatches * static_cast<int>(replicas);
}

/// The plan of `spec` with `data` replicas, as the rules of its shares read it (replica_share_error).
plan::Plan share_probe(const plan::PlanSpec& spec, int data) {
  const schedule::PipelineShape shape = schedule::shape_of(spec);
  plan::Plan probe;
  static_cast<plan::PlanSettings&>(probe) = spec;
  probe.degrees = plan::degrees_of(spec, data);
  probe.microbatches = shape.microbatches;
  probe.microbatch_group_size = shape.microbatch_group_size;
  probe.virtual_stages = plan::is_v_shaped(spec.schedule) && spec.virtual_stages == 1 ? 2 : spec.virtual_stages;
  return probe;
}

/// `shares` as the plan's `replica_microbatches`: empty where they are all the even count or break a
/// rule of the schedule (replica_share_error), the replicas then sharing evenly.
std::vector<int> shares_as_written(const plan::PlanSpec& spec, std::vector<int> shares) {
  const int even = schedule::shape_of(spec).microbatches;
  if (std::all_of(shares.begin(), shares.end(), [&](int n) { return n == even; })) return {};
  if (plan::replica_share_error(share_probe(spec, static_cast<int>(shares.size())), shares)) return {};
  return shares;
}

/// Each replica's share of the microbatches where they run at `per_microbatch` (replica_times_of): the
/// min-max split, as shares_as_written writes it.
std::vector<int> replica_shares_of(const plan::PlanSpec& spec, const std::vector<std::int64_t>& per_microbatch) {
  const int total = total_microbatches(spec, per_microbatch.size());
  if (per_microbatch.empty() || total < static_cast<int>(per_microbatch.size())) return {};
  return shares_as_written(spec, min_max_shares(per_microbatch, total));
}

/// in_flight_vectors of the shapes a replica's cap is sought at (prepare_candidates), each walked once
/// however many candidates and threads ask for it. Thread-safe; the vectors are a pure function of the
/// shape, so which thread computes one first changes nothing.
class InFlightMemo {
 public:
  [[nodiscard]] std::shared_ptr<const std::vector<CountVectors>> of(const schedule::PipelineShape& shape) {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      if (const auto it = known_.find(shape); it != known_.end()) return it->second;
    }
    auto vectors = std::make_shared<const std::vector<CountVectors>>(in_flight_vectors(shape));
    const std::lock_guard<std::mutex> lock(mutex_);
    return known_.emplace(shape, std::move(vectors)).first->second;
  }

 private:
  std::mutex mutex_;
  std::map<schedule::PipelineShape, std::shared_ptr<const std::vector<CountVectors>>> known_;
};

/// The largest n in [1, most] with fits(n), fits being false from some n on (a replica's peak grows with
/// its count); 0 when not even one fits. O(log most) calls.
template <typename Fits>
int largest_fitting(int most, Fits fits) {
  if (most < 1 || !fits(1)) return 0;
  int lo = 1;  // fits
  int hi = most + 1;  // treated as not fitting
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (fits(mid) ? lo : hi) = mid;
  }
  return lo;
}

}  // namespace

Bytes gpu_capacity(const topology::Cluster& cluster) {
  Bytes most;
  for (const topology::GpuKind& k : cluster.gpu_kinds()) most = std::max(most, k.memory);
  return most;
}

std::vector<Prepared> prepare_candidates(const topology::Cluster& cluster, const model::Model& model,
                                         const PlannerOptions& options, engine::SharedRoutes* routes) {
  const SearchSpace space = enumerate_search_space(cluster, model, options.space);
  if (options.on_progress) {
    SearchProgress estimating;
    estimating.candidates = space.candidates.size();
    options.on_progress(estimating);
  }
  const int threads = effective_threads(options.threads);
  const UnitCostModel units(cluster, model);
  // A cluster of several GPU kinds (node_groups): each kind's unit costs, probed as if every GPU were of
  // that kind. The bounds take each unit at its fastest kind; a balanced partition weighs each stage's
  // units at the kind that runs it (the slower, for a stage that two ranks of different kinds hold).
  const std::vector<int> job_kinds = cluster.job_gpu_kinds();
  std::vector<topology::Cluster> kind_clusters;
  if (job_kinds.size() > 1) {
    for (const int kind : job_kinds) kind_clusters.push_back(cluster.with_every_gpu_as(kind));
  }
  std::vector<UnitCostModel> kind_units;
  for (const topology::Cluster& c : kind_clusters) kind_units.emplace_back(c, model);
  // Without the margin: the candidates only the margin prunes are estimated whole, for the search's
  // best plan within the margin (PlannerResult::within_margin).
  const Bytes usable = gpu_capacity(cluster) - options.memory_reserve;

  // Unit costs, once per (tensor, micro batch, recomputation).
  const auto keys_and_key_of = distinct<UnitCostKey>(space.candidates, unit_cost_key);
  const auto& keys = keys_and_key_of.first;
  const auto& key_of = keys_and_key_of.second;
  std::vector<std::vector<UnitCost>> costs(keys.size());
  std::vector<std::vector<std::vector<UnitCost>>> kind_costs(keys.size());  // [key][kind position]
  parallel_for(keys.size(), threads, [&](std::size_t i) {
    if (kind_units.empty()) {
      costs[i] = units.costs(keys[i]);
      return;
    }
    for (const UnitCostModel& u : kind_units) kind_costs[i].push_back(u.costs(keys[i]));
    costs[i] = fastest_of(kind_costs[i]);
  });

  // Balanced partitions, once per (unit costs, stage count).
  std::vector<std::size_t> spec_ids(space.candidates.size());
  for (std::size_t i = 0; i < spec_ids.size(); ++i) spec_ids[i] = i;
  const auto cuts_and_cut_of = distinct<CutKey>(spec_ids, [&](std::size_t i) {
    const plan::PlanSpec& s = space.candidates[i];
    return CutKey{key_of[i], plan::partition_stage_count(s.schedule, s.degrees[plan::Axis::Pipeline], s.virtual_stages),
                  kind_units.empty() ? std::vector<std::vector<int>>{} : partition_stage_kinds(cluster, s, job_kinds)};
  });
  const auto& cuts = cuts_and_cut_of.first;
  const auto& cut_of = cuts_and_cut_of.second;
  std::vector<std::vector<int>> balanced(cuts.size());
  // Where the stages run on different kinds, also the optimal partition that spreads the slowest
  // stage's slack (OptimalTie::Spread): the per-kind estimates err apart, and a stage the short-first
  // rule fills up to the optimum of another kind's estimate can end up the slowest when simulated.
  std::vector<std::vector<int>> spread(cuts.size());
  parallel_for(cuts.size(), threads, [&](std::size_t i) {
    const CutKey& cut = cuts[i];
    if (cut.stage_kinds.empty()) {
      balanced[i] = balanced_partition(partition_weights(costs[cut.unit_key]), cut.stages);
      return;
    }
    std::vector<std::vector<std::int64_t>> by_kind;
    for (const std::vector<UnitCost>& k : kind_costs[cut.unit_key]) by_kind.push_back(partition_weights(k));
    std::vector<std::vector<std::int64_t>> stage_weights;
    for (const std::vector<int>& kinds : cut.stage_kinds) {
      std::vector<std::int64_t> w = by_kind.at(static_cast<std::size_t>(kinds.front()));
      for (const int k : kinds) {
        for (std::size_t u = 0; u < w.size(); ++u) w[u] = std::max(w[u], by_kind[static_cast<std::size_t>(k)][u]);
      }
      stage_weights.push_back(std::move(w));
    }
    balanced[i] = balanced_partition(stage_weights);
    const bool kinds_differ = std::any_of(cut.stage_kinds.begin(), cut.stage_kinds.end(),
                                          [&](const std::vector<int>& k) { return k != cut.stage_kinds.front(); });
    if (kinds_differ) spread[i] = balanced_partition(stage_weights, OptimalTie::Spread);
  });

  // Drafts: each spec with its balanced partition, the spread one and the even one where they differ.
  std::vector<Draft> drafts;
  const int layers = units.units();
  for (std::size_t i = 0; i < space.candidates.size(); ++i) {
    const plan::PlanSpec& s = space.candidates[i];
    const std::vector<int>& mine = balanced[cut_of[i]];
    const std::vector<int>& spread_out = spread[cut_of[i]];
    drafts.push_back({i, mine, {}});
    if (!spread_out.empty() && spread_out != mine) drafts.push_back({i, spread_out, {}});
    if (options.even_partition) {
      std::vector<int> even = plan::even_partition(
          layers, plan::partition_stage_count(s.schedule, s.degrees[plan::Axis::Pipeline], s.virtual_stages));
      if (even != mine && even != spread_out) drafts.push_back({i, std::move(even), {}});
    }
  }
  // A draft's stage costs are made twice (here for its static memory, below for its estimate if that
  // fits) rather than kept: at 2048 GPUs a million drafts' costs would take gigabytes.
  // `stage_kinds`: the kinds holding each partition stage (of every replica, or of one).
  const auto stage_costs_on = [&](std::size_t spec, const std::vector<int>& partition,
                                  const std::vector<std::vector<int>>& stage_kinds) {
    StageCosts c = stage_costs(costs[key_of[spec]], partition);
    // On several kinds, a stage that one kind runs is timed at that kind's units (still a bound: the
    // probe priced every unit on that kind's own GPUs and links); a stage of two kinds keeps the fastest.
    for (std::size_t s = 0; s < stage_kinds.size(); ++s) {
      if (stage_kinds[s].size() != 1) continue;
      const StageCosts mine = stage_costs(kind_costs[key_of[spec]][static_cast<std::size_t>(stage_kinds[s].front())],
                                          {partition[s], partition[s + 1]});
      c.times[s] = mine.times.front();
      c.in_layer_comm[s] = mine.in_layer_comm.front();
    }
    if (plan::is_bidirectional(space.candidates[spec].schedule)) c = repeated_for_second_direction(std::move(c));
    return c;
  };
  const auto stage_costs_of = [&](std::size_t spec, const std::vector<int>& partition) {
    return stage_costs_on(spec, partition, cuts[cut_of[spec]].stage_kinds);
  };
  parallel_for(drafts.size(), threads, [&](std::size_t i) {
    Draft& d = drafts[i];
    d.static_peak = largest_static_memory(space.candidates[d.spec], stage_costs_of(d.spec, d.partition), model);
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
  std::optional<engine::SharedRoutes> own_routes;
  engine::SharedRoutes& sync_routes =
      routes != nullptr && &routes->cluster() == &cluster ? *routes : own_routes.emplace(cluster);
  parallel_for(layouts.size(), threads, [&](std::size_t i) {
    sync[i] = layout_sync_bounds(cluster, sync_routes, layouts[i], options.engine.collective);
  });
  EstimateContext context;
  context.dtype_bytes = model.dtype_bytes;
  // On several kinds, the per-kind probes (each on one kind) say whether unit times add up.
  context.additive_times =
      kind_units.empty() ? units.additive_times()
                         : std::all_of(kind_units.begin(), kind_units.end(),
                                       [](const UnitCostModel& u) { return u.additive_times(); });
  // The fastest kind's memory bandwidth: the optimizer step's bound holds on every kind.
  BytesPerSec fastest_memory;
  for (const int kind : job_kinds) {
    fastest_memory = std::max(fastest_memory, cluster.gpu_kinds()[static_cast<std::size_t>(kind)].memory_bandwidth);
  }
  context.optimizer_pace = engine::optimizer_pace(model, fastest_memory);

  std::vector<Prepared> out(drafts.size());
  std::vector<std::vector<std::int64_t>> replica_times(drafts.size());  // replica_times_of, by draft
  parallel_for(drafts.size(), threads, [&](std::size_t i) {
    Draft& d = drafts[i];
    Prepared& p = out[i];
    p.id = i;
    p.spec = space.candidates[d.spec];
    p.spec.partition = std::move(d.partition);
    // Replicas on GPUs of different kinds: each its share of the batch. The estimate below stays a
    // bound: some replica runs at least the even share, on GPUs no faster than the fastest kind's.
    if (!kind_units.empty()) {
      std::vector<std::vector<std::int64_t>> weights;
      for (const std::vector<UnitCost>& k : kind_costs[key_of[d.spec]]) weights.push_back(partition_weights(k));
      replica_times[i] = replica_times_of(cluster, p.spec, p.spec.partition, job_kinds, weights);
      p.spec.replica_microbatches = replica_shares_of(p.spec, replica_times[i]);
    }
    p.estimate.peak_memory = d.static_peak;  // over capacity already: the static part says enough
    p.estimate.static_memory = d.static_peak;
  });
  // Uneven shares: a replica holds what its own count puts in flight (GPipe every microbatch, 1F1B
  // min(p - rank, n)), the simulator's rule that in_flight_vectors walks; so each share's shape too.
  std::map<schedule::PipelineShape, std::size_t> share_shape_index;
  std::vector<schedule::PipelineShape> share_shapes;
  for (const std::size_t i : fitting) {
    for (const int n : out[i].spec.replica_microbatches) {
      const schedule::PipelineShape shape = schedule::shape_of(replica_share(out[i].spec, n));
      if (share_shape_index.emplace(shape, share_shapes.size()).second) share_shapes.push_back(shape);
    }
  }
  std::vector<std::vector<CountVectors>> share_in_flight(share_shapes.size());
  parallel_for(share_shapes.size(), threads,
               [&](std::size_t i) { share_in_flight[i] = in_flight_vectors(share_shapes[i]); });
  InFlightMemo capped_in_flight;  // the shapes a replica's cap is sought at
  // What the search keeps (its usable memory, at the largest capacity) and the simulator runs (no GPU
  // over its own capacity): a share above it would prune its candidate, before or after simulating.
  const Bytes search_usable = usable_memory(gpu_capacity(cluster), options.memory_reserve, options.memory_margin);
  parallel_for(fitting.size(), threads, [&](std::size_t f) {
    const std::size_t i = fitting[f];
    EstimateContext mine = context;
    mine.sync = &sync[layout_of_fitting[f]];
    mine.overlap_grad_reduce = options.engine.overlap_grad_reduce;
    mine.dispatcher_buffers = dispatcher_buffers_bound(out[i].spec, model);
    const StageCosts c = stage_costs_of(drafts[i].spec, out[i].spec.partition);
    out[i].estimate = estimate(out[i].spec, c, in_flight[shape_of_fitting[f]], mine);
    // Uneven shares: every replica runs its own share on its own kinds, and the step ends after the
    // slowest; each replica's bound (its count, its stages at its kinds' unit costs) bounds the step.
    // Each replica holds its own count's activations: the peak is the largest replica's, as simulated.
    plan::PlanSpec& spec = out[i].spec;
    if (spec.replica_microbatches.empty()) return;
    const plan::StageGpuKinds ranks = rank_kinds_of(cluster, spec);
    const std::size_t replicas = std::min(ranks.replica_kinds.size(), spec.replica_microbatches.size());
    std::map<std::vector<int>, StageCosts> costs_by_kinds;  // a replica's stage costs, once per set of kinds
    const auto replica_costs = [&](std::size_t d) -> const StageCosts& {
      const std::vector<int>& kinds = ranks.replica_kinds[d];
      auto it = costs_by_kinds.find(kinds);
      if (it == costs_by_kinds.end()) {
        std::vector<std::vector<int>> stage_kinds(cuts[cut_of[drafts[i].spec]].stage_kinds.size());
        add_partition_stage_kinds(spec, kinds, job_kinds, stage_kinds);
        it = costs_by_kinds.emplace(kinds, stage_costs_on(drafts[i].spec, spec.partition, stage_kinds)).first;
      }
      return it->second;
    };
    // Replica d's estimate at n microbatches: the schedule's program of that count (the simulator's rule).
    const auto replica_estimate = [&](std::size_t d, int n) {
      const plan::PlanSpec share = replica_share(spec, n);
      const schedule::PipelineShape shape = schedule::shape_of(share);
      const auto known = share_shape_index.find(shape);
      if (known != share_shape_index.end()) {
        return estimate(share, replica_costs(d), share_in_flight[known->second], mine);
      }
      return estimate(share, replica_costs(d), *capped_in_flight.of(shape), mine);
    };
    // What replica d may hold: the search's usable memory, and no more than its smallest GPU's capacity.
    const auto replica_usable = [&](std::size_t d) {
      Bytes most = search_usable;
      for (const int kind : ranks.replica_kinds[d]) {
        most = std::min(most, cluster.gpu_kinds()[static_cast<std::size_t>(kind)].memory);
      }
      return most;
    };
    // Each replica's estimate at its share, once per (share, kinds), in replica order; whether every one fits.
    const auto replica_estimates = [&]() {
      std::map<std::pair<int, std::vector<int>>, std::size_t> seen;
      std::vector<Estimate> distinct_estimates;
      bool fits = true;
      for (std::size_t d = 0; d < replicas; ++d) {
        const int n = spec.replica_microbatches[d];
        const auto [it, added] = seen.emplace(std::pair{n, ranks.replica_kinds[d]}, distinct_estimates.size());
        if (added) distinct_estimates.push_back(replica_estimate(d, n));
        fits = fits && distinct_estimates[it->second].peak_memory <= replica_usable(d);
      }
      return std::pair{std::move(distinct_estimates), fits};
    };
    auto [estimates, fits] = replica_estimates();
    // A share that does not fit its replica's GPUs: each replica at most the largest count that fits
    // (its estimate's peak grows with its count) and that the schedule runs, and the min-max split within
    // those caps. Where no split fits, the shares stay and the memory prunes the candidate; capped shares
    // that are all the even count, or that break a rule of the schedule, leave it even.
    if (!fits) {
      const int total = total_microbatches(spec, replicas);
      const plan::Plan probe = share_probe(spec, static_cast<int>(replicas));
      // The largest count up to n that a replica may run (the plan's rule, and the generator's own for
      // the share's shape, whose programs the estimate walks); 0 when none.
      const auto last_running = [&](int n) {
        for (; n >= 1; --n) {
          const bool runs = !plan::replica_count_error(probe, n) &&
                            !schedule::shape_error(schedule::shape_of(replica_share(spec, n)));
          if (runs) return n;
        }
        return 0;
      };
      std::map<std::vector<int>, int> cap_by_kinds;
      std::vector<int> caps;
      for (std::size_t d = 0; d < replicas; ++d) {
        auto it = cap_by_kinds.find(ranks.replica_kinds[d]);
        if (it == cap_by_kinds.end()) {
          const Bytes usable_here = replica_usable(d);
          // A count the schedule does not run holds what the largest it runs below it holds.
          const int most = largest_fitting(total - static_cast<int>(replicas) + 1, [&](int n) {
            const int running = last_running(n);
            return running == 0 || replica_estimate(d, running).peak_memory <= usable_here;
          });
          it = cap_by_kinds.emplace(ranks.replica_kinds[d], last_running(most)).first;
        }
        caps.push_back(it->second);
        if (caps.back() == 0) break;  // not one microbatch fits this replica: no split does
      }
      caps.resize(replicas, 0);
      if (const std::optional<std::vector<int>> capped = min_max_shares(replica_times[i], caps, total)) {
        spec.replica_microbatches = shares_as_written(spec, *capped);
        if (spec.replica_microbatches.empty()) return;  // the even split: the estimate above
        std::tie(estimates, fits) = replica_estimates();
      }
    }
    std::optional<Estimate> largest;
    for (const Estimate& replica : estimates) {
      out[i].estimate.lower_bound = std::max(out[i].estimate.lower_bound, replica.lower_bound);
      if (!largest || replica.peak_memory > largest->peak_memory) largest = replica;
    }
    if (largest) {
      out[i].estimate.peak_memory = largest->peak_memory;
      out[i].estimate.peak_rank = largest->peak_rank;
      out[i].estimate.static_memory = largest->static_memory;
    }
  });
  return out;
}

}  // namespace mpsim::planner
