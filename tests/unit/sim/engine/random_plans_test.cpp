// Invariants of the engine on random clusters, models and plans: seeded and deterministic, so a
// failure names a case that reruns as it failed. For each drawn case (cluster, model, plan):
//  - the validator accepts the program the plan runs (every send received, every pass once, no
//    deadlock: validate.h);
//  - no device runs two computes at once (compute spans of one lane never overlap);
//  - folding data-parallel replicas into one actor predicts the same report as simulating each;
//  - doubling every link's bandwidth never makes the step slower;
//  - a step limit (EngineOptions::step_limit) at the step changes nothing; a nanosecond below it,
//    the run stops and says it exceeded the limit (the planner drops such a candidate as dominated).
// The planner's lower bound (step time >= bound) is the same kind of property, in
// tests/unit/planner/lower_bound_test.cpp.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/core/input_error.h"
#include "sim/plan/layout.h"
#include "sim/schedule/validate.h"
#include "sim/trace/trace_json.h"
#include "tests/unit/sim/engine/engine_test_support.h"

namespace mpsim::engine {
namespace {

using testing::cluster_yaml;
using testing::model_yaml;
using testing::plan_yaml;

/// Draws from a fixed-seed engine with modulo only, so the cases are the same with any standard library.
class Draw {
 public:
  explicit Draw(std::uint64_t seed) : engine_(seed) {}
  int in(int lo, int hi) { return lo + static_cast<int>(engine_() % static_cast<std::uint64_t>(hi - lo + 1)); }
  template <class T>
  const T& one_of(const std::vector<T>& values) {
    return values[static_cast<std::size_t>(in(0, static_cast<int>(values.size()) - 1))];
  }

 private:
  std::mt19937_64 engine_;
};

struct Case {
  int nodes = 1;
  int gpus_per_node = 1;
  std::string intra_kind;
  int intra_gbps = 0;  ///< GB/s
  int inter_gbits = 0; ///< Gb/s
  int latency_us = 0;
  std::string model;
  std::string plan;

  [[nodiscard]] std::string cluster(int bandwidth_factor) const {
    std::string yaml = fmt::format(
        "cluster:\n  nodes: {}\n  gpus_per_node: {}\n  gpu: h100-sxm\n"
        "  intra_node: {{ kind: {}, bandwidth: \"{} GB/s\", latency: \"{} us\" }}\n",
        nodes, gpus_per_node, intra_kind, intra_gbps * bandwidth_factor, latency_us);
    if (nodes > 1) {
      yaml += fmt::format("  inter_node: {{ kind: infiniband, bandwidth: \"{} Gb/s\", latency: \"5 us\", nics_per_node: 2 }}\n",
                          inter_gbits * bandwidth_factor);
    }
    return yaml;
  }
  [[nodiscard]] std::string describe() const {
    return fmt::format("{}---\n{}\n---\n{}", cluster(1), model, plan);
  }
};

Case draw_case(Draw& draw) {
  Case c;
  c.nodes = draw.in(1, 2);
  c.gpus_per_node = draw.one_of<int>({2, 4, 8});
  c.intra_kind = draw.one_of<std::string>({"nvswitch", "pcie"});
  c.intra_gbps = draw.one_of<int>({16, 64, 450});
  c.inter_gbits = draw.one_of<int>({100, 400});
  c.latency_us = draw.in(0, 3);
  const int layers = draw.in(2, 12);
  const bool transformer = draw.in(0, 1) == 1;
  if (transformer) {
    c.model = fmt::format("model: {{ name: t, family: gpt, layers: {}, hidden: {}, heads: 8, seq_len: {}, vocab: 32000 }}\n",
                          layers, 256 * draw.in(2, 8), 512 * draw.in(1, 4));
  } else {
    c.model = fmt::format(
        "model:\n  name: timed\n  layers:\n    - {{ name: block, repeat: {}, forward_time: \"{} us\", backward_input_time: "
        "\"{} us\", backward_weight_time: \"{} us\", params: {}, activation_bytes: {}, output_bytes: {} }}\n",
        layers, draw.in(50, 3000), draw.in(50, 3000), draw.in(10, 2000), draw.in(0, 1) * 1000000 * draw.in(1, 50),
        draw.in(0, 1 << 24), draw.in(0, 1 << 24));
  }
  const int gpus = c.nodes * c.gpus_per_node;
  std::vector<int> pipelines;
  for (int p = 1; p <= gpus; p *= 2) pipelines.push_back(p);
  const int pipeline = draw.one_of(pipelines);
  const int tensor = transformer && gpus / pipeline >= 2 && draw.in(0, 1) == 1 ? 2 : 1;
  const int microbatches = draw.in(1, 3 * pipeline);
  const std::string schedule = draw.one_of<std::string>({"gpipe", "1f1b", "interleaved-1f1b", "zb-h1", "zb-h2",
                                                          "sagemaker-interleaved", "zb-v", "dualpipev", "zb-auto",
                                                          "v-half", "v-min"});
  const std::string virtual_stages = schedule == "interleaved-1f1b" ? ", virtual_stages: 2" : "";
  c.plan = fmt::format("parallelism: {{ tensor: {}, pipeline: {}{} }}\nbatch: {{ micro: 1, microbatches: {} }}\nschedule: {}\n",
                       tensor, pipeline, virtual_stages, microbatches, schedule);
  if (schedule == "zb-auto") c.plan += fmt::format("zb_memory_limit: {}\n", draw.in(1, 2 * pipeline));
  if (draw.in(0, 3) == 0) c.plan += "zero: 1\n";
  return c;
}

void expect_one_compute_at_a_time(const trace::Timeline& timeline, const std::string& where) {
  std::vector<std::vector<const trace::Span*>> by_lane(timeline.lanes.size());
  for (const trace::Span& s : timeline.spans) {
    if (trace::traits(s.kind).compute) by_lane[s.lane].push_back(&s);
  }
  for (std::size_t lane = 0; lane < by_lane.size(); ++lane) {
    auto& spans = by_lane[lane];
    std::sort(spans.begin(), spans.end(), [](const trace::Span* a, const trace::Span* b) { return a->start_ns < b->start_ns; });
    for (std::size_t i = 1; i < spans.size(); ++i) {
      ASSERT_LE(spans[i - 1]->end_ns, spans[i]->start_ns)
          << "two computes at once on " << timeline.lanes[lane].process << "/" << timeline.lanes[lane].thread << "\n"
          << where;
    }
  }
}

TEST(RandomPlans, EngineInvariantsHold) {
  Draw draw(20261126);
  int checked = 0;
  int replicated = 0;
  for (int attempt = 0; attempt < 1000 && checked < 200; ++attempt) {
    const Case c = draw_case(draw);
    const topology::Cluster cluster = cluster_yaml(c.cluster(1));
    const model::Model model = model_yaml(c.model);
    std::optional<plan::Plan> plan;
    try {
      plan = plan_yaml(c.plan, cluster, model);
    } catch (const InputError&) {
      continue;  // a combination the plan check refuses (too few layers for the stages, ...)
    }
    ++checked;
    const std::string where = c.describe();
    const CostModel costs = build_cost_model(cluster, model, *plan, plan::Layout(*plan));
    const schedule::Program program = build_program(model, *plan, costs, EngineOptions{});
    const auto error = schedule::validate(program);
    ASSERT_FALSE(error.has_value()) << error->message << "\n" << where;

    EngineOptions recorded;
    recorded.record_timeline = true;
    const Prediction base = simulate(cluster, model, *plan, recorded);
    expect_one_compute_at_a_time(base.timeline, where);

    if (plan->degrees[plan::Axis::Data] > 1) {
      ++replicated;
      EngineOptions full;
      full.fold_replicas = false;
      EXPECT_EQ(trace::report_json(simulate(cluster, model, *plan).report).dump(),
                trace::report_json(simulate(cluster, model, *plan, full).report).dump())
          << where;
    }

    const TimeNs step = TimeNs::seconds(base.report.step_time_s);
    EngineOptions limited;
    limited.step_limit = step;
    const Prediction at_step = simulate(cluster, model, *plan, limited);
    EXPECT_FALSE(at_step.exceeded_limit) << where;
    EXPECT_EQ(trace::report_json(at_step.report).dump(), trace::report_json(simulate(cluster, model, *plan).report).dump())
        << where;
    limited.step_limit = step - TimeNs::ns(1);
    EXPECT_TRUE(simulate(cluster, model, *plan, limited).exceeded_limit) << where;

    const topology::Cluster faster = cluster_yaml(c.cluster(2));
    const plan::Plan faster_plan = plan_yaml(c.plan, faster, model);
    EXPECT_LE(simulate(faster, model, faster_plan).report.step_time_s, base.report.step_time_s) << where;
  }
  EXPECT_EQ(checked, 200);
  EXPECT_GE(replicated, 50);
}

}  // namespace
}  // namespace mpsim::engine
