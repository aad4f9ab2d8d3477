// mpsim plan --catalog end to end on the shipped catalogue: the choice against the offers it lists (the
// cheapest; the cheapest by a deadline that rules that one out; the fastest within a budget), the cost's
// closed form, the frontier, the exit code when nothing keeps within the limits, and the plan -o writes
// simulating as listed on the chosen cluster.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "tests/support/run_mpsim.h"

namespace {

using mpsim::testing::repo;
using mpsim::testing::run_mpsim;

/// GPT-3 13B on 100B tokens over configs/catalogs/aws-gpu.yaml, held to 1F1B and ZeRO 1 to be quick.
std::string catalog_args(const std::string& extra) {
  return fmt::format("plan --catalog {} --model {} --global-batch 256 --tokens 100B --schedules 1f1b --zero 1 {}",
                     repo("configs/catalogs/aws-gpu.yaml"), repo("configs/models/gpt3-13b.yaml"), extra);
}

struct Offer {
  std::size_t index = 0;
  double cost = 0;
  double wall_s = 0;
};

/// The offers with a run.
std::vector<Offer> runs_of(const nlohmann::json& j) {
  std::vector<Offer> out;
  for (std::size_t i = 0; i < j["offers"].size(); ++i) {
    const auto& o = j["offers"][i];
    if (!o.contains("best")) continue;
    out.push_back({i, o["best"]["training"]["cost"].get<double>(), o["best"]["training"]["wall_time_s"].get<double>()});
  }
  return out;
}

nlohmann::json run_json(const std::string& extra, int expected_exit = 0) {
  const auto r = run_mpsim(catalog_args(extra + " --json"));
  EXPECT_EQ(r.exit_code, expected_exit) << r.err;
  return nlohmann::json::parse(r.out);
}

TEST(CatalogCommand, TheChoiceIsTheCheapestOfferAndEachCostIsInstancesTimesPriceTimesHours) {
  const nlohmann::json j = run_json("");
  EXPECT_EQ(j["objective"], "cost");
  EXPECT_EQ(j["currency"], "USD");
  // Four types x counts 1, 2, 4 (4 available each).
  ASSERT_EQ(j["offers"].size(), 12U);
  const auto runs = runs_of(j);
  ASSERT_GE(runs.size(), 3U);
  const Offer cheapest = *std::min_element(runs.begin(), runs.end(), [](const Offer& a, const Offer& b) {
    return a.cost < b.cost;
  });
  EXPECT_EQ(j["chosen"]["offer"].get<std::size_t>(), cheapest.index);
  for (const Offer& o : runs) {
    const auto& offer = j["offers"][o.index];
    const double closed = offer["count"].get<double>() * offer["price_per_hour"].get<double>() * o.wall_s / 3600;
    EXPECT_NEAR(o.cost, closed, 1e-9 * closed) << o.index;
  }
  // The frontier: cheapest first, each next point faster, and the choice on it.
  const auto& front = j["frontier"];
  ASSERT_FALSE(front.empty());
  EXPECT_EQ(front[0]["offer"], j["chosen"]["offer"]);
  for (std::size_t k = 0; k + 1 < front.size(); ++k) {
    EXPECT_LT(front[k]["cost"].get<double>(), front[k + 1]["cost"].get<double>());
    EXPECT_GT(front[k]["wall_time_s"].get<double>(), front[k + 1]["wall_time_s"].get<double>());
  }
}

TEST(CatalogCommand, ADeadlineThatRulesOutTheCheapestAndABudgetThatAdmitsSome) {
  const nlohmann::json all = run_json("");
  const auto runs = runs_of(all);
  const auto& cheapest = all["chosen"];
  // A deadline an hour before the cheapest run ends: the cheapest of the runs that end by then.
  const double deadline_h = cheapest["wall_time_s"].get<double>() / 3600 - 1;
  std::optional<Offer> want;
  for (const Offer& o : runs) {
    if (o.wall_s <= deadline_h * 3600 && (!want || o.cost < want->cost)) want = o;
  }
  ASSERT_TRUE(want.has_value());
  const nlohmann::json by_deadline = run_json(fmt::format("--deadline {:.6f}h", deadline_h));
  EXPECT_EQ(by_deadline["chosen"]["offer"].get<std::size_t>(), want->index);
  EXPECT_NE(want->index, cheapest["offer"].get<std::size_t>());

  // A budget halfway between the cheapest and the dearest run: the fastest of those within it.
  double dearest = 0;
  for (const Offer& o : runs) dearest = std::max(dearest, o.cost);
  const double budget = std::floor((cheapest["cost"].get<double>() + dearest) / 2);
  std::optional<Offer> fastest;
  for (const Offer& o : runs) {
    if (o.cost <= budget && (!fastest || o.wall_s < fastest->wall_s)) fastest = o;
  }
  const nlohmann::json by_budget = run_json(fmt::format("--budget \"{:.0f} USD\"", budget));
  EXPECT_EQ(by_budget["objective"], "time");
  EXPECT_EQ(by_budget["chosen"]["offer"].get<std::size_t>(), fastest->index);
  EXPECT_LE(by_budget["chosen"]["cost"].get<double>(), budget);
}

TEST(CatalogCommand, NothingWithinTheLimitsIsExitOne) {
  const auto late = run_mpsim(catalog_args("--deadline 1h"));
  EXPECT_EQ(late.exit_code, 1);
  EXPECT_NE(late.err.find("--deadline 1h: no instance type and count finishes the run in time"), std::string::npos)
      << late.err;
  EXPECT_NE(late.out.find("Frontier of cost against time to train"), std::string::npos);  // still listed
  const auto poor = run_mpsim(catalog_args("--budget \"10 USD\""));
  EXPECT_EQ(poor.exit_code, 1);
  EXPECT_NE(poor.err.find("no instance type and count trains that cheaply"), std::string::npos) << poor.err;
}

TEST(CatalogCommand, TheWrittenPlanSimulatesAsListedOnItsCluster) {
  const auto dir = mpsim::testing::scratch("catalog-plan");
  const std::string plan = (dir / "chosen.yaml").string();
  const nlohmann::json j = run_json("-o " + plan);
  const auto& chosen = j["chosen"];
  const std::string node = chosen["instance"].get<std::string>() + ".yaml";
  const auto sim = run_mpsim(fmt::format("simulate --topology {} --set topology.nodes={} --model {} --plan {} --json",
                                         repo("topologies/" + node), chosen["count"].get<int>(),
                                         repo("configs/models/gpt3-13b.yaml"), plan));
  ASSERT_EQ(sim.exit_code, 0) << sim.err;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(sim.out)["step_time_s"].get<double>(), chosen["step_time_s"].get<double>());
}

TEST(CatalogCommand, ATypeWithoutTheAttentionKernelIsSkippedAndNoTypeLeftIsAnError) {
  // FA3 rates: the H100 of p5 has one; the A100s of p4de and p4d and the V100 of p3 have none.
  const nlohmann::json j = run_json("--attention-kernel fa3");
  ASSERT_EQ(j["skipped"].size(), 3U);
  EXPECT_EQ(j["skipped"][0]["type"], "p4de.24xlarge");
  EXPECT_EQ(j["skipped"][1]["type"], "p4d.24xlarge");
  EXPECT_EQ(j["skipped"][2]["type"], "p3.16xlarge");
  for (const auto& s : j["skipped"]) {
    EXPECT_NE(s["reason"].get<std::string>().find("has no attention rate for fa3 kernels"), std::string::npos)
        << s["reason"];
  }
  ASSERT_EQ(j["offers"].size(), 3U);  // p5 at 1, 2, 4
  for (const auto& o : j["offers"]) {
    EXPECT_EQ(o["instance"], "p5.48xlarge");
    if (o.contains("best")) {
      EXPECT_EQ(o["best"]["plan"]["attention_kernel"], "fa3");
    }
  }
  const auto text = run_mpsim(catalog_args("--attention-kernel fa3"));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Skipped p4d.24xlarge: "), std::string::npos) << text.out;

  // FA4: none of the four types has a rate, so nothing is left to search.
  const auto none = run_mpsim(catalog_args("--attention-kernel fa4"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("--attention-kernel fa4"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("no instance type of"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("p3.16xlarge: "), std::string::npos) << none.err;
}

// --instance-counts 3: each type at 3 instances only (4 available each), the choice still the cheapest
// of them; 3,9: 9 is past every type's 4 and left out; 9 alone leaves no type, an error naming the flag.
TEST(CatalogCommand, InstanceCountsAreTheOnlyCountsTried) {
  const nlohmann::json j = run_json("--instance-counts 3");
  ASSERT_EQ(j["offers"].size(), 4U);  // four types, one count each
  for (const auto& o : j["offers"]) EXPECT_EQ(o["count"], 3) << o;
  const auto runs = runs_of(j);
  ASSERT_FALSE(runs.empty());
  const Offer cheapest = *std::min_element(runs.begin(), runs.end(), [](const Offer& a, const Offer& b) {
    return a.cost < b.cost;
  });
  EXPECT_EQ(j["chosen"]["offer"].get<std::size_t>(), cheapest.index);
  EXPECT_EQ(run_json("--instance-counts 9,3")["offers"].size(), 4U);

  const auto none = run_mpsim(catalog_args("--instance-counts 9"));
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
  EXPECT_NE(none.err.find("--instance-counts 9"), std::string::npos) << none.err;
  EXPECT_NE(none.err.find("none of the instance counts asked for is within its 4 available"), std::string::npos)
      << none.err;
}

}  // namespace
