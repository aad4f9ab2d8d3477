#pragma once
/// Fitting a software profile to measured runs (docs/calibration.md, "How the fit works").
///
/// Each factor's elasticity on each run is measured by simulating the run with that factor at 0.8:
/// e = ln(t(0.8) / t(1)) / ln(1 / 0.8), the share of the run's step that scales with the factor's rate
/// (1: all of it, 0: none). A factor that moves no run by kSmallestElasticity there is probed again at
/// 0.25: work hidden under other work (ZeRO-3's gathers under the compute) shows only far out. The fit takes the factors in order of their summed elasticity and keeps one
/// only while the runs tell it apart from those already kept (the elasticity matrix's smallest singular
/// value at least kDistinctFactors of its largest) and while there are fewer factors than runs: one
/// run sets one factor, all_rates, whose elasticity is the largest on every run (the whole step; one
/// step cannot say which work was slow). all_rates is left out with factors read from kernel traces
/// (it would scale them too) and per kind (it would take the step the kinds share). It then solves for the values that
/// minimise the squared log errors of the runs' steps (Gauss-Newton on the simulations themselves, the
/// Jacobian re-measured at each step), each value held within (0, factor_ceiling].
#include <optional>
#include <string>
#include <vector>

#include "sim/calibration/measured_run.h"
#include "sim/calibration/software_profile.h"

namespace mpsim::calibration {

/// Two factors are told apart when the runs' elasticity matrix's smallest singular value is at least
/// this share of its largest (0.1: no factor's effect is within 10 % of a mix of the others').
inline constexpr double kDistinctFactors = 0.1;
/// A factor moves a run when its elasticity there is at least this (2 % of the step).
inline constexpr double kSmallestElasticity = 0.02;

struct CalibrationOptions {
  std::vector<FactorKind> factors{kFactorKinds.begin(), kFactorKinds.end()};  ///< the factors the fit may use
  int max_factors = 0;  ///< 0: as many as the runs determine
  /// Factors already read (from kernel traces, kernel_rates.h): held at their values in every
  /// simulation of the fit, which fits only the other factors; the profile lists them as read.
  std::vector<ReadFactor> read;
  /// Each GPU factor (is_gpu_factor) fitted once per GPU kind of the runs instead of once for all
  /// (`calibrate --per-kind`): a candidate per kind, moving only the runs' stages on that kind, kept
  /// or dropped as any other (the runs must tell the kinds apart); the links' factors stay shared,
  /// activation_memory, fitted to peaks, stays shared too, and all_rates is not fitted.
  bool per_kind = false;
};

/// The peak a run of `kind` measures (calibration::PeakKind), in GiB, the largest over the prediction's
/// devices, were the activations `activation_factor` x those predicted: a device's memory is at every
/// moment fixed + the activations held then, and the factor scales every activation byte alike
/// (GpuKind::activation_memory_factor), so its peak stays at the same moment: fixed + factor x the
/// activations at its peak. At 1, the prediction's own peak (less its runtime part for `allocated`).
/// With `stage`, over that pipeline stage's devices only (MeasuredRun::peak_stage).
[[nodiscard]] double measured_kind_peak_gib(const trace::Report& prediction, PeakKind kind,
                                            double activation_factor = 1.0, std::optional<int> stage = {});
/// The activation factor at which that peak is `measured_gib`: the first device to reach it, the least
/// over the devices of (measured - fixed) / activations; held within [0.05, ceiling].
[[nodiscard]] double activation_factor_for_peak(const trace::Report& prediction, PeakKind kind, double measured_gib,
                                                double ceiling = kLargestActivationFactor,
                                                std::optional<int> stage = {});

/// The run simulated on its cluster with `factors` applied.
[[nodiscard]] trace::Report predict(const MeasuredRun& run, const std::vector<Factor>& factors);

/// The profile that best explains `runs`' measured steps (runs with only a peak memory are skipped).
/// Throws std::invalid_argument when no run gives a step figure.
[[nodiscard]] SoftwareProfile calibrate(const std::vector<MeasuredRun>& runs, std::string name,
                                        const CalibrationOptions& options = {});

}  // namespace mpsim::calibration
