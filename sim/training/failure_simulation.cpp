#include "sim/training/failure_simulation.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "sim/core/random_stream.h"

namespace mpsim::training {
namespace {

/// Time to get `length` done without an interruption, starting over after each: every attempt that
/// fails costs the time until the interruption plus a restart of `restart_s`, itself got done the same
/// way (an interrupted restart starts again, at no further cost). Seconds; `interruptions` counts them.
/// Its expectation is M e^(R/M) (e^(length/M) - 1): Daly's segment (derivation in the test).
double until_done(double length, double mtbf_s, RandomStream& random, int& interruptions, double restart_s) {
  double elapsed = 0;
  for (;;) {
    const double gap = mtbf_s * random.standard_exponential();
    if (gap >= length) return elapsed + length;
    elapsed += gap;
    ++interruptions;
    if (restart_s > 0) elapsed += until_done(restart_s, mtbf_s, random, interruptions, 0.0);
  }
}

}  // namespace

SimulatedWallTime simulate_wall_time(const CheckpointedJob& job, int runs, std::uint64_t seed) {
  if (runs < 2 || job.interval.base() <= 0 || job.mtbf.base() <= 0) {
    throw std::invalid_argument("simulate_wall_time: runs >= 2, a positive interval and MTBF");
  }
  const double m = job.mtbf.to_seconds();
  const double tau = job.interval.to_seconds();
  const double delta = job.checkpoint_write.to_seconds();
  const double r = job.restart.to_seconds();
  double sum = 0;
  double sum_sq = 0;
  long interruptions = 0;
  for (int run = 0; run < runs; ++run) {
    RandomStream random(seed, static_cast<std::uint64_t>(run), RandomStreamId::Failures);
    double left = job.compute.to_seconds();
    double wall = 0;
    int count = 0;
    while (left > 0) {
      const double work = std::min(tau, left);
      // A restart is itself interruptible; restarting it costs another restart (Daly's e^(R/M)).
      wall += until_done(work + delta, m, random, count, r);
      left -= work;
    }
    sum += wall;
    sum_sq += wall * wall;
    interruptions += count;
  }
  SimulatedWallTime out;
  out.runs = runs;
  out.mean_s = sum / runs;
  const double variance = std::max(0.0, (sum_sq - sum * sum / runs) / (runs - 1));
  out.standard_error_s = std::sqrt(variance / runs);
  out.mean_interruptions = static_cast<double>(interruptions) / runs;
  return out;
}

}  // namespace mpsim::training
