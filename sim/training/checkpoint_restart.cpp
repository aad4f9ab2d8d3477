#include "sim/training/checkpoint_restart.h"

#include <cmath>

namespace mpsim::training {

TimeNs young_interval(TimeNs checkpoint_write, TimeNs mtbf) noexcept {
  return TimeNs::seconds(std::sqrt(2 * checkpoint_write.to_seconds() * mtbf.to_seconds()));
}

TimeNs daly_interval(TimeNs checkpoint_write, TimeNs mtbf) noexcept {
  const double delta = checkpoint_write.to_seconds();
  const double m = mtbf.to_seconds();
  if (delta >= 2 * m) return mtbf;
  const double x = delta / (2 * m);
  return TimeNs::seconds(std::sqrt(2 * delta * m) * (1 + std::sqrt(x) / 3 + x / 9) - delta);
}

TimeNs expected_wall_time(TimeNs compute, TimeNs interval, TimeNs checkpoint_write, TimeNs restart,
                          TimeNs mtbf) noexcept {
  const double m = mtbf.to_seconds();
  const double tau = interval.to_seconds();
  // A free checkpoint is taken continuously: the limit as tau -> 0 loses no work, only restarts.
  if (tau <= 0) return TimeNs::seconds(compute.to_seconds() * std::exp(restart.to_seconds() / m));
  // expm1 keeps the digits when (τ + δ) is a small fraction of M.
  const double segments = compute.to_seconds() / tau;
  return TimeNs::seconds(m * std::exp(restart.to_seconds() / m) *
                         std::expm1((tau + checkpoint_write.to_seconds()) / m) * segments);
}

}  // namespace mpsim::training
