#pragma once
/// Factors read from a run's kernel traces (docs/calibration.md, "Reading kernel traces"): a profiler
/// trace times every GEMM, attention and elementwise kernel a rank runs, so the rate of each class
/// of kernel a software profile prices with a factor of its own (gemm, fp8_gemm, attention,
/// memory_bound) is read directly: factor = the class's predicted time at the catalogue's rates /
/// its measured time (a time scales as 1 / its rate), rather than fitted to the step. The factors
/// left (the links') are then fitted to the step with the read ones held (CalibrationOptions::read).
#include <array>
#include <cstdint>
#include <vector>

#include "sim/calibration/measured_run.h"
#include "sim/calibration/software_profile.h"
#include "sim/engine/kernel_time.h"

namespace mpsim::calibration {

/// The factor that scales a kernel class's rate (the class and the factor share their name).
[[nodiscard]] FactorKind factor_of(trace::KernelClass c) noexcept;

/// One traced rank's kernels of the classes a factor prices: how many ran over its profiled steps and
/// their summed time per step, by engine::KernelClass.
struct MeasuredKernels {
  int stage = 0;  ///< the rank's pipeline rank in the run's plan
  std::array<std::int64_t, engine::kKernelClasses.size()> kernels{};
  std::array<double, engine::kKernelClasses.size()> seconds_per_step{};
};

/// A class's kernels over the traced ranks against mpsim's prediction of the same ranks, per step on a
/// rank (means over the ranks).
struct KernelReading {
  engine::KernelClass kernel_class = engine::KernelClass::Gemm;
  std::int64_t kernels = 0;
  double measured_s = 0;
  double predicted_s = 0;  ///< at the catalogue's rates
};

/// Each class's kernel time per step on each pipeline rank of the run at the catalogue's rates
/// (engine::step_kernel_times of its cost model), by pipeline rank.
[[nodiscard]] std::vector<engine::ClassTimes> predicted_kernel_times(const MeasuredRun& run);

/// The readings of `ranks` (each against its pipeline rank's prediction), one per class, in
/// engine::kKernelClasses' order. Throws std::invalid_argument for a rank whose stage the plan lacks.
[[nodiscard]] std::vector<KernelReading> kernel_readings(const MeasuredRun& run,
                                                         const std::vector<MeasuredKernels>& ranks);

/// The factors the readings set, each within [0.05, its ceiling on `cluster`] (clamped, and marked so):
/// a class measured and predicted both (a time of zero on either side sets nothing). gemm from the
/// 16-bit GEMMs and fp8_gemm from the FP8 ones over the gemm just read, where the trace and the
/// prediction both have both; else gemm from every GEMM together (a trace whose FP8 GEMMs' names do
/// not say so, as cuBLAS's nvjet names do not).
[[nodiscard]] std::vector<ReadFactor> read_kernel_factors(const std::vector<KernelReading>& readings,
                                                          const topology::Cluster& cluster);

}  // namespace mpsim::calibration
