// The checkpoint/restart model run by Monte Carlo against its closed forms: Daly's expected wall time
// (checkpoint_restart.h) and the interval that minimises it, Daly's and, where δ << M, Young's.
//
// Why the simulated mean should equal Daly's T(τ): a segment of L = τ + δ ends on the first gap between
// interruptions that is at least L. With X ~ Exp(mean M) the next gap and D the expected time to get a
// restart done, the expected time E to get the segment done satisfies
//   E = E[min(X, L)] + P(X < L) (D + E) = M (1 - e^(-L/M)) + (1 - e^(-L/M)) (D + E),
// so E = (e^(L/M) - 1)(M + D). A restart of R is got done the same way with nothing to add on failure:
// D = (e^(R/M) - 1) M, so M + D = M e^(R/M) and E = M e^(R/M) (e^(L/M) - 1). Ts / τ such segments give
// Daly's T(τ) = M e^(R/M) (e^((τ+δ)/M) - 1) Ts / τ.
#include "sim/training/failure_simulation.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "sim/training/checkpoint_restart.h"

namespace mpsim::training {
namespace {

// M = 1 hour, δ = 36 s (δ/M = 1 %), R = 3 min: Daly's interval is 485.4 s, Young's sqrt(2 δ M) = 509.1 s.
const TimeNs kMtbf = TimeNs::seconds(3600);
const TimeNs kCheckpoint = TimeNs::seconds(36);
const TimeNs kRestart = TimeNs::seconds(180);

// 1500 segments of Daly's interval (about 200 M of compute, so a run meets about 240 interruptions).
// Per segment, L/M = 0.145: about 13 % of segments are hit, each costing about a restart plus 1.3
// segments; the segments' time has a standard deviation near 260 s, a run's (1500 of them) near 1.1 %
// of its mean, and the mean of 400 runs a standard error near 0.06 %. The tolerance, 1 %, is about 17
// standard errors; the test also asks for 5 of the standard error it measures.
TEST(FailureSimulation, MeanWallTimeIsDalysExpectation) {
  const TimeNs tau = daly_interval(kCheckpoint, kMtbf);
  const TimeNs compute = TimeNs::ns(tau.base() * 1500);
  const SimulatedWallTime sim = simulate_wall_time({compute, tau, kCheckpoint, kRestart, kMtbf}, 400, 1);
  const double daly = expected_wall_time(compute, tau, kCheckpoint, kRestart, kMtbf).to_seconds();
  RecordProperty("simulated_mean_s", std::to_string(sim.mean_s));
  RecordProperty("standard_error_s", std::to_string(sim.standard_error_s));
  RecordProperty("daly_s", std::to_string(daly));
  EXPECT_LT(sim.standard_error_s / sim.mean_s, 0.002);
  EXPECT_NEAR(sim.mean_s / daly, 1.0, 0.01);
  EXPECT_NEAR(sim.mean_s, daly, 5 * sim.standard_error_s);
  // Interruptions arrive at rate 1/M over the whole wall time.
  EXPECT_NEAR(sim.mean_interruptions / (sim.mean_s / kMtbf.to_seconds()), 1.0, 0.02);
}

// Without interruptions the wall time is the compute plus one checkpoint per segment, exactly.
TEST(FailureSimulation, WithoutInterruptionsEverySegmentIsComputePlusCheckpoint) {
  const TimeNs compute = TimeNs::seconds(10000);
  const SimulatedWallTime sim = simulate_wall_time(
      {compute, TimeNs::seconds(1000), kCheckpoint, kRestart, TimeNs::seconds(1e15)}, 2, 0);
  EXPECT_NEAR(sim.mean_s, 10000 + 10 * 36.0, 1e-6);
  EXPECT_EQ(sim.mean_interruptions, 0.0);
}

// The interval that minimises the simulated wall time is Daly's: on the grid (0.5, 0.7, 1, 1.4, 2) x
// τ_Daly his formula puts the neighbours 0.86 % (0.7) and 0.78 % (1.4) above the optimum, more than
// ten standard errors of the simulated means (0.06 %). Young's interval is within 5 % of Daly's here
// (δ/M = 1 %: Daly's correction terms are sqrt(δ/2M)/3 = 2.4 % and -δ = -7 %).
TEST(FailureSimulation, TheBestSimulatedIntervalIsDalys) {
  const TimeNs daly = daly_interval(kCheckpoint, kMtbf);
  const TimeNs compute = TimeNs::ns(daly.base() * 1500);
  double best_factor = 0;
  double best = std::numeric_limits<double>::infinity();
  for (const double factor : {0.5, 0.7, 1.0, 1.4, 2.0}) {
    const TimeNs tau = TimeNs::seconds(daly.to_seconds() * factor);
    const double mean = simulate_wall_time({compute, tau, kCheckpoint, kRestart, kMtbf}, 400, 7).mean_s;
    RecordProperty("simulated_mean_s_at_" + std::to_string(factor), std::to_string(mean));
    if (mean < best) {
      best = mean;
      best_factor = factor;
    }
  }
  EXPECT_EQ(best_factor, 1.0);
  EXPECT_NEAR(young_interval(kCheckpoint, kMtbf) / daly, 1.0, 0.05);
}

TEST(FailureSimulation, RunsDependOnTheSeedAlone) {
  const CheckpointedJob job{TimeNs::seconds(36000), TimeNs::seconds(500), kCheckpoint, kRestart, kMtbf};
  EXPECT_EQ(simulate_wall_time(job, 10, 3).mean_s, simulate_wall_time(job, 10, 3).mean_s);
  EXPECT_NE(simulate_wall_time(job, 10, 3).mean_s, simulate_wall_time(job, 10, 4).mean_s);
  EXPECT_THROW((void)simulate_wall_time(job, 1, 3), std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::training
