#include "planner/search.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "planner/ordered_search.h"
#include "planner/pareto.h"
#include "planner/thread_pool.h"
#include "sim/core/input_error.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/plan_check.h"

namespace mpsim::planner {
namespace {

/// What the search orders and ranks by, compared lexicographically: step time (speed), or peak memory
/// then step time (memory).
struct Key {
  std::int64_t first = 0;
  std::int64_t second = 0;
  friend auto operator<=>(const Key&, const Key&) = default;
};

Key objective_key(plan::Objective o, const trace::Report& r) {
  const std::int64_t time = TimeNs::seconds(r.step_time_s).base();
  return o == plan::Objective::Speed ? Key{time, 0} : Key{r.peak_memory_bytes, time};
}

/// Never above objective_key() of the candidate's simulation.
Key bound_key(plan::Objective o, const Estimate& e) {
  return o == plan::Objective::Speed ? Key{e.lower_bound.base(), 0}
                                     : Key{e.peak_memory.count(), e.lower_bound.base()};
}

std::string short_plan(const plan::PlanSpec& s) {
  return fmt::format("tensor {}, pipeline {}, data {}, micro batch {}, {} recompute", s.degrees[plan::Axis::Tensor],
                     s.degrees[plan::Axis::Pipeline], s.written(plan::Axis::Data).value_or(1), s.micro_batch,
                     model::to_string(s.recompute));
}

/// Why no candidate fits, in one line.
std::string infeasible_reason(const model::Model& model, const topology::Cluster& cluster,
                              const std::vector<Prepared>& prepared, Bytes capacity, Bytes usable,
                              const PlannerOptions& options, const SearchStats& stats,
                              const std::string& first_invalid) {
  const auto gpus = static_cast<std::int64_t>(cluster.gpus().size());
  if (prepared.empty()) {
    return fmt::format("no candidate plan for {} GPUs and this global batch: the data-parallel degree must divide "
                       "the global batch (check --global-batch, --max-tensor, --schedules)",
                       gpus);
  }
  const std::string per_gpu = usable_memory_text(capacity, usable, options);
  if (stats.pruned_memory == prepared.size()) {
    // The least any split can need: weights, gradients and optimizer state once across the cluster.
    const std::int64_t per_parameter = model.dtype_bytes + engine::kGradientBytesPerParameter +
                                       engine::optimizer_bytes_per_parameter(engine::state_format(prepared.front().spec, model.dtype_bytes));
    const Bytes least = Bytes::bytes(model.parameters() * per_parameter);
    if (least > usable * gpus) {
      return fmt::format("{} needs at least {} for weights, gradients and optimizer state; {} x {} available",
                         model.name.empty() ? "the model" : model.name, to_string(least), gpus, per_gpu);
    }
    const auto smallest = std::min_element(prepared.begin(), prepared.end(), [](const Prepared& a, const Prepared& b) {
      return a.estimate.peak_memory < b.estimate.peak_memory;
    });
    return fmt::format("no plan fits in memory: the smallest peak is {} ({}), over the {} of a GPU",
                       to_string(smallest->estimate.peak_memory), short_plan(smallest->spec), per_gpu);
  }
  if (stats.pruned_framework > 0 && stats.pruned_invalid == 0) {
    return "the framework runs none of the plans that fit (--framework): " + first_invalid;
  }
  if (!first_invalid.empty()) return "every plan that fits was rejected by the plan checks: " + first_invalid;
  return "no plan fits in memory once simulated";
}

}  // namespace

PlannerResult run_planner(const topology::Cluster& cluster, const model::Model& model, const PlannerOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  PlannerResult result;
  result.capacity = gpu_capacity(cluster);
  result.usable = usable_memory(result.capacity, options.memory_reserve, options.memory_margin);
  const Bytes usable = result.usable;
  const Bytes unreserved = result.capacity - options.memory_reserve;
  const plan::Objective objective = options.space.objective;
  const int threads = effective_threads(options.threads);
  const std::size_t top = static_cast<std::size_t>(std::max(1, options.top));
  engine::SharedRoutes routes(cluster);  // every candidate runs on this cluster
  const std::vector<Prepared> prepared = prepare_candidates(cluster, model, options, &routes);
  SearchStats& stats = result.stats;
  stats.candidates = prepared.size();

  std::vector<std::size_t> feasible;
  std::vector<std::size_t> margin_only;  // fit capacity - reserve, not the margin
  for (const Prepared& p : prepared) {
    if (p.estimate.peak_memory <= usable) {
      feasible.push_back(p.id);
    } else if (p.estimate.peak_memory <= unreserved) {
      margin_only.push_back(p.id);
    }
  }
  stats.pruned_memory = prepared.size() - feasible.size();
  stats.within_margin = margin_only.size();
  if (options.shards > 1) {  // this process's share of a divided search
    std::erase_if(feasible, [&](std::size_t id) { return static_cast<int>(id % static_cast<std::size_t>(options.shards)) != options.shard; });
  }
  const auto in_bound_order = [&](std::vector<std::size_t>& ids) {
    std::sort(ids.begin(), ids.end(), [&](std::size_t a, std::size_t b) {
      return std::make_pair(bound_key(objective, prepared[a].estimate), a) <
             std::make_pair(bound_key(objective, prepared[b].estimate), b);
    });
  };
  in_bound_order(feasible);
  in_bound_order(margin_only);

  // Committed state, guarded by the ordered search's lock.
  std::vector<Evaluated> evaluated;
  std::vector<std::pair<Key, std::size_t>> best;  // the top K so far, sorted
  std::vector<bool> done(prepared.size(), false);
  std::string first_invalid;
  std::size_t simulated = 0;

  struct Outcome {
    std::optional<Evaluated> ok;
    std::string invalid;  ///< resolve_plan()'s message
    bool refused = false;  ///< by options.refuse: `invalid` says why
    bool exceeded_limit = false;  ///< simulated until its step passed the limit it was given, then stopped
  };
  const auto evaluate_within = [&](std::size_t id, std::optional<TimeNs> step_limit) {
    Outcome out;
    const Prepared& p = prepared[id];
    plan::Plan resolved;
    try {
      resolved = plan::resolve_plan(p.spec, cluster, model);
    } catch (const InputError& e) {
      out.invalid = e.message();
      return out;
    }
    if (options.refuse) {
      if (std::optional<std::string> why = options.refuse(p.spec, resolved)) {
        out.invalid = std::move(*why);
        out.refused = true;
        return out;
      }
    }
    engine::EngineOptions engine = options.engine;
    engine.record_timeline = false;
    if (engine.routes == nullptr) engine.routes = &routes;
    engine.step_limit = step_limit;
    engine::Prediction prediction = engine::simulate(cluster, model, resolved, engine);
    if (prediction.exceeded_limit) {
      out.exceeded_limit = true;
      return out;
    }
    out.ok = Evaluated{id, std::move(resolved), std::move(prediction.report), p.estimate};
    return out;
  };
  const auto evaluate = [&](std::size_t id) { return evaluate_within(id, std::nullopt); };
  // Where the front phase stands: the peak memory of the candidate it committed last (zero while ranking).
  Bytes front_memory;
  const auto report_progress = [&] {
    if (!options.on_progress || best.empty()) return;
    double best_time = 0;
    for (const Evaluated& e : evaluated) {
      if (e.id == best.front().second) best_time = e.report.step_time_s;
    }
    options.on_progress({.candidates = prepared.size(),
                         .simulating = true,
                         .evaluated = simulated,
                         .feasible = feasible.size(),
                         .best_step_time_s = best_time,
                         .front_memory = front_memory,
                         .elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()});
  };
  const auto commit = [&](std::size_t id, Outcome&& out) {
    done[id] = true;
    if (out.exceeded_limit) {
      ++simulated;  // dominated: a committed plan needs no more memory and is faster (front phase)
      report_progress();
      return;
    }
    if (!out.ok) {
      ++(out.refused ? stats.pruned_framework : stats.pruned_invalid);
      if (first_invalid.empty()) first_invalid = out.invalid;
      return;
    }
    ++simulated;
    const trace::Report& r = out.ok->report;
    if (r.oom || Bytes::bytes(r.peak_memory_bytes) > usable) {
      ++stats.pruned_memory;  // cannot happen while the estimate is exact; kept out of the results if it does
    } else {
      const std::pair<Key, std::size_t> entry{objective_key(objective, r), id};
      best.insert(std::upper_bound(best.begin(), best.end(), entry), entry);
      if (best.size() > top) best.pop_back();
      evaluated.push_back(std::move(*out.ok));
    }
    report_progress();
  };

  // Branch and bound for the top K: stop at the first candidate (in bound order) whose bound is above
  // the K-th best objective so far; everything after it has a bound at least as high.
  OrderedSearch<Outcome> top_k;
  top_k.decide = [&](std::size_t id) {
    if (!options.bound_pruning || best.size() < top) return Decision::Evaluate;
    return bound_key(objective, prepared[id].estimate) > best.back().first ? Decision::Stop : Decision::Evaluate;
  };
  top_k.evaluate = evaluate;
  top_k.commit = commit;
  run_ordered_search(feasible, threads, top_k);

  // The rest of the Pareto front: a candidate is needed unless a simulated plan is at least as good on
  // both axes given its bound (memory exact, step time >= bound), taking memory-lean candidates first.
  // A candidate that is simulated is on the front only if it beats every committed plan that needs no
  // more memory, so its simulation stops once its step passes the fastest of them
  // (EngineOptions::step_limit): the memory-lean plans are the slowest to simulate, and most lose.
  if (options.exact_pareto) {
    std::vector<std::size_t> rest;
    for (const std::size_t id : feasible) {
      if (!done[id]) rest.push_back(id);
    }
    std::sort(rest.begin(), rest.end(), [&](std::size_t a, std::size_t b) {
      const Estimate& x = prepared[a].estimate;
      const Estimate& y = prepared[b].estimate;
      return std::tie(x.peak_memory, x.lower_bound, a) < std::tie(y.peak_memory, y.lower_bound, b);
    });
    // With a tolerance, a plan covers a candidate it is at most that share slower than.
    const double cover = 1 + options.pareto_tolerance;
    OrderedSearch<Outcome> front;
    front.decide = [&](std::size_t id) {
      const Estimate& c = prepared[id].estimate;
      const auto reach = static_cast<std::int64_t>(static_cast<double>(c.lower_bound.base()) * cover);
      for (const Evaluated& e : evaluated) {
        const std::int64_t mem = e.report.peak_memory_bytes;
        const std::int64_t time = TimeNs::seconds(e.report.step_time_s).base();
        if (mem > c.peak_memory.count() || time > reach) continue;
        if (mem < c.peak_memory.count() || time < reach || e.id < id) return Decision::Skip;
      }
      return Decision::Evaluate;
    };
    // (peak memory, step) of the plans committed so far, for the workers' limits: they read it
    // outside the ordered search's lock, so it has its own. A worker may read it before the commits
    // that precede its candidate and get a higher limit: more work, the same decision below.
    std::mutex committed_mutex;
    std::vector<std::pair<std::int64_t, std::int64_t>> committed_points;
    for (const Evaluated& e : evaluated) {
      committed_points.emplace_back(e.report.peak_memory_bytes, TimeNs::seconds(e.report.step_time_s).base());
    }
    // The slowest step at which a candidate is not covered by a committed plan that needs no more memory.
    const auto step_limit = [&](std::size_t id) {
      std::optional<std::int64_t> fastest;
      const std::lock_guard lock(committed_mutex);
      for (const auto& [memory, step] : committed_points) {
        if (memory <= prepared[id].estimate.peak_memory.count() && (!fastest || step < *fastest)) fastest = step;
      }
      if (!fastest) return std::optional<TimeNs>();
      return std::optional(TimeNs::ns(static_cast<std::int64_t>(static_cast<double>(*fastest) / cover)));
    };
    front.evaluate = [&](std::size_t id) { return evaluate_within(id, step_limit(id)); };
    front.commit = [&](std::size_t id, Outcome&& out) {
      front_memory = prepared[id].estimate.peak_memory;
      // Dropped whether its simulation stopped at a worker's limit or finished past this one: the
      // sequential loop's decision, whichever limit the worker read.
      if (out.ok) {
        const std::optional<TimeNs> limit = step_limit(id);
        if (limit && TimeNs::seconds(out.ok->report.step_time_s) > *limit) {
          out.ok.reset();
          out.exceeded_limit = true;
        }
      }
      const std::size_t kept_before = evaluated.size();
      commit(id, std::move(out));
      if (evaluated.size() > kept_before) {  // commit kept it: it fits
        const trace::Report& r = evaluated.back().report;
        const std::lock_guard lock(committed_mutex);
        committed_points.emplace_back(r.peak_memory_bytes, TimeNs::seconds(r.step_time_s).base());
      }
    };
    run_ordered_search(rest, threads, front);
  }

  // The best plan only the margin keeps out, for the report's warning: branch and bound for one.
  // Not counted in the stats (they describe the ranked search).
  std::optional<std::pair<Key, std::size_t>> best_within_margin;
  OrderedSearch<Outcome> within;
  within.decide = [&](std::size_t id) {
    if (!options.bound_pruning || !best_within_margin) return Decision::Evaluate;
    return bound_key(objective, prepared[id].estimate) > best_within_margin->first ? Decision::Stop
                                                                                  : Decision::Evaluate;
  };
  within.evaluate = evaluate;
  within.commit = [&](std::size_t id, Outcome&& out) {
    if (!out.ok || out.ok->report.oom || Bytes::bytes(out.ok->report.peak_memory_bytes) > unreserved) return;
    const std::pair<Key, std::size_t> entry{objective_key(objective, out.ok->report), id};
    if (!best_within_margin || entry < *best_within_margin) {
      best_within_margin = entry;
      result.within_margin = std::move(*out.ok);
    }
  };
  run_ordered_search(margin_only, threads, within);

  stats.evaluated = simulated;
  stats.pruned_bound = feasible.size() - simulated - stats.pruned_invalid - stats.pruned_framework;
  std::sort(evaluated.begin(), evaluated.end(), [](const Evaluated& a, const Evaluated& b) { return a.id < b.id; });
  for (const auto& [key, id] : best) {
    const auto it = std::lower_bound(evaluated.begin(), evaluated.end(), id,
                                     [](const Evaluated& e, std::size_t v) { return e.id < v; });
    result.ranked.push_back(*it);
  }
  std::vector<ParetoPoint> points;
  for (const Evaluated& e : evaluated) {
    points.push_back({TimeNs::seconds(e.report.step_time_s).base(), e.report.peak_memory_bytes, e.id});
  }
  for (const std::size_t i : pareto_front(points)) result.pareto.push_back(evaluated[i]);
  result.evaluated = std::move(evaluated);
  if (result.ranked.empty()) {
    result.infeasible =
        infeasible_reason(model, cluster, prepared, result.capacity, usable, options, stats, first_invalid);
    if (result.within_margin) {
      result.infeasible += fmt::format("; {} plans fit only without the {:g}% memory margin (--memory-margin 0 ranks "
                                       "them, at the risk of running out of memory)",
                                       stats.within_margin, 100 * options.memory_margin);
    }
  }
  stats.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

std::string usable_memory_text(Bytes capacity, Bytes usable, const PlannerOptions& options) {
  std::vector<std::string> less;
  if (options.memory_reserve.count() > 0) less.push_back(fmt::format("a {} reserve", to_string(options.memory_reserve)));
  if (options.memory_margin > 0) less.push_back(fmt::format("a {:g}% margin", 100 * options.memory_margin));
  if (less.empty()) return to_string(capacity);
  return fmt::format("{} ({} less {})", to_string(usable), to_string(capacity), fmt::join(less, " and "));
}

bool ranks_before(plan::Objective o, const Evaluated& a, const Evaluated& b) {
  return std::make_pair(objective_key(o, a.report), a.id) < std::make_pair(objective_key(o, b.report), b.id);
}

PlannerResult merge_shards(std::vector<Evaluated> candidates, const SearchStats& stats, const PlannerOptions& options) {
  PlannerResult result;
  result.stats = stats;
  std::sort(candidates.begin(), candidates.end(), [](const Evaluated& a, const Evaluated& b) { return a.id < b.id; });
  candidates.erase(std::unique(candidates.begin(), candidates.end(),
                               [](const Evaluated& a, const Evaluated& b) { return a.id == b.id; }),
                   candidates.end());
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ranks_before(options.space.objective, candidates[a], candidates[b]);
  });
  const std::size_t top = static_cast<std::size_t>(std::max(1, options.top));
  for (std::size_t k = 0; k < order.size() && k < top; ++k) result.ranked.push_back(candidates[order[k]]);
  std::vector<ParetoPoint> points;
  for (const Evaluated& e : candidates) {
    points.push_back({TimeNs::seconds(e.report.step_time_s).base(), e.report.peak_memory_bytes, e.id});
  }
  for (const std::size_t i : pareto_front(points)) result.pareto.push_back(candidates[i]);
  result.evaluated = std::move(candidates);
  return result;
}

}  // namespace mpsim::planner
