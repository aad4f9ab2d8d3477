// plan --catalog: the instance counts tried, the choice under a deadline or a budget worked out by hand,
// the frontier, and the acceptance test: on a catalogue of three instance types with their list prices,
// the choice is the cheapest (the fastest within a budget, the cheapest by a deadline) of simulating every
// candidate plan of every instance type at every count.
#include "planner/catalog_search.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <string>

#include "planner/memory_margin.h"
#include "planner/thread_pool.h"
#include "sim/core/input_error.h"
#include "tests/unit/planner/catalog_test_support.h"
#include "sim/engine/simulator.h"
#include "sim/engine/training_step.h"
#include "sim/plan/plan_check.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

namespace fs = std::filesystem;

TEST(CatalogSearch, InstanceCountsArePowersOfTwoAndAllAvailable) {
  EXPECT_EQ(instance_counts(1), (std::vector<int>{1}));
  EXPECT_EQ(instance_counts(2), (std::vector<int>{1, 2}));
  EXPECT_EQ(instance_counts(3), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(instance_counts(4), (std::vector<int>{1, 2, 4}));
  EXPECT_EQ(instance_counts(12), (std::vector<int>{1, 2, 4, 8, 12}));
  // Fixed counts: those within what is available, in order, each once.
  EXPECT_EQ(instance_counts(12, {6, 3, 16, 3}), (std::vector<int>{3, 6}));
  EXPECT_TRUE(instance_counts(2, {3, 6}).empty());
}

/// An offer whose run costs `cost` and takes `days`.
CatalogOffer offer(double cost, double days) {
  CatalogOffer o;
  o.job.run = training::TrainingEstimate{};
  o.job.run->cost = cost;
  o.job.run->wall_time = TimeNs::seconds(days * 86400);
  return o;
}

TimeNs days(double d) { return TimeNs::seconds(d * 86400); }

// Five runs (cost, days): A (100, 10), B (150, 5), C (300, 2), D (200, 6), and E without a plan.
// D is beaten by B on both, so the frontier is A, B, C.
const std::vector<CatalogOffer>& five() {
  static const std::vector<CatalogOffer> offers = [] {
    std::vector<CatalogOffer> o{offer(100, 10), offer(150, 5), offer(300, 2), offer(200, 6), CatalogOffer{}};
    return o;
  }();
  return offers;
}

TEST(CatalogSearch, WithoutLimitsTheCheapest) { EXPECT_EQ(choose_offer(five(), {}), 0U); }

TEST(CatalogSearch, ADeadlineThatRulesOutTheCheapest) {
  // By 7 days A (10 days) is out; of B (150), D (200) and C (300), B is the cheapest.
  EXPECT_EQ(choose_offer(five(), {days(7), std::nullopt}), 1U);
  // By 3 days only C (2 days) ends in time.
  EXPECT_EQ(choose_offer(five(), {days(3), std::nullopt}), 2U);
  // Ending on the deadline is in time: by 10 days A is back.
  EXPECT_EQ(choose_offer(five(), {days(10), std::nullopt}), 0U);
  // Nothing ends within a day.
  EXPECT_EQ(choose_offer(five(), {days(1), std::nullopt}), std::nullopt);
}

TEST(CatalogSearch, ABudgetThatAdmitsOnlySome) {
  // 250 admits A (100), B (150) and D (200); the fastest of them is B (5 days).
  EXPECT_EQ(choose_offer(five(), {std::nullopt, 250.0}), 1U);
  // 300 admits C too, the fastest of all.
  EXPECT_EQ(choose_offer(five(), {std::nullopt, 300.0}), 2U);
  // 149 admits A alone; 99 nothing.
  EXPECT_EQ(choose_offer(five(), {std::nullopt, 149.0}), 0U);
  EXPECT_EQ(choose_offer(five(), {std::nullopt, 99.0}), std::nullopt);
}

TEST(CatalogSearch, TiesGoToTheFasterOrCheaperThenTheFirst) {
  // Same cost: the faster; same time within a budget: the cheaper; the same point twice: the first.
  EXPECT_EQ(choose_offer({offer(100, 8), offer(100, 6)}, {}), 1U);
  EXPECT_EQ(choose_offer({offer(120, 6), offer(100, 6)}, {std::nullopt, 500.0}), 1U);
  EXPECT_EQ(choose_offer({offer(100, 6), offer(100, 6)}, {}), 0U);
  EXPECT_EQ(choose_offer({offer(100, 6), offer(100, 6)}, {std::nullopt, 500.0}), 0U);
}

TEST(CatalogSearch, TheFrontierIsTheRunsNoneBeatsOnBoth) {
  EXPECT_EQ(cost_time_frontier(five()), (std::vector<std::size_t>{0, 1, 2}));
  // A point equal to one before it is not listed twice; one cheaper at the same time replaces it.
  std::vector<CatalogOffer> more = five();
  more.push_back(offer(150, 5));
  EXPECT_EQ(cost_time_frontier(more), (std::vector<std::size_t>{0, 1, 2}));
  more.push_back(offer(140, 5));
  EXPECT_EQ(cost_time_frontier(more), (std::vector<std::size_t>{0, 6, 2}));
}

// ---- the acceptance: the choice against simulating everything --------------------------------------

using testing::TempDir;

/// Three AWS instance types on their shipped node files at the list prices of configs/catalogs/aws-gpu.yaml
/// (sourced there), few enough of each that the counts the search tries are every count: 1..available.
constexpr const char* kThreeTypes =
    "instances:\n"
    "  - { name: p5.48xlarge, node_from: p5.48xlarge.yaml, price_per_hour: \"55.04 USD\", available: 2 }\n"
    "  - { name: p4d.24xlarge, node_from: p4d.24xlarge.yaml, price_per_hour: \"21.957642 USD\", available: 3 }\n"
    "  - { name: p3.16xlarge, node_from: p3.16xlarge.yaml, price_per_hour: \"24.48 USD\", available: 2 }\n";

/// A small GPT whose plans simulate in milliseconds.
model::Model small_gpt() {
  return testing::model_yaml("model: { name: small-gpt, family: gpt, layers: 4, hidden: 1024, heads: 16, seq_len: 1024, "
                             "vocab: 32000 }\n");
}

PlannerOptions small_space() {
  PlannerOptions options;
  options.space.global_batch = 32;
  options.space.schedules = {plan::ScheduleKind::OneFOneB};
  options.space.recompute = {model::Recompute::None};
  options.exact_pareto = false;
  options.top = 1;
  return options;
}

/// One plan of the reference: its instance type and count, step and run.
struct PlanRun {
  std::size_t instance = 0;
  int count = 0;
  double step_s = 0;
  double cost = 0;
  TimeNs wall;
};

/// Every candidate plan of `options`' space (the planner's enumeration: specs and partitions) on every
/// instance type at every count from 1 to its `available`, simulated by the engine with nothing pruned
/// by an estimate or a bound; the plans whose simulated peak fits the usable memory, each with its run
/// priced at the catalogue's price (training::estimate_request, as any --tokens run).
/// Every candidate plan of `options`' space on `cluster` (the planner's enumeration: specs and partitions),
/// simulated by the engine with nothing pruned by an estimate or a bound; the plans whose simulated peak
/// fits the usable memory, each with its run priced at `priced` (training::estimate_request, as any
/// --tokens run), added to `out` as runs of `instance` x `count`.
void add_plan_runs(const topology::Cluster& cluster, const model::Model& model, const PlannerOptions& options,
                   const training::TrainingRequest& priced, std::size_t instance, int count, std::vector<PlanRun>& out) {
  std::mutex guard;
  const auto prepared = prepare_candidates(cluster, model, options);
  parallel_for(prepared.size(), 0, [&](std::size_t i) {
    plan::Plan plan;
    try {
      plan = plan::resolve_plan(prepared[i].spec, cluster, model);
    } catch (const InputError&) {
      return;  // not a plan
    }
    const trace::Report r = engine::simulate(cluster, model, plan).report;
    const bool fits = !r.oom && std::all_of(r.devices.begin(), r.devices.end(), [&](const trace::DeviceReport& d) {
      return d.peak_memory_bytes <=
             usable_memory(Bytes::bytes(d.memory_capacity_bytes), options.memory_reserve, options.memory_margin).count();
    });
    if (!fits) return;
    const auto run = training::estimate_request(priced, engine::training_step(cluster, model, plan, r));
    const std::lock_guard lock(guard);
    out.push_back({instance, count, r.step_time_s, *run->cost, run->wall_time});
  });
}

/// add_plan_runs() on every instance type at every count from 1 to its `available`.
std::vector<PlanRun> every_plan_run(const Catalog& catalog, const model::Model& model, const PlannerOptions& options,
                                    const training::TrainingRequest& request) {
  std::vector<PlanRun> out;
  for (std::size_t t = 0; t < catalog.instances.size(); ++t) {
    const CatalogInstance& instance = catalog.instances[t];
    training::TrainingRequest priced = request;
    priced.gpu_hour_price = instance.price_per_hour / instance.gpus_per_instance;
    for (int count = 1; count <= instance.available; ++count) {
      add_plan_runs(instance_cluster(instance, count), model, options, priced, t, count, out);
    }
  }
  return out;
}

/// The reference's choice: its cost and wall time (or nothing), by the rule the search follows.
std::optional<PlanRun> best_of(const std::vector<PlanRun>& runs, const CatalogLimits& limits) {
  std::optional<PlanRun> best;
  for (const PlanRun& r : runs) {
    if ((limits.deadline && r.wall > *limits.deadline) || (limits.budget && r.cost > *limits.budget)) continue;
    const bool better = !best || (limits.budget ? std::tuple(r.wall, r.cost) < std::tuple(best->wall, best->cost)
                                                : std::tuple(r.cost, r.wall) < std::tuple(best->cost, best->wall));
    if (better) best = r;
  }
  return best;
}

class CatalogAcceptance : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    const TempDir dir;
    catalog_ = new Catalog(load_catalog_file(dir.write("three.yaml", kThreeTypes),
                                             {fs::path(MPSIM_SOURCE_DIR) / "topologies"}));
    request_.tokens = "20B";
    model_ = new model::Model(small_gpt());
    reference_ = new std::vector<PlanRun>(every_plan_run(*catalog_, *model_, small_space(), request_));
  }
  static void TearDownTestSuite() {
    delete catalog_;
    delete model_;
    delete reference_;
  }

  static CatalogSearchResult search(const CatalogLimits& limits) {
    const auto search_of = [](topology::Cluster cluster) { return JobSearch{std::move(cluster), *model_, small_space()}; };
    return run_catalog_search(*catalog_, search_of, request_, limits);
  }

  /// The search's choice is the reference's: the same cost and wall time, and the same step (to the ns).
  static void expect_same_choice(const CatalogLimits& limits, const std::string& name) {
    const CatalogSearchResult found = search(limits);
    const std::optional<PlanRun> want = best_of(*reference_, limits);
    ASSERT_EQ(found.chosen.has_value(), want.has_value()) << name;
    if (!want) return;
    const CatalogOffer& got = found.offers[*found.chosen];
    EXPECT_EQ(catalog_->instances[got.instance].name, catalog_->instances[want->instance].name) << name;
    EXPECT_EQ(got.count, want->count) << name;
    EXPECT_DOUBLE_EQ(*got.job.run->cost, want->cost) << name;
    EXPECT_EQ(got.job.run->wall_time, want->wall) << name;
    EXPECT_EQ(TimeNs::seconds(got.job.best->report.step_time_s), TimeNs::seconds(want->step_s)) << name;
  }

  static inline Catalog* catalog_ = nullptr;
  static inline model::Model* model_ = nullptr;
  static inline training::TrainingRequest request_;
  static inline std::vector<PlanRun>* reference_ = nullptr;
};

TEST_F(CatalogAcceptance, TheSearchTriesEveryCountHere) {
  for (const CatalogInstance& i : catalog_->instances) {
    std::vector<int> all;
    for (int n = 1; n <= i.available; ++n) all.push_back(n);
    EXPECT_EQ(instance_counts(i.available), all) << i.name;
  }
  // The reference holds every plan that fits, not one per type and count: 6,259 over the 7 clusters when
  // this was written; the planner's bests are 7 of them.
  EXPECT_GT(reference_->size(), 7U * 100);
  // Every type has plans that fit, so the choice is among the three.
  for (std::size_t t = 0; t < catalog_->instances.size(); ++t) {
    EXPECT_TRUE(std::any_of(reference_->begin(), reference_->end(), [&](const PlanRun& r) { return r.instance == t; }))
        << catalog_->instances[t].name;
  }
}

TEST_F(CatalogAcceptance, TheChoiceIsTheCheapestOfEveryPlanSimulated) { expect_same_choice({}, "cheapest"); }

TEST_F(CatalogAcceptance, UnderADeadlineAndABudgetToo) {
  // Limits between the reference's extremes, so that they rule out some runs and admit others.
  std::vector<TimeNs> walls;
  std::vector<double> costs;
  for (const PlanRun& r : *reference_) {
    walls.push_back(r.wall);
    costs.push_back(r.cost);
  }
  std::sort(walls.begin(), walls.end());
  std::sort(costs.begin(), costs.end());
  const PlanRun cheapest = *best_of(*reference_, {});
  // A deadline one second before the cheapest run ends rules it out.
  expect_same_choice({cheapest.wall - TimeNs::seconds(1), std::nullopt}, "deadline before the cheapest");
  expect_same_choice({walls[walls.size() / 4], std::nullopt}, "deadline at the first quartile");
  expect_same_choice({walls.front() - TimeNs::seconds(1), std::nullopt}, "deadline before every run");
  expect_same_choice({std::nullopt, costs[costs.size() / 2]}, "budget at the median");
  expect_same_choice({std::nullopt, costs.back()}, "budget of the dearest");
  expect_same_choice({std::nullopt, costs.front() * 0.99}, "budget below every run");
}

TEST_F(CatalogAcceptance, EachRunCostsInstancesTimesPriceTimesHours) {
  const CatalogSearchResult found = search({});
  for (const CatalogOffer& o : found.offers) {
    ASSERT_TRUE(o.job.run.has_value());
    const CatalogInstance& i = catalog_->instances[o.instance];
    EXPECT_EQ(o.job.gpus, o.count * i.gpus_per_instance);
    const double hours = o.job.run->wall_time.to_seconds() / 3600;
    EXPECT_NEAR(*o.job.run->cost, o.count * i.price_per_hour * hours, 1e-9 * *o.job.run->cost) << i.name;
  }
}

TEST_F(CatalogAcceptance, TheFrontierIsNonDominatedAndHoldsTheChoice) {
  const CatalogSearchResult found = search({});
  const auto& offers = found.offers;
  const auto cost = [&](std::size_t i) { return *offers[i].job.run->cost; };
  const auto wall = [&](std::size_t i) { return offers[i].job.run->wall_time; };
  ASSERT_FALSE(found.frontier.empty());
  EXPECT_NE(std::find(found.frontier.begin(), found.frontier.end(), *found.chosen), found.frontier.end());
  for (std::size_t k = 0; k + 1 < found.frontier.size(); ++k) {
    // Cheapest first, and each dearer point faster: otherwise it would be beaten.
    EXPECT_LT(cost(found.frontier[k]), cost(found.frontier[k + 1]));
    EXPECT_GT(wall(found.frontier[k]), wall(found.frontier[k + 1]));
  }
  for (std::size_t i = 0; i < offers.size(); ++i) {
    const bool on = std::find(found.frontier.begin(), found.frontier.end(), i) != found.frontier.end();
    if (on) continue;
    // Every other run has a point on the frontier no dearer and no slower.
    EXPECT_TRUE(std::any_of(found.frontier.begin(), found.frontier.end(),
                            [&](std::size_t f) { return cost(f) <= cost(i) && wall(f) <= wall(i); }))
        << "offer " << i;
  }
}

// With --mix-instance-types, two types at each pair of counts are offers too (a cluster of two GPU kinds,
// a pipeline stage per kind): on p5 and p4d, up to 2 of each, the choice is still the cheapest of every
// plan simulated, singles and mixes together, and a mixed run costs both types' instances x hours.
TEST(CatalogMixedTypes, TheChoiceIsTheCheapestOfEveryPlanSimulatedWithTheMixes) {
  const TempDir dir;
  const Catalog catalog = load_catalog_file(
      dir.write("two.yaml",
                "instances:\n"
                "  - { name: p5.48xlarge, node_from: p5.48xlarge.yaml, price_per_hour: \"55.04 USD\", available: 2 }\n"
                "  - { name: p4d.24xlarge, node_from: p4d.24xlarge.yaml, price_per_hour: \"21.957642 USD\", available: 2 }\n"),
      {fs::path(MPSIM_SOURCE_DIR) / "topologies"});
  training::TrainingRequest request;
  request.tokens = "20B";
  const model::Model model = small_gpt();
  std::vector<PlanRun> reference = every_plan_run(catalog, model, small_space(), request);
  std::size_t mixed_runs = 0;
  for (int p5 = 1; p5 <= 2; ++p5) {
    for (int p4d = 1; p4d <= 2; ++p4d) {
      training::TrainingRequest priced = request;
      const int gpus = 8 * (p5 + p4d);
      priced.gpu_hour_price = (p5 * 55.04 + p4d * 21.957642) / gpus;
      const std::size_t before = reference.size();
      // Recorded as instance 2 (neither type alone), count p5 * 10 + p4d, to tell the mixes apart.
      add_plan_runs(two_instance_cluster(catalog.instances[0], p5, catalog.instances[1], p4d), model, small_space(),
                    priced, 2, p5 * 10 + p4d, reference);
      mixed_runs += reference.size() - before;
    }
  }
  EXPECT_GT(mixed_runs, 0U) << "some plan of a mixed cluster fits";

  const auto search_of = [&](topology::Cluster cluster) { return JobSearch{std::move(cluster), model, small_space()}; };
  for (const CatalogLimits& limits :
       {CatalogLimits{}, CatalogLimits{std::nullopt, 30000.0}, CatalogLimits{TimeNs::seconds(86400 * 3), std::nullopt}}) {
    const CatalogSearchResult found = run_catalog_search(catalog, search_of, request, limits, true);
    ASSERT_EQ(found.offers.size(), 4U + 4U);  // 2 counts of each type alone, 2 x 2 mixes
    const std::optional<PlanRun> want = best_of(reference, limits);
    ASSERT_EQ(found.chosen.has_value(), want.has_value());
    if (!want) continue;
    const CatalogOffer& got = found.offers[*found.chosen];
    EXPECT_DOUBLE_EQ(*got.job.run->cost, want->cost);
    EXPECT_EQ(got.job.run->wall_time, want->wall);
    for (const CatalogOffer& o : found.offers) {
      if (!o.second || !o.job.run) continue;
      const double hours = o.job.run->wall_time.to_seconds() / 3600;
      EXPECT_NEAR(*o.job.run->cost, (o.count * 55.04 + o.second_count * 21.957642) * hours, 1e-9 * *o.job.run->cost);
      EXPECT_EQ(o.job.gpus, 8 * (o.count + o.second_count));
    }
  }
}

// A type whose cluster `unusable` refuses (plan --attention-kernel on a GPU without that kernel's rate)
// is skipped with its reason, and so are the mixes with it; the other types' offers are those of the
// catalogue without it.
TEST(CatalogSearch, AnUnusableTypeIsSkippedWithItsReason) {
  const TempDir dir;
  const std::string p5 =
      "  - { name: p5.48xlarge, node_from: p5.48xlarge.yaml, price_per_hour: \"55.04 USD\", available: 2 }\n";
  const std::string p4d =
      "  - { name: p4d.24xlarge, node_from: p4d.24xlarge.yaml, price_per_hour: \"21.957642 USD\", available: 2 }\n";
  const fs::path topologies = fs::path(MPSIM_SOURCE_DIR) / "topologies";
  const Catalog both = load_catalog_file(dir.write("both.yaml", "instances:\n" + p4d + p5), {topologies});
  const Catalog p5_only = load_catalog_file(dir.write("p5.yaml", "instances:\n" + p5), {topologies});
  training::TrainingRequest request;
  request.tokens = "20B";
  const model::Model model = small_gpt();
  const auto search_of = [&](topology::Cluster cluster) { return JobSearch{std::move(cluster), model, small_space()}; };
  const auto no_a100 = [](const topology::Cluster& c) -> std::optional<std::string> {
    for (const topology::GpuKind& k : c.gpu_kinds()) {
      if (k.id.rfind("a100", 0) == 0) return "no A100 here";
    }
    return std::nullopt;
  };
  const CatalogSearchResult found = run_catalog_search(both, search_of, request, {}, true, no_a100);
  ASSERT_EQ(found.skipped.size(), 1U);
  EXPECT_EQ(found.skipped.front().instance, 0U);
  EXPECT_EQ(found.skipped.front().reason, "no A100 here");
  const CatalogSearchResult want = run_catalog_search(p5_only, search_of, request, {});
  ASSERT_EQ(found.offers.size(), want.offers.size());  // p5 at 1 and 2; no mix with p4d
  for (std::size_t i = 0; i < found.offers.size(); ++i) {
    EXPECT_EQ(found.offers[i].instance, 1U);
    EXPECT_FALSE(found.offers[i].second.has_value());
    EXPECT_EQ(found.offers[i].count, want.offers[i].count);
    ASSERT_TRUE(found.offers[i].job.best.has_value());
    EXPECT_EQ(found.offers[i].job.best->report.step_time_s, want.offers[i].job.best->report.step_time_s);
  }
  EXPECT_TRUE(want.skipped.empty());
  // Every type refused: nothing searched, each type named.
  const CatalogSearchResult none =
      run_catalog_search(both, search_of, request, {}, true, [](const topology::Cluster&) { return std::optional<std::string>("no"); });
  EXPECT_TRUE(none.offers.empty());
  EXPECT_EQ(none.skipped.size(), 2U);
  EXPECT_FALSE(none.chosen.has_value());
}

}  // namespace
}  // namespace mpsim::planner
