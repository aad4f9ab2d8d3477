#include "planner/candidate.h"

#include <algorithm>

#include "sim/engine/cost_model.h"
#include "sim/plan/plan_check.h"

namespace mpsim::planner {

UnitCostKey unit_cost_key(const plan::PlanSpec& spec) {
  return {spec.tensor, spec.micro_batch, spec.recompute, spec.sequence_parallel, spec.precision, spec.attention};
}

std::vector<std::int64_t> partition_weights(const std::vector<UnitCost>& units) {
  std::vector<std::int64_t> out;
  out.reserve(units.size());
  for (const UnitCost& u : units) out.push_back((u.forward + u.backward).base());
  return out;
}

StageCosts stage_costs(const std::vector<UnitCost>& units, const std::vector<int>& partition) {
  StageCosts out;
  const auto lower = [](TimeNs sum, TimeNs slack) { return sum > slack ? sum - slack : TimeNs{}; };
  for (std::size_t s = 0; s + 1 < partition.size(); ++s) {
    StageTimes t;
    Bytes stashed, scores;
    std::int64_t parameters = 0, fp8_parameters = 0, largest = 0, experts = 0;
    for (int u = partition[s]; u < partition[s + 1]; ++u) {
      const UnitCost& c = units[static_cast<std::size_t>(u)];
      t.forward += c.forward;
      t.backward += c.backward;
      t.backward_input += c.backward_input;
      t.backward_weight += c.backward_weight;
      stashed += c.stashed;
      scores += c.attention_scores;
      parameters += c.parameters;
      fp8_parameters += c.fp8_parameters;
      largest = std::max(largest, c.largest_layer_parameters);
      experts += c.expert_parameters;
    }
    const TimeNs slack = kUnitRoundingSlack * (partition[s + 1] - partition[s]);
    t.forward = lower(t.forward, slack);
    t.backward = lower(t.backward, slack * 2);  // input and weight parts each round
    t.backward_input = lower(t.backward_input, slack);
    t.backward_weight = lower(t.backward_weight, slack);
    out.times.push_back(t);
    // As the cost model: a split backward frees the scores at I and keeps the rest until W.
    out.activations.push_back({stashed, engine::kept_after_input(stashed, scores)});
    out.parameters.push_back(parameters);
    out.fp8_parameters.push_back(fp8_parameters);
    out.largest_layer_parameters.push_back(largest);
    out.expert_parameters.push_back(experts);
  }
  return out;
}

engine::RankParameters rank_parameters(const plan::PlanSpec& spec, const StageCosts& costs, int rank) {
  engine::RankParameters out;
  for (int c = 0; c < spec.virtual_stages; ++c) {
    const auto vs = static_cast<std::size_t>(c * spec.pipeline + rank);
    out.total += costs.parameters[vs];
    out.fp8 += costs.fp8_parameters[vs];
    out.expert += costs.expert_parameters[vs];
    out.largest_layer = std::max(out.largest_layer, costs.largest_layer_parameters[vs]);
  }
  return out;
}

Estimate estimate(const plan::PlanSpec& spec, const StageCosts& costs, const std::vector<CountVectors>& in_flight,
                  const EstimateContext& context) {
  const int p = spec.pipeline;
  const int v = spec.virtual_stages;
  const int d = spec.data.value_or(1);
  Estimate out;
  std::vector<ChunkActivations> chunks(static_cast<std::size_t>(v));
  std::vector<std::int64_t> rank_parameters;
  for (int r = 0; r < p; ++r) {
    for (int c = 0; c < v; ++c) chunks[static_cast<std::size_t>(c)] = costs.activations[static_cast<std::size_t>(c * p + r)];
    const engine::RankParameters parameters = planner::rank_parameters(spec, costs, r);
    rank_parameters.push_back(parameters.total);
    const Bytes fixed = engine::static_memory(parameters, engine::state_format(spec, context.dtype_bytes)).total();
    const Bytes peak = fixed + peak_activations(in_flight[static_cast<std::size_t>(r)], chunks);
    if (r == 0 || peak > out.peak_memory) {
      out.peak_memory = peak;
      out.peak_rank = r;
      out.static_memory = fixed;
    }
  }
  if (context.additive_times) {
    std::vector<TimeNs> tails;
    if (context.sync) {
      tails = rank_tails(*context.sync, rank_parameters, d, spec.zero,
                         schedule::gradient_bytes_per_parameter(spec.grad_reduce_in_fp32, context.dtype_bytes),
                         schedule::gathered_parameter_bytes(spec.fp8_param_gather, context.dtype_bytes),
                         context.memory_bandwidth);
    }
    out.lower_bound = step_time_lower_bound(schedule::shape_of(spec), costs.times, tails);
  }
  return out;
}

}  // namespace mpsim::planner
