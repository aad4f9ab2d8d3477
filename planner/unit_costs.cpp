#include "planner/unit_costs.h"

#include <algorithm>
#include <numeric>

#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"

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
  p.tensor = key.tensor;
  p.pipeline = 1;
  p.data = 1;
  p.virtual_stages = units;
  p.micro_batch = key.micro_batch;
  p.recompute = key.recompute;
  p.sequence_parallel = key.sequence_parallel;
  p.attention = key.attention;
  p.schedule = units > 1 ? plan::ScheduleKind::Interleaved1F1B : plan::ScheduleKind::OneFOneB;
  p.partition.resize(static_cast<std::size_t>(units) + 1);
  std::iota(p.partition.begin(), p.partition.end(), 0);
  return p;
}

}  // namespace

UnitCostModel::UnitCostModel(const topology::Cluster& cluster, const model::Model& model)
    : cluster_(&cluster), model_(&model) {
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
      cluster.gpu_kinds().size() <= 1;
}

std::vector<UnitCost> UnitCostModel::costs(const UnitCostKey& key) const {
  const int distinct = distinct_of_.empty() ? 0 : *std::max_element(distinct_of_.begin(), distinct_of_.end()) + 1;
  plan::Plan probe_plan = one_rank_per_unit(distinct, key);
  probe_plan.precision = key.precision.value_or(plan::model_precision(model_->dtype_bytes));
  const plan::Layout layout(probe_plan);
  const engine::CostModel probe = engine::build_cost_model(*cluster_, probe_, probe_plan, layout);
  const auto& chunks = probe.ranks.front().chunks;

  std::vector<UnitCost> out;
  out.reserve(distinct_of_.size());
  for (std::size_t u = 0; u < distinct_of_.size(); ++u) {
    const engine::ChunkCost& c = chunks.at(static_cast<std::size_t>(distinct_of_[u]));
    UnitCost uc;
    // With their in-layer collectives on idle links, as the planner's plans run them (no overlap).
    uc.forward = engine::pass_time(c.forward, c.forward_comm, false);
    uc.backward = engine::pass_time(c.backward, c.backward_comm, false);
    uc.backward_input = engine::pass_time(c.backward_input, c.backward_comm, false);
    uc.backward_weight = c.backward_weight;
    uc.stashed = c.stashed;
    uc.activation_send = c.activation_send;
    uc.parameters = c.parameters;
    uc.fp8_parameters = c.fp8_parameters;
    uc.largest_layer_parameters = c.largest_layer_parameters;
    uc.expert_parameters = c.expert_parameters;
    uc.attention_scores = c.stashed - c.stashed_after_input;  // what a split backward frees at I
    out.push_back(uc);
  }
  return out;
}

}  // namespace mpsim::planner
