#include "planner/candidate.h"

#include <algorithm>

#include "sim/engine/cost_model.h"
#include "sim/engine/dispatcher_buffers.h"
#include "sim/engine/working_memory.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"

namespace mpsim::planner {

UnitCostKey unit_cost_key(const plan::PlanSpec& spec) {
  // A unit's cost depends on the degrees that split its work, not on how many stages or replicas run
  // it (kPlanFields' unit_cost column, which plan_fields_cost_test holds this list to).
  const plan::Degrees written = plan::degrees_of(spec, 1);
  plan::Degrees unit_degrees;
  for (const plan::Axis a : {plan::Axis::Tensor, plan::Axis::Context, plan::Axis::Expert, plan::Axis::ExpertTensor}) {
    unit_degrees.set(a, written[a]);
  }
  return {unit_degrees,
          spec.micro_batch,
          spec.recompute,
          spec.sequence_parallel,
          spec.precision,
          spec.attention,
          spec.attention_kernel,
          spec.overlap_tensor_comm,
          spec.dispatcher,
          spec.flex_dispatcher_sms,
          plan::traits(spec.schedule).forward_backward_pairs,
          spec.cross_entropy};
}

std::vector<std::int64_t> partition_weights(const std::vector<UnitCost>& units) {
  std::vector<std::int64_t> out;
  out.reserve(units.size());
  for (const UnitCost& u : units) {
    out.push_back((std::max(u.forward, u.forward_overlapped) + std::max(u.backward, u.backward_overlapped)).base());
  }
  return out;
}

StageCosts stage_costs(const std::vector<UnitCost>& units, const std::vector<int>& partition) {
  StageCosts out;
  const auto lower = [](TimeNs sum, TimeNs slack) { return sum > slack ? sum - slack : TimeNs{}; };
  for (std::size_t s = 0; s + 1 < partition.size(); ++s) {
    StageTimes t;
    TimeNs comm, forward_overlapped, backward_overlapped, input_overlapped;
    Bytes stashed, kept_for_weight;
    engine::WorkingMemory working;
    std::int64_t parameters = 0, fp8_parameters = 0, largest = 0, experts = 0, output_table = 0;
    bool holds_table = false;
    for (int u = partition[s]; u < partition[s + 1]; ++u) {
      const UnitCost& c = units[static_cast<std::size_t>(u)];
      t.forward += c.forward;
      t.backward += c.backward;
      t.backward_input += c.backward_input;
      t.backward_weight += c.backward_weight;
      forward_overlapped += c.forward_overlapped;
      backward_overlapped += c.backward_overlapped;
      input_overlapped += c.backward_input_overlapped;
      comm += c.in_layer_comm;
      stashed += c.stashed;
      working = engine::then(working, {c.stashed, c.forward_working, c.backward_working});
      kept_for_weight += c.stashed_after_input;
      parameters += c.parameters;
      fp8_parameters += c.fp8_parameters;
      largest = std::max(largest, c.largest_layer_parameters);
      experts += c.expert_parameters;
      output_table = std::max(output_table, c.output_table);
      holds_table = holds_table || c.holds_table;
    }
    t.forward = std::max(t.forward, forward_overlapped);
    t.backward = std::max(t.backward, backward_overlapped);
    t.backward_input = std::max(t.backward_input, input_overlapped);
    const TimeNs slack = kUnitRoundingSlack * (partition[s + 1] - partition[s]);
    t.forward = lower(t.forward, slack);
    t.backward = lower(t.backward, slack * 2);  // input and weight parts each round
    t.backward_input = lower(t.backward_input, slack);
    t.backward_weight = lower(t.backward_weight, slack);
    out.times.push_back(t);
    out.in_layer_comm.push_back(comm);
    out.activations.push_back({stashed, kept_for_weight, working.forward, working.backward});
    out.parameters.push_back(parameters);
    out.fp8_parameters.push_back(fp8_parameters);
    out.largest_layer_parameters.push_back(largest);
    out.expert_parameters.push_back(experts);
    out.output_table.push_back(output_table);
    out.holds_table.push_back(holds_table ? 1 : 0);
  }
  return out;
}

StageCosts repeated_for_second_direction(StageCosts costs) {
  const auto twice = [](auto& v) {
    const auto once = v;
    v.insert(v.end(), once.begin(), once.end());
  };
  twice(costs.times);
  twice(costs.in_layer_comm);
  twice(costs.activations);
  twice(costs.parameters);
  twice(costs.fp8_parameters);
  twice(costs.largest_layer_parameters);
  twice(costs.expert_parameters);
  twice(costs.output_table);
  twice(costs.holds_table);
  return costs;
}

engine::RankParameters rank_parameters(const plan::PlanSpec& spec, const StageCosts& costs, int rank) {
  engine::RankParameters out;
  std::int64_t output_table = 0;
  bool holds_table = false;
  for (int c = 0; c < spec.virtual_stages; ++c) {
    const auto vs =
        static_cast<std::size_t>(plan::virtual_stage_of(spec.schedule, spec.degrees[plan::Axis::Pipeline], rank, c));
    out.total += costs.parameters[vs];
    out.fp8 += costs.fp8_parameters[vs];
    out.expert += costs.expert_parameters[vs];
    out.largest_layer = std::max(out.largest_layer, costs.largest_layer_parameters[vs]);
    output_table = std::max(output_table, costs.output_table[vs]);
    holds_table = holds_table || costs.holds_table[vs] != 0;
  }
  out.tied_copy = engine::tied_table_copy(output_table, holds_table);
  return out;
}

namespace {

/// Interleaved 1F1B with overlapped reductions: chunk c's buckets leave after its last backward, and
/// the gradient stream runs them one at a time with those of the chunks that finish later. Before
/// chunk c's last backward, a rank has run every forward, every backward of chunks >= c, and those of
/// chunks < c except the last group's (Megatron's table: the final group's backwards run chunk v-1
/// down to 0). So the step lasts at least that work, then the reductions of chunks c..0, the
/// optimizer step and the gather (all lower bounds: work is only ever left out).
TimeNs overlapped_interleaved_bound(const plan::PlanSpec& spec, const StageCosts& costs, const LayoutSyncBounds& sync,
                                    const SyncShape& shape, const std::vector<engine::RankParameters>& parameters,
                                    const std::vector<std::int64_t>& dense_by_stage, const engine::OptimizerPace& pace) {
  const int p = spec.degrees[plan::Axis::Pipeline];
  const int v = spec.virtual_stages;
  const std::int64_t m = spec.microbatches.value_or(1);
  const std::int64_t group = plan::microbatch_group_size_of(spec);
  const std::int64_t last_group = m % group == 0 ? group : m % group;
  TimeNs best;
  for (int r = 0; r < p; ++r) {
    const auto rank = static_cast<std::size_t>(r);
    const auto at = [&](int c) { return static_cast<std::size_t>(plan::virtual_stage_of(spec.schedule, p, r, c)); };
    TimeNs forwards;
    for (int c = 0; c < v; ++c) forwards += costs.times[at(c)].forward;
    const TimeNs end = after_reductions_time(sync, shape, rank, parameters[rank], pace);
    for (int c = 0; c < v; ++c) {
      TimeNs before = forwards * m;
      TimeNs reductions;
      for (int k = 0; k < v; ++k) {
        before += costs.times[at(k)].backward * (k >= c ? m : m - last_group);
        if (k <= c) reductions += reduction_time(sync, shape, rank, dense_by_stage[at(k)]);
      }
      best = std::max(best, TimeNs(before + reductions + end));
    }
  }
  return best;
}

}  // namespace

Bytes dispatcher_buffers_bound(const plan::PlanSpec& spec, const model::Model& model) {
  const plan::Degrees degrees = plan::degrees_of(spec, spec.written(plan::Axis::Data).value_or(1));
  const int group = degrees[plan::Axis::Expert] * degrees[plan::Axis::ExpertTensor];
  return engine::dispatcher_buffer_floor(engine::dispatcher_buffer_shape(model, spec, group, 1));
}

Estimate estimate(const plan::PlanSpec& spec, const StageCosts& costs, const std::vector<CountVectors>& in_flight,
                  const EstimateContext& context) {
  const int p = spec.degrees[plan::Axis::Pipeline];
  const int v = spec.virtual_stages;
  const int d = spec.written(plan::Axis::Data).value_or(1);
  Estimate out;
  std::vector<ChunkActivations> chunks(static_cast<std::size_t>(v));
  std::vector<engine::RankParameters> rank_parameters;
  for (int r = 0; r < p; ++r) {
    for (int c = 0; c < v; ++c) chunks[static_cast<std::size_t>(c)] = costs.activations[static_cast<std::size_t>(plan::virtual_stage_of(spec.schedule, p, r, c))];
    const engine::RankParameters parameters = planner::rank_parameters(spec, costs, r);
    rank_parameters.push_back(parameters);
    engine::StateFormat format = engine::state_format(spec, context.dtype_bytes);
    format.dispatcher_buffers = context.dispatcher_buffers;
    const engine::StaticMemory states = engine::static_memory(parameters, format);
    const Bytes fixed = states.total();
    const Bytes with_activations = fixed + peak_activations(in_flight[static_cast<std::size_t>(r)], chunks);
    const Bytes peak = std::max(with_activations, states.during_optimizer_step());
    if (r == 0 || peak > out.peak_memory) {
      out.peak_memory = peak;
      out.peak_rank = r;
      out.static_memory = fixed;
    }
  }
  if (context.additive_times) {
    std::vector<TimeNs> tails;
    if (context.sync) {
      SyncShape shape;
      shape.data = d;
      shape.replicas = d * spec.degrees[plan::Axis::Context];
      shape.zero = spec.zero;
      shape.gradient_bytes_per_parameter =
          schedule::gradient_bytes_per_parameter(spec.grad_reduce_in_fp32, context.dtype_bytes);
      shape.parameter_bytes = schedule::gathered_parameter_bytes(spec.fp8_param_gather, context.dtype_bytes);
      shape.overlap_grad_reduce = spec.overlap_grad_reduce || context.overlap_grad_reduce;
      shape.overlap_param_gather = spec.overlap_param_gather;
      shape.optimizer = spec.optimizer;
      shape.expert_data = std::max(1, plan::degrees_of(spec, d)[plan::Axis::ExpertData]);
      // Dense parameters by virtual stage; chunk 0 of rank r is stage r.
      std::vector<std::int64_t> dense_by_stage;
      for (std::size_t vs = 0; vs < costs.parameters.size(); ++vs) {
        dense_by_stage.push_back(costs.parameters[vs] - std::min(costs.expert_parameters[vs], costs.parameters[vs]));
      }
      const std::vector<std::int64_t> last_chunk_dense(dense_by_stage.begin(), dense_by_stage.begin() + p);
      // A bidirectional schedule reduces over the data group and the mirrored rank (Axis::PipelineMirror), a group the
      // layout's bounds do not cover and whose rings may use more NICs than the data group's: no tail.
      if (!plan::is_bidirectional(spec.schedule)) {
        tails = rank_tails(*context.sync, rank_parameters, last_chunk_dense, shape, context.optimizer_pace);
      }
      if (shape.overlap_grad_reduce && spec.schedule == plan::ScheduleKind::Interleaved1F1B) {
        out.lower_bound = overlapped_interleaved_bound(spec, costs, *context.sync, shape, rank_parameters,
                                                       dense_by_stage, context.optimizer_pace);
      }
    }
    out.lower_bound = std::max(out.lower_bound, step_time_lower_bound(schedule::shape_of(spec), costs.times, tails));
    // A rank's in-layer collectives run one at a time, every microbatch's within the step: those of
    // its units, and with ZeRO 3 the gathers of its dense weights before each pass and the
    // reduce-scatter of their gradients (over the same replicas as the gradient sync).
    const std::int64_t m = spec.microbatches.value_or(1);
    const bool sharded_weights = spec.zero >= 3 && d * spec.degrees[plan::Axis::Context] > 1 && context.sync != nullptr;
    for (int r = 0; r < p; ++r) {
      TimeNs comm;
      for (int c = 0; c < v; ++c) comm += costs.in_layer_comm[static_cast<std::size_t>(plan::virtual_stage_of(spec.schedule, p, r, c))];
      if (sharded_weights) {
        const engine::RankParameters& mine = rank_parameters[static_cast<std::size_t>(r)];
        const std::int64_t experts = std::min(mine.expert, mine.total);
        const auto rank = static_cast<std::size_t>(r);
        const int gathered = schedule::gathered_parameter_bytes(spec.fp8_param_gather, context.dtype_bytes);
        const int gradient = schedule::gradient_bytes_per_parameter(spec.grad_reduce_in_fp32, context.dtype_bytes);
        const auto gathers = [&](const engine::CollectiveBound& gather, const engine::CollectiveBound& scatter,
                                 std::int64_t parameters) {
          return gather.at(Bytes::bytes(parameters * gathered)) * 2 + scatter.at(Bytes::bytes(parameters * gradient));
        };
        const auto* expert_gather = context.sync->of_experts(schedule::OpKind::AllGather, rank);
        const auto* expert_scatter = context.sync->of_experts(schedule::OpKind::ReduceScatter, rank);
        // Experts without replicas of their own are gathered with the dense weights.
        const std::int64_t dense = expert_gather != nullptr ? mine.total - experts : mine.total;
        comm += gathers(context.sync->of(schedule::OpKind::AllGather, rank),
                        context.sync->of(schedule::OpKind::ReduceScatter, rank), dense);
        if (expert_gather != nullptr) comm += gathers(*expert_gather, *expert_scatter, experts);
      }
      // A bidirectional schedule runs each chunk for half the microbatches.
      out.lower_bound = std::max(out.lower_bound, TimeNs(comm * (plan::is_bidirectional(spec.schedule) ? m / 2 : m)));
    }
  }
  return out;
}

}  // namespace mpsim::planner
