#include "planner/unit_costs.h"

#include <algorithm>
#include <numeric>

#include <map>

#include "sim/engine/collective_bound.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/pair_slots.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"
#include "sim/schedule/passes.h"

namespace mpsim::planner {
namespace {

bool same_unit(const model::Model& m, const plan::LayerRange& a, const plan::LayerRange& b) {
  if (a.last - a.first != b.last - b.first) return false;
  for (int i = 0; i < a.last - a.first; ++i) {
    if (!model::same_cost(m.layers[static_cast<std::size_t>(a.first + i)], m.layers[static_cast<std::size_t>(b.first + i)])) {
      return false;
    }
  }
  return true;
}

/// A plan whose partition cuts `units` units one per virtual stage, on one pipeline rank.
plan::Plan one_rank_per_unit(int units, const UnitCostKey& key) {
  plan::Plan p;
  p.degrees = key.degrees;
  // The fewest data replicas that let expert x expert_tensor fold into tensor x context x data; the
  // groups of rank 0 are then those of any plan with these degrees (Megatron's rank order).
  const int folded = key.degrees.product(plan::Axis::Expert | plan::Axis::ExpertTensor);
  p.degrees.set(plan::Axis::Data,
                folded / std::gcd(folded, key.degrees.product(plan::Axis::Tensor | plan::Axis::Context)));
  p.virtual_stages = units;
  p.micro_batch = key.micro_batch;
  p.recompute = key.recompute;
  p.sequence_parallel = key.sequence_parallel;
  p.overlap_tensor_comm = key.overlap_tensor_comm;
  p.dispatcher = key.dispatcher;
  p.flex_dispatcher_sms = key.flex_dispatcher_sms;
  p.attention = key.attention;
  p.attention_kernel = key.attention_kernel;
  p.cross_entropy = key.cross_entropy;
  p.schedule = units > 1 ? plan::ScheduleKind::Interleaved1F1B : plan::ScheduleKind::OneFOneB;
  p.partition.resize(static_cast<std::size_t>(units) + 1);
  std::iota(p.partition.begin(), p.partition.end(), 0);
  return p;
}

/// Lower bounds on a chunk's in-layer collectives per microbatch: the blocking ones outside the tensor
/// group by pass (they hold the pass), and all of them (one actor runs them one at a time).
struct ChunkExchanges {
  TimeNs forward;
  TimeNs backward;
  TimeNs all;
  std::optional<TimeNs> expert_all_to_all;  ///< the shortest of its expert all-to-alls, one of them
};

std::vector<ChunkExchanges> blocking_exchanges(const topology::Cluster& cluster, engine::SharedRoutes& routes,
                                               const model::Model& model, const plan::Plan& plan,
                                               const plan::Layout& layout) {
  const auto collectives = schedule::chunk_layer_collectives(model, plan);
  std::map<std::pair<engine::CollectiveKind, plan::AxisSet>, engine::CollectiveBound> bounds;
  const std::optional<engine::TokenRouting> routing = engine::token_routing(model, plan);
  const auto bound_of = [&](const schedule::LayerCollective& c) -> const engine::CollectiveBound& {
    const engine::CollectiveKind kind = engine::collective_kind(c.kind);
    auto it = bounds.find({kind, c.group});
    if (it == bounds.end()) {
      const auto groups = engine::device_groups(cluster, layout, {0}, c.group);
      it = bounds.emplace(std::make_pair(kind, c.group),
                          engine::collective_bound(cluster, routes, kind, engine::CollectiveAlgorithm::Auto, groups,
                                                   engine::expert_routing(routing, kind, c.group)))
               .first;
    }
    return it->second;
  };
  const auto time_of = [&](const std::vector<schedule::LayerCollective>& list, bool blocking_only) {
    TimeNs total;
    for (const schedule::LayerCollective& c : list) {
      const bool holds_the_pass =
          c.placement == schedule::LayerCommPlacement::Blocking && c.group != plan::AxisSet(plan::Axis::Tensor);
      if (blocking_only && !holds_the_pass) continue;
      total += bound_of(c).at(c.bytes) * c.count;
    }
    return total;
  };
  std::vector<ChunkExchanges> out;
  for (const schedule::ChunkCollectives& chunk : collectives.front()) {
    ChunkExchanges x{time_of(chunk.forward, true), time_of(chunk.backward, true),
                     time_of(chunk.forward, false) + time_of(chunk.backward, false), std::nullopt};
    for (const auto* list : {&chunk.forward, &chunk.backward}) {
      for (const schedule::LayerCollective& c : *list) {
        if (c.kind != schedule::OpKind::AllToAll || c.group != plan::AxisSet(plan::Axis::Expert)) continue;
        const TimeNs one = bound_of(c).at(c.bytes);
        x.expert_all_to_all = std::min(x.expert_all_to_all.value_or(one), one);
      }
    }
    out.push_back(x);
  }
  return out;
}

/// What a unit's passes pay at least in F&B pairs beyond their compute, per microbatch.
struct PairSides {
  TimeNs forward;
  TimeNs backward;
};

/// Each of the unit's MoE blocks' slots beside all-to-alls no shorter than `shortest_all_to_all`
/// (sim/engine/pair_slots.h).
PairSides pair_sides(const engine::ChunkCost& unit, TimeNs shortest_all_to_all, const UnitCostKey& key,
                     const topology::GpuKind& gpu) {
  const int sms = engine::dispatcher_sms(key.dispatcher, key.flex_dispatcher_sms);
  return {engine::forward_slots_extra(unit, shortest_all_to_all, sms, gpu) * unit.moe_blocks,
          engine::backward_slots_extra(unit, shortest_all_to_all, sms, gpu) * unit.moe_blocks};
}

}  // namespace

UnitCostModel::UnitCostModel(const topology::Cluster& cluster, const model::Model& model)
    : cluster_(&cluster), model_(&model), routes_(std::make_unique<engine::SharedRoutes>(cluster)) {
  const int units = plan::partitionable_layer_count(model);
  plan::Plan cut;
  cut.partition.resize(static_cast<std::size_t>(units) + 1);
  std::iota(cut.partition.begin(), cut.partition.end(), 0);
  const std::vector<plan::LayerRange> ranges = plan::virtual_stage_layers(cut, model);

  std::vector<plan::LayerRange> distinct;
  for (const plan::LayerRange& r : ranges) {
    std::vector<int> layers(static_cast<std::size_t>(r.last - r.first));
    std::iota(layers.begin(), layers.end(), r.first);
    unit_layers_.push_back(std::move(layers));
    const auto it = std::find_if(distinct.begin(), distinct.end(),
                                 [&](const plan::LayerRange& d) { return same_unit(model, d, r); });
    distinct_of_.push_back(static_cast<int>(it - distinct.begin()));
    if (it == distinct.end()) distinct.push_back(r);
  }
  probe_.name = model.name;
  probe_.family = model.family;
  probe_.shape = model.shape;
  probe_.dtype_bytes = model.dtype_bytes;
  for (const plan::LayerRange& r : distinct) {
    for (int i = r.first; i < r.last; ++i) probe_.layers.push_back(model.layers[static_cast<std::size_t>(i)]);
  }

  const auto all_or_none = [&](auto has) {
    const auto n = std::count_if(model.layers.begin(), model.layers.end(), has);
    return n == 0 || n == static_cast<std::ptrdiff_t>(model.layers.size());
  };
  additive_times_ =
      all_or_none([](const model::Layer& l) { return l.forward_time.has_value(); }) &&
      all_or_none([](const model::Layer& l) { return l.backward_input_time && l.backward_weight_time; }) &&
      plan::job_gpu_kinds(cluster).size() <= 1;
}

std::vector<UnitCost> UnitCostModel::costs(const UnitCostKey& key) const {
  const int distinct = distinct_of_.empty() ? 0 : *std::max_element(distinct_of_.begin(), distinct_of_.end()) + 1;
  plan::Plan probe_plan = one_rank_per_unit(distinct, key);
  probe_plan.precision = key.precision.value_or(plan::model_precision(model_->dtype_bytes));
  const plan::Layout layout(probe_plan);
  const engine::CostModel probe = engine::build_cost_model(*cluster_, probe_, probe_plan, layout, routes_.get());
  const auto& chunks = probe.ranks.front().chunks;
  const std::vector<ChunkExchanges> exchanges = blocking_exchanges(*cluster_, *routes_, probe_, probe_plan, layout);

  // The shortest expert all-to-all of any unit: an F&B pair's slots wait on its partner's.
  TimeNs shortest_expert_all_to_all;
  if (key.pairs_hide_comm) {
    std::optional<TimeNs> shortest;
    for (const ChunkExchanges& x : exchanges) {
      if (x.expert_all_to_all) shortest = std::min(shortest.value_or(*x.expert_all_to_all), *x.expert_all_to_all);
    }
    shortest_expert_all_to_all = shortest.value_or(TimeNs{});
  }
  const topology::GpuKind& gpu = cluster_->gpu_kind_of(cluster_->gpus().front());
  std::vector<UnitCost> out;
  out.reserve(distinct_of_.size());
  for (std::size_t u = 0; u < distinct_of_.size(); ++u) {
    const engine::ChunkCost& c = chunks.at(static_cast<std::size_t>(distinct_of_[u]));
    UnitCost uc;
    // With their tensor collectives on idle links, after the compute or beside it, plus the blocking
    // exchanges outside the tensor group (the experts' all-to-alls), at their bound.
    const ChunkExchanges& x = exchanges.at(static_cast<std::size_t>(distinct_of_[u]));
    const bool beside = key.overlap_tensor_comm;
    if (key.pairs_hide_comm) {
      // A pass pays at least what its slots add (sim/engine/pair_slots.h), partnered or not: an
      // unpaired pass waits for its all-to-alls whole.
      const PairSides sides = pair_sides(c, shortest_expert_all_to_all, key, gpu);
      uc.forward = c.forward + sides.forward;
      uc.backward = c.backward + sides.backward;
      uc.backward_input = c.backward_input + sides.backward;
    } else if (beside) {
      uc.forward = c.forward + x.forward;
      uc.backward = c.backward + x.backward;
      uc.backward_input = c.backward_input + x.backward;
      uc.forward_overlapped = c.forward_comm + x.forward;
      uc.backward_overlapped = c.backward_comm + x.backward;
      uc.backward_input_overlapped = c.backward_comm + x.backward;
    } else {
      uc.forward = c.forward + c.forward_comm + x.forward;
      uc.backward = c.backward + c.backward_comm + x.backward;
      uc.backward_input = c.backward_input + c.backward_comm + x.backward;
    }
    uc.backward_weight = c.backward_weight;
    uc.in_layer_comm = x.all;
    uc.stashed = c.stashed;
    uc.forward_working = c.forward_working;
    uc.backward_working = c.backward_working;
    uc.activation_send = c.activation_send;
    uc.parameters = c.parameters;
    uc.fp8_parameters = c.fp8_parameters;
    uc.largest_layer_parameters = c.largest_layer_parameters;
    uc.expert_parameters = c.expert_parameters;
    uc.output_table = c.output_table;
    uc.holds_table = c.holds_table;
    uc.stashed_after_input = c.stashed_after_input;
    out.push_back(uc);
  }
  return out;
}

}  // namespace mpsim::planner
