// Zero Bubble Pipeline Parallelism (Qi et al., ICLR 2024): Table 9's profiled per-stage times,
// replayed by the simulator, must give Table 5's bubble rates for 1f1b, zb-h1 and zb-h2 to 4 decimals.
// (Numbers as in arXiv 2401.10241.) Each stage-to-stage hop costs t_comm.
#include <gtest/gtest.h>

#include "engine_test_support.h"

namespace mpsim::engine {
namespace {

using namespace testing;

struct Row {
  double interleaved;
  int stages;
  int microbatches;
  const char* forward;
  const char* backward_input;
  const char* backward_weight;
  const char* comm;
  double one_f_one_b;
  double zb_h1;
  double zb_h2;
};

constexpr Row kTable[] = {
    {0.1055, 8, 24, "18.522 ms", "18.086 ms", "9.337 ms", "0.601 ms", 0.2431, 0.1585, 0.1083},
    {0.0818, 8, 32, "18.513 ms", "18.086 ms", "9.331 ms", "0.626 ms", 0.1985, 0.1242, 0.0837},
    {0.0443, 8, 64, "18.546 ms", "18.097 ms", "9.321 ms", "0.762 ms", 0.1240, 0.0674, 0.0444},
    {0.1104, 16, 48, "11.347 ms", "11.248 ms", "8.132 ms", "0.377 ms", 0.2552, 0.1397, 0.0672},
    {0.0852, 16, 64, "11.307 ms", "11.254 ms", "8.101 ms", "0.379 ms", 0.2082, 0.1088, 0.0516},
    {0.0445, 16, 128, "11.325 ms", "11.308 ms", "8.109 ms", "0.378 ms", 0.1251, 0.0576, 0.0266},
};

TEST(ZeroBubble, PublishedBubbleRates) {
  for (const Row& row : kTable) {
    const auto cluster = pcie_box(row.stages, "10 GB/s", row.comm);
    const auto model = timed_layers(row.stages, row.forward, row.backward_input, row.backward_weight);
    for (const auto& [schedule, published] :
         {std::pair{"1f1b", row.one_f_one_b}, std::pair{"zb-h1", row.zb_h1}, std::pair{"zb-h2", row.zb_h2}}) {
      const auto plan = plan_yaml(fmt::format("parallelism: {{ pipeline: {} }}\nbatch: {{ microbatches: {} }}\n"
                                              "schedule: {}\n",
                                              row.stages, row.microbatches, schedule),
                                  cluster, model);
      const double rate = simulate(cluster, model, plan).report.bubble_rate;
      EXPECT_NEAR(rate, published, 0.00005) << schedule << " p=" << row.stages << " m=" << row.microbatches;
    }
  }
}

// The paper's interleaved column runs one transformer layer per chunk (22 layers on 8 stages, 46 on
// 16: three chunks per stage, the first and last stage one layer short) with unpublished per-chunk
// times. Assumed here: three equal chunks per stage, each a third of the stage's times. That lands
// 0.001-0.004 above the published rates (the first and last stages' lighter load is not modelled).
TEST(ZeroBubble, InterleavedWithEqualThirds) {
  for (const Row& row : kTable) {
    const auto third = [](const char* ms) { return fmt::format("{} ms", std::stod(ms) / 3); };
    const auto cluster = pcie_box(row.stages, "10 GB/s", row.comm);
    const auto model = timed_layers(row.stages * 3, third(row.forward), third(row.backward_input),
                                    third(row.backward_weight));
    const auto plan = plan_yaml(fmt::format("parallelism: {{ pipeline: {}, virtual_stages: 3 }}\n"
                                            "batch: {{ microbatches: {} }}\nschedule: interleaved-1f1b\n",
                                            row.stages, row.microbatches),
                                cluster, model);
    const double rate = simulate(cluster, model, plan).report.bubble_rate;
    EXPECT_GT(rate, row.interleaved) << "p=" << row.stages << " m=" << row.microbatches;
    EXPECT_LT(rate, row.interleaved + 0.004) << "p=" << row.stages << " m=" << row.microbatches;
  }
}

}  // namespace
}  // namespace mpsim::engine

namespace mpsim::engine {
namespace {

using namespace testing;

/// zb-auto with equal F, I and W of 1 ms and no communication, at a memory limit of `limit`
/// microbatches' activations.
trace::Report zb_auto(int p, int m, int limit) {
  const auto cluster = pcie_box(p);
  const auto model = timed_layers(p, "1 ms", "1 ms", "1 ms");
  return simulate(cluster, model, pipeline_plan(p, m, "zb-auto", cluster, model, fmt::format("zb_memory_limit: {}\n", limit)))
      .report;
}

// The paper's automatic schedules at the handcrafted design point: ZB-1p (1F1B's memory, p) idles as
// ZB-H1, (p - 1)(F + I - W) = (p - 1) ms per rank; ZB-2p (twice it) has no bubble once m >= 2p.
TEST(ZeroBubble, AutomaticSchedulesAtEqualTimes) {
  for (const int p : {2, 3, 4, 8}) {
    for (const int m : {2 * p, 3 * p + 1, 4 * p}) {
      const double zb_h1 = (p - 1) / (3.0 * m + p - 1);
      EXPECT_NEAR(zb_auto(p, m, p).bubble_rate, zb_h1, 1e-9) << "p=" << p << " m=" << m;
      EXPECT_NEAR(zb_auto(p, m, 2 * p).bubble_rate, 0.0, 1e-12) << "p=" << p << " m=" << m;
    }
  }
}

}  // namespace
}  // namespace mpsim::engine
