#pragma once
/// Checkpoint and restart under failures that arrive at random (exponentially distributed times
/// between interruptions, mean M): how often to write a checkpoint, and how long a job then takes.
///
/// J. T. Daly, "A higher order estimate of the optimum checkpoint interval for restart dumps",
/// Future Generation Computer Systems 22 (2006). With δ the time to write a checkpoint, R the time
/// to restart (relaunch, reload), τ the compute between two checkpoints and Ts the compute the job
/// needs, the expected wall time is
///   T(τ) = M e^(R/M) (e^((τ+δ)/M) - 1) Ts / τ,
/// and its optimum is, for δ < 2M,
///   τ_opt = sqrt(2δM) [1 + (1/3) sqrt(δ/(2M)) + (1/9) δ/(2M)] - δ      (else τ_opt = M);
/// its first term, sqrt(2δM), is Young's first-order interval (Young, CACM 17, 1974). Daly's
/// worked examples (R = 10 min, δ = 5 min): τ_opt = 117 min at M = 24 h, 57 min at 6 h, 9.1 min at
/// 15 min (tests).
#include "sim/core/units.h"

namespace mpsim::training {

/// Young's first-order optimum interval, sqrt(2 δ M).
[[nodiscard]] TimeNs young_interval(TimeNs checkpoint_write, TimeNs mtbf) noexcept;
/// Daly's higher-order optimum interval (above). Precondition: mtbf > 0.
[[nodiscard]] TimeNs daly_interval(TimeNs checkpoint_write, TimeNs mtbf) noexcept;
/// Daly's expected wall time of `compute` (Ts) with checkpoints every `interval` (τ); an interval of
/// zero (a free checkpoint, taken continuously) gives the limit Ts e^(R/M). Precondition: mtbf > 0.
[[nodiscard]] TimeNs expected_wall_time(TimeNs compute, TimeNs interval, TimeNs checkpoint_write, TimeNs restart,
                                        TimeNs mtbf) noexcept;

}  // namespace mpsim::training
