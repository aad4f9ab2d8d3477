// The MoE router's host arithmetic: top-k selection and weights, the logits' gradient against
// finite differences, and the bookkeeping of the token exchange (send order, arrival permutations).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "executor/net/init.h"
#include "executor/net/router.h"

namespace mpsim::executor {
namespace {

TEST(RouteTokensTest, PicksTheMostProbableExpertsWithTheirSoftmaxProbabilities) {
  // Token 0: logits 0, ln 2, ln 3 -> probabilities 1/6, 2/6, 3/6. Token 1: a tie between experts 0 and 2.
  const std::vector<float> logits{0.0f, std::log(2.0f), std::log(3.0f), 1.0f, 0.0f, 1.0f};
  const Routing r = route_tokens(logits, 2, 3, 2);
  EXPECT_EQ(r.expert, (std::vector<std::int32_t>{2, 1, 0, 2}));
  EXPECT_NEAR(r.weight[0], 0.5f, 1e-6f);
  EXPECT_NEAR(r.weight[1], 2.0f / 6.0f, 1e-6f);
  // Not renormalised over the k: token 1's two weights sum to 2e / (2e + 1), not 1.
  const float e = std::exp(1.0f);
  EXPECT_NEAR(r.weight[2], e / (2 * e + 1), 1e-6f);
  EXPECT_NEAR(r.weight[3], e / (2 * e + 1), 1e-6f);
  EXPECT_NEAR(r.probs[4], 1 / (2 * e + 1), 1e-6f);
  EXPECT_THROW((void)route_tokens(logits, 2, 3, 4), std::invalid_argument);
}

TEST(RouterLogitGradTest, MatchesFiniteDifferencesOfTheWeights) {
  const std::int64_t tokens = 3, experts = 5, k = 2;
  std::vector<float> logits(static_cast<std::size_t>(tokens * experts));
  for (std::size_t i = 0; i < logits.size(); ++i) logits[i] = 2.0f * seeded_uniform(7, 1, 2, i);
  std::vector<float> g(static_cast<std::size_t>(tokens * k));
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = seeded_uniform(8, 1, 2, i);
  const Routing r = route_tokens(logits, tokens, experts, k);
  const std::vector<float> analytic = router_logit_grad(r, g);
  // The loss sum(g x weight), with the selection held fixed (as it is for small steps).
  auto loss = [&](const std::vector<float>& z) {
    const Routing q = route_tokens(z, tokens, experts, k);
    EXPECT_EQ(q.expert, r.expert);
    double s = 0;
    for (std::size_t i = 0; i < g.size(); ++i) s += static_cast<double>(g[i]) * q.weight[i];
    return s;
  };
  for (std::size_t i = 0; i < logits.size(); ++i) {
    std::vector<float> up = logits, down = logits;
    up[i] += 1e-3f;
    down[i] -= 1e-3f;
    EXPECT_NEAR(analytic[i], (loss(up) - loss(down)) / 2e-3, 1e-3) << i;
  }
}

TEST(PlanDispatchTest, OrdersCopiesByExpertThenTokenAndCountsThem) {
  Routing r;
  r.tokens = 3;
  r.experts = 4;
  r.top_k = 2;
  r.expert = {3, 0, 1, 3, 0, 1};  // token 0 -> 3, 0; token 1 -> 1, 3; token 2 -> 0, 1
  r.weight.assign(6, 0.5f);
  const Dispatch d = plan_dispatch(r);
  EXPECT_EQ(d.expert_counts, (std::vector<std::int64_t>{2, 2, 0, 2}));
  EXPECT_EQ(d.copy_token, (std::vector<std::int32_t>{0, 2, 1, 2, 0, 1}));
  EXPECT_EQ(d.copy_slot, (std::vector<std::int32_t>{1, 4, 2, 5, 0, 3}));
}

TEST(PlanArrivalTest, RegroupsSourceMajorRowsExpertMajorAndBack) {
  // Two source ranks, two local experts: from rank 0, 1 row for expert 0 and 2 for expert 1; from
  // rank 1, 3 rows for expert 0 and none for expert 1.
  const std::vector<std::int64_t> counts{1, 2, 3, 0};
  const Arrival a = plan_arrival(counts, 2, 2);
  EXPECT_EQ(a.expert_rows, (std::vector<std::int64_t>{4, 2}));
  EXPECT_EQ(a.rank_rows, (std::vector<std::int64_t>{3, 3}));
  // Arrival rows: r0e0 | r0e1 r0e1 | r1e0 r1e0 r1e0. Expert-major: r0e0 r1e0 r1e0 r1e0 | r0e1 r0e1.
  EXPECT_EQ(a.expert_order, (std::vector<std::int32_t>{0, 3, 4, 5, 1, 2}));
  for (std::size_t i = 0; i < a.expert_order.size(); ++i) {
    EXPECT_EQ(a.arrival_order[static_cast<std::size_t>(a.expert_order[i])], static_cast<std::int32_t>(i));
  }
  EXPECT_THROW((void)plan_arrival(counts, 3, 2), std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::executor
