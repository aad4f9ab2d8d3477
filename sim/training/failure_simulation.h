#pragma once
/// A Monte Carlo run of the checkpoint/restart model whose expectation checkpoint_restart.h writes in
/// closed form: the check of Daly's formula, and what docs/stragglers.md shows of a job's spread.
///
/// The model (Daly 2006, the assumptions of expected_wall_time): the job's compute Ts is cut into
/// segments of τ compute, each followed by a checkpoint of δ; interruptions arrive as a Poisson process
/// of mean interval M (exponential gaps, memoryless, at any moment: computing, writing or restarting).
/// A segment that is interrupted is lost whole: the job restarts (R, which must itself run R without an
/// interruption, else it starts again) and redoes the segment from its start. The last segment is as
/// long as the compute left, and is checkpointed too (Daly's Ts/τ segments of τ + δ, when τ divides Ts).
#include <cstdint>

#include "sim/core/units.h"

namespace mpsim::training {

struct CheckpointedJob {
  TimeNs compute;           ///< Ts
  TimeNs interval;          ///< τ, > 0
  TimeNs checkpoint_write;  ///< δ
  TimeNs restart;           ///< R
  TimeNs mtbf;              ///< M, > 0
};

struct SimulatedWallTime {
  int runs = 0;
  double mean_s = 0;            ///< over the runs
  double standard_error_s = 0;  ///< of the mean: the runs' standard deviation / sqrt(runs)
  double mean_interruptions = 0;
};

/// `runs` independent runs of `job`, run r drawing its interruptions from (seed, r) alone
/// (sim/core/random_stream.h). Preconditions: runs >= 2, interval > 0, mtbf > 0.
[[nodiscard]] SimulatedWallTime simulate_wall_time(const CheckpointedJob& job, int runs, std::uint64_t seed);

}  // namespace mpsim::training
