// Young's and Daly's checkpoint intervals and Daly's expected wall time, against closed forms and
// Daly's (2006) published worked examples.
#include "sim/training/checkpoint_restart.h"

#include <gtest/gtest.h>

#include <cmath>

namespace mpsim::training {
namespace {

TimeNs minutes(double m) { return TimeNs::seconds(60 * m); }
double in_minutes(TimeNs t) { return t.to_seconds() / 60; }

TEST(CheckpointRestart, YoungIsTheSquareRootOfTwiceDumpTimesMtbf) {
  EXPECT_NEAR(young_interval(minutes(5), minutes(1440)).to_seconds(), std::sqrt(2 * 300.0 * 86400.0), 1e-6);
}

// Daly, FGCS 22 (2006), figures 3-5: R = 10 min, delta = 5 min.
TEST(CheckpointRestart, DalyMatchesHisWorkedExamples) {
  EXPECT_NEAR(in_minutes(daly_interval(minutes(5), minutes(24 * 60))), 117, 0.5);
  EXPECT_NEAR(in_minutes(daly_interval(minutes(5), minutes(6 * 60))), 57, 0.5);
  EXPECT_NEAR(in_minutes(daly_interval(minutes(5), minutes(15))), 9.1, 0.05);
  // A dump longer than twice the MTBF: checkpoint once per MTBF.
  EXPECT_EQ(daly_interval(minutes(40), minutes(15)), minutes(15));
}

TEST(CheckpointRestart, DalyTendsToYoungForCheapDumps) {
  const TimeNs dump = TimeNs::seconds(1);
  const TimeNs mtbf = TimeNs::seconds(1e6);
  EXPECT_NEAR(daly_interval(dump, mtbf) / young_interval(dump, mtbf), 1.0, 1e-3);
}

TEST(CheckpointRestart, WithoutFailuresTheWallTimeIsComputePlusDumps) {
  // M far beyond everything: T = Ts (tau + delta) / tau.
  const TimeNs compute = TimeNs::seconds(1e6);
  const TimeNs wall = expected_wall_time(compute, TimeNs::seconds(1000), TimeNs::seconds(10), minutes(10),
                                         TimeNs::seconds(1e14));
  EXPECT_NEAR(wall.to_seconds(), 1e6 * 1010.0 / 1000.0, 1e6 * 1e-6);
}

TEST(CheckpointRestart, DalysIntervalMinimisesTheWallTime) {
  const TimeNs compute = TimeNs::seconds(500 * 3600.0);
  for (const double m : {15.0, 360.0, 1440.0}) {
    const TimeNs best = daly_interval(minutes(5), minutes(m));
    const auto wall = [&](double scale) {
      return expected_wall_time(compute, TimeNs::seconds(best.to_seconds() * scale), minutes(5), minutes(10),
                                minutes(m));
    };
    EXPECT_LE(wall(1.0), wall(0.8)) << m;
    EXPECT_LE(wall(1.0), wall(1.25)) << m;
  }
}

}  // namespace
}  // namespace mpsim::training
