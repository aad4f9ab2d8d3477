// The planner end to end on small spaces: its answer is the one of simulating every candidate, whatever
// the thread count, and behaves sensibly when the cluster changes.
#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "planner/search.h"
#include "planner/thread_pool.h"
#include "sim/core/input_error.h"
#include "sim/plan/plan_check.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::ids;
using testing::shipped_model;
using testing::short_cluster;

/// One candidate of the planner's space and what the engine made of it.
struct Simulated {
  std::size_t id = 0;
  plan::PlanSpec spec;
  bool resolved = false;  ///< resolve_plan() accepted it
  bool fits = false;      ///< resolved, and its simulated step kept the reserve and the margin free on every GPU
  std::int64_t time_ns = 0;
  std::int64_t memory = 0;
};

std::string describe(const plan::PlanSpec& s) {
  return fmt::format("tensor {}, pipeline {}, data {}, virtual stages {}, micro batch {}, {}, {} recompute, zero {}, "
                     "placement {}, sequence parallel {}, overlap {}{}{}, partition [{}]",
                     s.degrees[plan::Axis::Tensor], s.degrees[plan::Axis::Pipeline],
                     s.written(plan::Axis::Data).value_or(1), s.virtual_stages, s.micro_batch,
                     plan::to_string(s.schedule), model::to_string(s.recompute), s.zero, plan::to_string(s.placement),
                     s.sequence_parallel ? "on" : "off", s.overlap_tensor_comm ? "t" : "-",
                     s.overlap_grad_reduce ? "g" : "-", s.overlap_param_gather ? "p" : "-",
                     fmt::join(s.partition, ", "));
}

/// The reference the planner's answer is checked against: every candidate of its space (its specs and
/// partitions, numbered as it numbers them) simulated by the engine, none left out for its memory
/// estimate or its step-time bound; the estimates prepare_candidates() computes are not read. Whether a
/// plan fits is the simulated report's call: no GPU out of memory, and none into the reserve or the
/// margin (usable_memory()). So an
/// estimate that wrongly prunes a plan shows up as a plan that fits here and that the planner never
/// simulated.
std::vector<Simulated> simulate_every_candidate(const topology::Cluster& cluster, const model::Model& model,
                                                const PlannerOptions& options) {
  const auto prepared = prepare_candidates(cluster, model, options);
  std::vector<Simulated> out(prepared.size());
  parallel_for(prepared.size(), 0, [&](std::size_t i) {
    Simulated& s = out[i];
    s.id = prepared[i].id;
    EXPECT_EQ(s.id, i) << "the reference is indexed by id";
    s.spec = prepared[i].spec;
    plan::Plan plan;
    try {
      plan = plan::resolve_plan(s.spec, cluster, model);
    } catch (const InputError&) {
      return;  // not a plan: fits nowhere
    }
    s.resolved = true;
    const trace::Report r = engine::simulate(cluster, model, plan).report;
    s.fits = !r.oom && std::all_of(r.devices.begin(), r.devices.end(), [&](const trace::DeviceReport& d) {
      return d.peak_memory_bytes <= usable_memory(Bytes::bytes(d.memory_capacity_bytes), options.memory_reserve,
                                                  options.memory_margin)
                                        .count();
    });
    s.time_ns = TimeNs::seconds(r.step_time_s).base();
    s.memory = r.peak_memory_bytes;
  });
  return out;
}

/// The candidates that fit, best first for `objective`: step time (speed), or peak memory then step
/// time (memory), ties by id, as the planner ranks.
std::vector<Simulated> fitting(const std::vector<Simulated>& all, plan::Objective objective) {
  std::vector<Simulated> out;
  std::copy_if(all.begin(), all.end(), std::back_inserter(out), [](const Simulated& s) { return s.fits; });
  std::sort(out.begin(), out.end(), [&](const Simulated& a, const Simulated& b) {
    if (objective == plan::Objective::Memory) {
      return std::tie(a.memory, a.time_ns, a.id) < std::tie(b.memory, b.time_ns, b.id);
    }
    return std::tie(a.time_ns, a.id) < std::tie(b.time_ns, b.id);
  });
  return out;
}

/// `result` (the planner run with `options`) against the reference: its top K are the K best plans the
/// engine says fit, in order, and its Pareto front is the front of all of those.
void expect_best_of_what_fits(const std::vector<Simulated>& reference, const PlannerResult& result,
                              const PlannerOptions& options, const std::string& name) {
  const auto fit = fitting(reference, options.space.objective);
  ASSERT_FALSE(fit.empty()) << name << ": the engine says no candidate fits";
  ASSERT_EQ(result.ranked.size(), std::min<std::size_t>(static_cast<std::size_t>(options.top), fit.size())) << name;
  for (std::size_t k = 0; k < result.ranked.size(); ++k) {
    EXPECT_EQ(result.ranked[k].id, fit[k].id)
        << name << " rank " << k << ": the planner has " << describe(reference.at(result.ranked[k].id).spec)
        << ", simulating every candidate gives " << describe(fit[k].spec) << " (" << fit[k].time_ns << " ns, "
        << fit[k].memory << " B)";
    EXPECT_EQ(TimeNs::seconds(result.ranked[k].report.step_time_s).base(), fit[k].time_ns) << name;
    EXPECT_EQ(result.ranked[k].report.peak_memory_bytes, fit[k].memory) << name;
  }
  // The front by its definition, pair by pair: no other plan at least as good on both axes and better
  // on one, nor an equal one with a lower id; by peak memory ascending.
  std::vector<Simulated> front;
  for (const Simulated& s : fit) {
    const bool beaten = std::any_of(fit.begin(), fit.end(), [&](const Simulated& o) {
      if (o.time_ns > s.time_ns || o.memory > s.memory) return false;
      return o.time_ns < s.time_ns || o.memory < s.memory || o.id < s.id;
    });
    if (!beaten) front.push_back(s);
  }
  std::sort(front.begin(), front.end(), [](const Simulated& a, const Simulated& b) { return a.memory < b.memory; });
  std::vector<std::size_t> front_ids;
  for (const Simulated& s : front) front_ids.push_back(s.id);
  EXPECT_EQ(ids(result.pareto), front_ids) << name;
}

/// With a front tolerance (`--pareto near`): every plan that fits has one on the front that needs no more
/// memory and is at most the tolerance slower; the front's plans are plans that fit, with their
/// simulated step, none beaten by another; and it needed no more simulations than the exact front.
void expect_front_covers(const std::vector<Simulated>& reference, const PlannerResult& near,
                         const PlannerResult& exact, double tolerance, const std::string& name) {
  const auto fit = fitting(reference, plan::Objective::Speed);
  std::map<std::size_t, Simulated> by_id;
  for (const Simulated& s : fit) by_id.emplace(s.id, s);
  for (const Evaluated& e : near.pareto) {
    ASSERT_TRUE(by_id.contains(e.id)) << name << ": front plan " << e.id << " is not one that fits";
    EXPECT_EQ(TimeNs::seconds(e.report.step_time_s).base(), by_id.at(e.id).time_ns) << name;
    for (const Evaluated& o : near.pareto) {
      EXPECT_FALSE(o.id != e.id && o.report.peak_memory_bytes <= e.report.peak_memory_bytes &&
                   o.report.step_time_s < e.report.step_time_s)
          << name << ": front plan " << e.id << " is beaten by front plan " << o.id;
    }
  }
  for (const Simulated& s : fit) {
    const bool covered = std::any_of(near.pareto.begin(), near.pareto.end(), [&](const Evaluated& f) {
      return f.report.peak_memory_bytes <= s.memory &&
             static_cast<double>(TimeNs::seconds(f.report.step_time_s).base()) <=
                 (1 + tolerance) * static_cast<double>(s.time_ns);
    });
    EXPECT_TRUE(covered) << name << ": nothing on the front covers " << describe(s.spec) << " (" << s.time_ns
                         << " ns, " << s.memory << " B)";
  }
  EXPECT_LE(near.stats.evaluated, exact.stats.evaluated) << name;
  EXPECT_EQ(ids(near.ranked), ids(exact.ranked)) << name << ": the ranking is exact either way";
}

/// The planner without bound pruning simulates every candidate its memory estimate keeps, and keeps
/// those that fit once simulated: each candidate it leaves out was pruned as not fitting, which the
/// engine must confirm. Names every plan that fits and was pruned.
void expect_nothing_that_fits_pruned(const topology::Cluster& cluster, const model::Model& model,
                                     PlannerOptions options, const std::vector<Simulated>& reference,
                                     const std::string& name) {
  options.bound_pruning = false;
  options.exact_pareto = false;
  const PlannerResult r = run_planner(cluster, model, options);
  const auto kept_ids = ids(r.evaluated);
  const std::set<std::size_t> kept(kept_ids.begin(), kept_ids.end());
  const std::int64_t usable = usable_memory(gpu_capacity(cluster), options.memory_reserve, options.memory_margin).count();
  std::size_t misfits = 0;
  std::size_t wrongly_pruned = 0;
  constexpr std::size_t kNamed = 10;  // a broken estimate may prune hundreds: name the first few
  for (const Simulated& s : reference) {
    if (s.fits && !kept.contains(s.id) && ++wrongly_pruned <= kNamed) {
      ADD_FAILURE() << name << ": candidate " << s.id << " (" << describe(s.spec) << ") was pruned as not fitting, "
                    << "but the engine runs it at a peak of " << s.memory << " B of the " << usable << " B usable";
    }
    if (!s.fits && kept.contains(s.id)) {
      ADD_FAILURE() << name << ": candidate " << s.id << " (" << describe(s.spec) << ") is among the planner's plans, "
                    << "but the engine says it does not fit (peak " << s.memory << " B)";
    }
    if (!s.fits) ++misfits;
  }
  EXPECT_EQ(wrongly_pruned, 0U) << name << ": plans that fit, pruned as not fitting (the first " << kNamed
                                << " named above)";
  EXPECT_EQ(r.stats.pruned_memory + r.stats.pruned_invalid, misfits) << name;
  EXPECT_EQ(r.stats.pruned_bound, 0U) << name;
}

struct SearchCase {
  std::string name;
  topology::Cluster cluster;
  model::Model model;
  int global_batch;
  std::vector<model::Recompute> recompute{model::Recompute::None, model::Recompute::Selective, model::Recompute::Full};
};

std::vector<SearchCase> small_cases() {
  std::vector<SearchCase> out;
  out.push_back({"2x4 A100 IB, gpt3-1.3b", short_cluster(2, 4), shipped_model("gpt3-1.3b"), 16});
  out.push_back({"2x2 A100 slow IB, bert-large", short_cluster(2, 2, "a100-80gb", "10 Gb/s"), shipped_model("bert-large"),
                 32});
  out.push_back({"pcie box of 8, timed layers", engine::testing::pcie_box(8, "8 GB/s", "5 us"),
                 engine::testing::timed_layers(8, "4 ms", "4 ms", "3 ms", 4'000'000, 50'000'000), 16});
  out.push_back({"4x4 A100-40GB, gpt3-1.3b", short_cluster(4, 4, "a100-40gb", "100 Gb/s"), shipped_model("gpt3-1.3b"),
                 16, {model::Recompute::None, model::Recompute::Full}});
  // GPUs small enough that memory decides: plans fit with a few per cent to spare, others do not.
  out.push_back({"2x4 A100-16GiB, gpt3-1.3b", short_cluster(2, 4, testing::a100_with_memory("16 GiB")),
                 shipped_model("gpt3-1.3b"), 16});
  // Two GPU kinds: the bounds take each unit at its stage's kind (or the fastest), and the partitions
  // are weighed by the stages' kinds.
  out.push_back({"4 H100 + 4 A100, gpt3-1.3b", testing::mixed_cluster(), shipped_model("gpt3-1.3b"), 16});
  return out;
}

/// One test per case of small_cases(), so that they run in parallel (each simulates every candidate).
class BestIsTheExhaustiveBest : public ::testing::TestWithParam<std::size_t> {};

TEST_P(BestIsTheExhaustiveBest, TopKAndParetoFront) {
  const SearchCase c = std::move(small_cases().at(GetParam()));
  PlannerOptions options;
  options.space.global_batch = c.global_batch;
  options.space.recompute = c.recompute;
  // Every axis, in part: ZeRO without and with per-layer gathers, sequence parallelism where it
  // applies (the reference simulates every candidate, so the space stays small).
  options.space.zero = {0, 3};
  options.space.sequence_parallel = {true};
  options.top = 5;
  const auto reference = simulate_every_candidate(c.cluster, c.model, options);
  const PlannerResult result = run_planner(c.cluster, c.model, options);
  expect_best_of_what_fits(reference, result, options, c.name);
  expect_nothing_that_fits_pruned(c.cluster, c.model, options, reference, c.name);
  PlannerOptions near = options;
  near.pareto_tolerance = kNearParetoTolerance;
  expect_front_covers(reference, run_planner(c.cluster, c.model, near), result, near.pareto_tolerance, c.name);
  // Branch and bound did prune.
  const std::size_t fit = fitting(reference, options.space.objective).size();
  EXPECT_LT(result.stats.evaluated, fit) << c.name;
  EXPECT_EQ(result.stats.evaluated + result.stats.pruned(), result.stats.candidates) << c.name;
  EXPECT_EQ(result.stats.candidates, reference.size()) << c.name;
  std::printf("%s: %zu candidates, %zu fit, %zu simulated, best %.4f s\n", c.name.c_str(), result.stats.candidates, fit,
              result.stats.evaluated, result.ranked.empty() ? 0.0 : result.ranked.front().report.step_time_s);
}

INSTANTIATE_TEST_SUITE_P(Planner, BestIsTheExhaustiveBest, ::testing::Range<std::size_t>(0, 6));
TEST(Planner, AMixedClusterPlansAtLeastAsFastAsItsFasterKindAlone) {
  PlannerOptions options;
  options.space.global_batch = 16;
  options.top = 1;
  const model::Model model = shipped_model("gpt3-1.3b");
  const PlannerResult mixed = run_planner(testing::mixed_cluster(), model, options);
  const PlannerResult h100 = run_planner(testing::mixed_cluster(false), model, options);
  ASSERT_FALSE(mixed.ranked.empty());
  ASSERT_FALSE(h100.ranked.empty());
  EXPECT_LE(mixed.ranked.front().report.step_time_s, h100.ranked.front().report.step_time_s);
}

TEST(Planner, TwoStagesOnTwoKindsSplitTheLayersByTheKindsSpeeds) {
  // Pipeline 2, tensor 4, data 1: stage 0 on the H100 node, stage 1 on the A100 node (Megatron's
  // placement puts the pipeline outermost). gpt3-1.3b's 24 blocks cost about 989 / 312 = 3.2 times
  // as much on an A100 (bf16 peaks), so the balanced split gives the H100 stage about 24 x 3.2 / 4.2
  // = 18 of them, where an even split gives 12 each.
  PlannerOptions options;
  options.space.global_batch = 16;
  options.space.only_degrees = {{plan::Axis::Pipeline, {2}}, {plan::Axis::Tensor, {4}}};
  options.space.schedules = {plan::ScheduleKind::OneFOneB};
  options.space.recompute = {model::Recompute::None};
  options.top = 1;
  const model::Model model = shipped_model("gpt3-1.3b");
  const PlannerResult r = run_planner(testing::mixed_cluster(), model, options);
  ASSERT_FALSE(r.ranked.empty());
  const plan::Plan& best = r.ranked.front().plan;
  ASSERT_EQ(best.partition.size(), 3U);
  const int h100_blocks = best.partition[1];
  const int a100_blocks = best.partition[2] - best.partition[1];
  EXPECT_GE(h100_blocks, 16);
  EXPECT_LE(h100_blocks, 19);
  // The two stages' busy times, each at its own kind's speed, within a block's time of each other
  // (the split is in whole blocks): at most 1 / 6 of the slower stage here.
  const auto& devices = r.ranked.front().report.devices;
  const double first = devices.front().busy_s;
  const double last = devices.back().busy_s;
  EXPECT_LT(std::abs(first - last) / std::max(first, last), 1.0 / 6) << h100_blocks << " / " << a100_blocks;
}

TEST(Planner, APlanWhoseStageSpansTwoKindsInAReplicaIsRefusedAtItsPlacement) {
  plan::PlanSpec spec;  // tensor 4 x context 2 over both nodes: the one replica's one stage holds H100s and A100s
  spec.write(plan::Axis::Tensor, 4);
  spec.write(plan::Axis::Context, 2);
  spec.write(plan::Axis::Pipeline, 1);
  spec.global_batch = 16;
  try {
    (void)plan::resolve_plan(spec, testing::mixed_cluster(), shipped_model("gpt3-1.3b"));
    ADD_FAILURE() << "resolved";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("pipeline stage 0 would run on h100-sxm (node0/gpu0) and a100-80gb (node1/gpu0) in one "
                           "data-parallel replica"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("field 'placement'"), std::string::npos) << message;
  }
  spec.write(plan::Axis::Pipeline, 2);  // one stage per node
  spec.write(plan::Axis::Context, 1);
  EXPECT_NO_THROW((void)plan::resolve_plan(spec, testing::mixed_cluster(), shipped_model("gpt3-1.3b")));
  // Data 8 over both nodes: each replica (one GPU) is of one kind, the replicas of two.
  spec.write(plan::Axis::Tensor, 1);
  spec.write(plan::Axis::Pipeline, 1);
  EXPECT_NO_THROW((void)plan::resolve_plan(spec, testing::mixed_cluster(), shipped_model("gpt3-1.3b")));
}

TEST(Planner, EverySmallCaseHasItsExhaustiveTest) { EXPECT_EQ(small_cases().size(), 6U); }

// The progress a long search shows: first the candidates being estimated, then every committed
// simulation in order, each with the best step so far, which only improves.
TEST(Planner, ReportsItsProgressInOrder) {
  const SearchCase c = small_cases().front();
  PlannerOptions options;
  options.space.global_batch = c.global_batch;
  std::vector<SearchProgress> seen;
  options.on_progress = [&](const SearchProgress& p) { seen.push_back(p); };
  const PlannerResult result = run_planner(c.cluster, c.model, options);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_FALSE(seen.front().simulating);
  EXPECT_GT(seen.front().candidates, 0u);
  EXPECT_LE(seen.front().candidates, result.stats.candidates) << "specs, before their partitions";
  for (std::size_t i = 1; i < seen.size(); ++i) {
    EXPECT_TRUE(seen[i].simulating);
    EXPECT_EQ(seen[i].candidates, result.stats.candidates);
    EXPECT_GT(seen[i].evaluated, seen[i - 1].evaluated);
    if (i > 1) {
      EXPECT_LE(seen[i].best_step_time_s, seen[i - 1].best_step_time_s);
    }
  }
  EXPECT_LE(seen.back().evaluated, result.stats.evaluated);
  EXPECT_EQ(seen.back().best_step_time_s, result.ranked.front().report.step_time_s);
}

// With the near front too: its workers stop simulations at limits read ahead of the commits.
TEST(Planner, SameAnswerWhateverTheThreadCount) {
  const SearchCase c = small_cases().front();
  for (const double tolerance : {0.0, kNearParetoTolerance}) {
    PlannerOptions options;
    options.space.global_batch = c.global_batch;
    options.pareto_tolerance = tolerance;
    options.threads = 1;
    const PlannerResult one = run_planner(c.cluster, c.model, options);
    options.threads = 4;
    const PlannerResult four = run_planner(c.cluster, c.model, options);
    EXPECT_EQ(ids(one.ranked), ids(four.ranked)) << tolerance;
    EXPECT_EQ(ids(one.pareto), ids(four.pareto)) << tolerance;
    EXPECT_EQ(ids(one.evaluated), ids(four.evaluated)) << tolerance;
    EXPECT_EQ(one.stats.evaluated, four.stats.evaluated) << tolerance;
    EXPECT_EQ(one.stats.pruned_bound, four.stats.pruned_bound) << tolerance;
    EXPECT_EQ(one.stats.pruned_memory, four.stats.pruned_memory) << tolerance;
    for (std::size_t k = 0; k < one.ranked.size(); ++k) {
      EXPECT_EQ(one.ranked[k].report.step_time_s, four.ranked[k].report.step_time_s);
      EXPECT_EQ(one.ranked[k].plan, four.ranked[k].plan);
    }
  }
}

TEST(Planner, MemoryObjectiveMinimisesPeakMemory) {
  const SearchCase c = small_cases().front();
  PlannerOptions options;
  options.space.global_batch = c.global_batch;
  options.space.objective = plan::Objective::Memory;
  options.space.schedules = {plan::ScheduleKind::OneFOneB, plan::ScheduleKind::Interleaved1F1B, plan::ScheduleKind::ZbH2};
  options.space.overlap = {false};  // overlap changes no memory: the reference simulates half as many
  options.top = 3;
  const auto reference = simulate_every_candidate(c.cluster, c.model, options);
  const PlannerResult result = run_planner(c.cluster, c.model, options);
  expect_best_of_what_fits(reference, result, options, c.name);
  ASSERT_FALSE(result.ranked.empty());
  EXPECT_EQ(result.ranked.front().plan.optimize, plan::Objective::Memory);
}

/// A space small enough to write out: 4 GPUs on PCIe (tensor 1: no NVLink domain), 8 profiled layers
/// with parameters and activations, and GPUs small enough that memory decides between plans. The
/// candidates are the cross product of the options, written here rather than taken from the planner's
/// enumeration, so that a plan the enumeration drops is caught as well as one the memory filter prunes.
TEST(Planner, TightMemoryAgainstAnEnumerationOfItsOwn) {
  const auto cluster = engine::testing::cluster_yaml(fmt::format(
      "cluster: {{ gpus_per_node: 4, gpu: {}, "
      "intra_node: {{ kind: pcie, bandwidth: \"16 GB/s\", latency: \"5 us\" }} }}\n",
      testing::a100_with_memory("6 GiB")));
  const auto model = engine::testing::model_yaml(
      "model:\n  name: tight\n  layers:\n"
      "    - { name: block, repeat: 8, forward_time: \"2 ms\", backward_input_time: \"2 ms\", "
      "backward_weight_time: \"2 ms\", params: 50000000, activation_bytes: 100000000, output_bytes: 4000000 }\n");
  constexpr int kGlobalBatch = 16;
  PlannerOptions options;
  options.space.global_batch = kGlobalBatch;
  options.space.schedules = {plan::ScheduleKind::GPipe, plan::ScheduleKind::OneFOneB, plan::ScheduleKind::ZbH2};
  options.space.recompute = {model::Recompute::None};
  options.space.zero = {0, 1};
  options.space.placements = {plan::kMegatronPlacement};
  options.space.sequence_parallel = {false};
  options.space.overlap = {false};
  options.top = 5;

  // (tensor, pipeline, data, micro batch, schedule, ZeRO): pipeline p of the 4 GPUs, data d = 4 / p,
  // micro batches the powers of two dividing B / d, ZeRO 1 only where there are replicas to shard over.
  using Key = std::tuple<int, int, int, int, int, int>;
  std::set<Key> expected;
  for (const int p : {1, 2, 4}) {
    const int d = 4 / p;
    for (int b = 1; (kGlobalBatch / d) % b == 0; b *= 2) {
      for (const plan::ScheduleKind schedule : options.space.schedules) {
        for (const int zero : options.space.zero) {
          if (zero == 0 || d > 1) expected.insert({1, p, d, b, static_cast<int>(schedule), zero});
        }
      }
    }
  }
  const auto reference = simulate_every_candidate(cluster, model, options);
  std::set<Key> enumerated;
  for (const Simulated& s : reference) {
    const plan::PlanSpec& x = s.spec;
    enumerated.insert({x.degrees[plan::Axis::Tensor], x.degrees[plan::Axis::Pipeline],
                       x.written(plan::Axis::Data).value_or(1), x.micro_batch, static_cast<int>(x.schedule), x.zero});
    EXPECT_TRUE(s.resolved) << describe(x);
  }
  EXPECT_EQ(enumerated, expected);
  // Identical layers: the balanced partition is the even one, so one candidate per spec.
  EXPECT_EQ(reference.size(), expected.size());

  const std::string name = "4 PCIe GPUs of 6 GiB";
  const PlannerResult result = run_planner(cluster, model, options);
  expect_best_of_what_fits(reference, result, options, name);
  expect_nothing_that_fits_pruned(cluster, model, options, reference, name);
  // Memory decides: some candidates fit and some do not.
  const std::size_t fit = fitting(reference, options.space.objective).size();
  EXPECT_GT(fit, 0U);
  EXPECT_LT(fit, reference.size());
  std::printf("%s: %zu candidates, %zu fit, %zu simulated\n", name.c_str(), reference.size(), fit,
              result.stats.evaluated);
}

TEST(Planner, SlowerNetworkNeverGivesAFasterBest) {
  const auto model = shipped_model("gpt3-1.3b");
  PlannerOptions options;
  options.space.global_batch = 16;
  options.exact_pareto = false;
  double previous = 0;
  for (const char* bandwidth : {"400 Gb/s", "200 Gb/s", "100 Gb/s", "50 Gb/s"}) {
    const PlannerResult r = run_planner(short_cluster(2, 4, "a100-80gb", bandwidth), model, options);
    ASSERT_FALSE(r.ranked.empty());
    EXPECT_GE(r.ranked.front().report.step_time_s, previous) << bandwidth;
    previous = r.ranked.front().report.step_time_s;
  }
}

TEST(Planner, AttentionKernelGenerationReachesEveryPlanAndItsCost) {
  // 16k tokens: attention is a large share of the step, and FA2 runs it at 0.346 of H100's peak
  // against FA3's 0.452, so the best FA2 plan is slower than the best FA3 plan.
  const auto model = testing::long_sequence();
  PlannerOptions options;
  options.space.global_batch = 8;
  options.exact_pareto = false;
  options.top = 3;
  double best[2] = {0, 0};
  int i = 0;
  for (const topology::AttentionGeneration generation : {topology::AttentionGeneration::Fa2,
                                                         topology::AttentionGeneration::Fa3}) {
    options.space.attention_kernel = generation;
    const PlannerResult r = run_planner(short_cluster(1, 8, "h100-sxm"), model, options);
    ASSERT_FALSE(r.ranked.empty());
    for (const auto& e : r.ranked) {
      EXPECT_EQ(e.plan.attention_kernel, generation);
      EXPECT_EQ(e.report.plan.attention_kernel, topology::to_string(generation));
    }
    best[i++] = r.ranked.front().report.step_time_s;
  }
  EXPECT_GT(best[0], best[1] * 1.02);
}

TEST(Planner, MoreMemoryNeverGivesASlowerBest) {
  const auto model = shipped_model("gpt3-1.3b");
  PlannerOptions options;
  options.space.global_batch = 32;
  options.exact_pareto = false;
  double previous = 0;
  bool first = true;
  for (const char* memory : {"12 GiB", "16 GiB", "24 GiB", "40 GiB", "80 GiB"}) {
    const PlannerResult r = run_planner(short_cluster(2, 4, testing::a100_with_memory(memory)), model, options);
    ASSERT_FALSE(r.ranked.empty()) << memory << ": " << r.infeasible;
    if (!first) {
      EXPECT_LE(r.ranked.front().report.step_time_s, previous) << memory;
    }
    previous = r.ranked.front().report.step_time_s;
    first = false;
  }
}

TEST(Planner, ASmallModelOnAFastNetworkGetsPureDataParallelism) {
  for (const char* name : {"bert-large", "gpt3-1.3b"}) {
    PlannerOptions options;
    options.space.global_batch = 64;
    options.exact_pareto = false;
    const PlannerResult r = run_planner(testing::fast_cluster(), shipped_model(name), options);
    ASSERT_FALSE(r.ranked.empty()) << name;
    const plan::Plan& best = r.ranked.front().plan;
    EXPECT_EQ(best.degrees[plan::Axis::Tensor], 1) << name;
    EXPECT_EQ(best.degrees[plan::Axis::Pipeline], 1) << name;
    EXPECT_EQ(best.degrees[plan::Axis::Data], 8) << name;
  }
}

TEST(Planner, SaysWhyNothingFits) {
  PlannerOptions options;
  options.space.global_batch = 8;
  const PlannerResult r = run_planner(short_cluster(1, 8), shipped_model("gpt3-175b"), options);
  EXPECT_TRUE(r.ranked.empty());
  EXPECT_NE(r.infeasible.find("gpt3-175b needs at least"), std::string::npos) << r.infeasible;
  // What a GPU may hold: its 80 GiB less the default memory margin.
  EXPECT_NE(r.infeasible.find("8 x 67.2 GiB (80 GiB less a 16% margin) available"), std::string::npos) << r.infeasible;

  // Enough memory in total, but no split fits: one layer of 10 G parameters needs 90 GB with ZeRO 1
  // over four replicas, and without tensor parallelism (no NVLink) it cannot be cut.
  const auto lopsided = engine::testing::model_yaml(
      "model:\n  name: lopsided\n  layers:\n"
      "    - { name: huge, forward_time: \"1 ms\", backward_time: \"2 ms\", params: 10000000000 }\n"
      "    - { name: small, repeat: 3, forward_time: \"1 ms\", backward_time: \"2 ms\", params: 1000 }\n");
  options.space.zero = {0, 1};  // ZeRO 3 would shard the layer itself
  const PlannerResult tight = run_planner(engine::testing::pcie_box(4), lopsided, options);
  EXPECT_TRUE(tight.ranked.empty());
  EXPECT_NE(tight.infeasible.find("no plan fits in memory"), std::string::npos) << tight.infeasible;
}

// The reserve and, on top of it, the default margin (memory_margin.h) are kept free: every plan
// simulated for the ranking peaks at most (capacity - reserve) x (1 - margin).
TEST(Planner, ReserveAndMarginAreKeptFree) {
  const SearchCase c = small_cases().front();
  PlannerOptions options;
  options.space.global_batch = c.global_batch;
  options.memory_reserve = Bytes::gib(70);
  const PlannerResult r = run_planner(c.cluster, c.model, options);
  ASSERT_FALSE(r.ranked.empty());
  EXPECT_EQ(r.usable, usable_memory(gpu_capacity(c.cluster), Bytes::gib(70), kDefaultMemoryMargin));
  for (const Evaluated& e : r.evaluated) {
    EXPECT_LE(e.report.peak_memory_bytes, Bytes::gib(10).count());
    EXPECT_LE(e.report.peak_memory_bytes, r.usable.count());
  }
}

// A plan whose peak fits the memory only without the margin is not ranked, even when it is the fastest:
// it is the result's within_margin plan, and ranks before #1. The reserve is set so that the fastest
// plan without a margin peaks exactly at capacity - reserve, inside the default margin.
TEST(Planner, PlanWithinTheMarginIsNotRankedButReported) {
  const SearchCase c = small_cases().front();
  PlannerOptions options;
  options.space.global_batch = c.global_batch;
  options.memory_margin = 0;
  const PlannerResult unguarded = run_planner(c.cluster, c.model, options);
  ASSERT_FALSE(unguarded.ranked.empty());
  const Evaluated& fastest = unguarded.ranked.front();
  options.memory_margin = kDefaultMemoryMargin;
  options.memory_reserve = gpu_capacity(c.cluster) - Bytes::bytes(fastest.report.peak_memory_bytes);
  const PlannerResult guarded = run_planner(c.cluster, c.model, options);
  ASSERT_FALSE(guarded.ranked.empty()) << "no plan fits the margin: pick a case with leaner plans";
  for (const Evaluated& e : guarded.ranked) {
    EXPECT_NE(e.id, fastest.id);
    EXPECT_LE(e.report.peak_memory_bytes, guarded.usable.count());
  }
  ASSERT_TRUE(guarded.within_margin.has_value());
  EXPECT_EQ(guarded.within_margin->id, fastest.id);
  EXPECT_GT(guarded.within_margin->report.peak_memory_bytes, guarded.usable.count());
  EXPECT_TRUE(ranks_before(options.space.objective, *guarded.within_margin, guarded.ranked.front()));
  EXPECT_GE(guarded.stats.within_margin, 1U);
  EXPECT_LE(guarded.stats.within_margin, guarded.stats.pruned_memory);
}

}  // namespace
}  // namespace mpsim::planner
