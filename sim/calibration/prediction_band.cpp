#include "sim/calibration/prediction_band.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <utility>

#include <fmt/format.h>

namespace mpsim::calibration {

namespace {

// Written from tests/validation/calibration_loo_test.cpp's output (LeaveOneOut.CalibrationOnHeldOutRuns
// checks them); the errors are measured step / predicted step - 1.
constexpr std::array kUncalibrated = {
    ErrorSpread{"context parallel", "", -0.120, 0.220, 24, 0.833},
    ErrorSpread{"context parallel", "b200", -0.135, 0.220, 10, 0.700},
    ErrorSpread{"context parallel", "h100-sxm", 0.056, 0.192, 11, 0.909},
    ErrorSpread{"dense", "", -0.090, 0.165, 49, 0.816},
    ErrorSpread{"dense", "gb200", 0.047, 0.285, 11, 0.818},
    ErrorSpread{"dense", "h100-sxm", -0.084, 0.165, 29, 0.724},
    ErrorSpread{"mixture of experts", "", -0.067, 0.857, 60, 0.800},
    ErrorSpread{"mixture of experts", "b200", -0.264, 2.995, 13, 0.615},
    ErrorSpread{"mixture of experts", "gb200", 0.018, 0.828, 19, 0.789},
    ErrorSpread{"mixture of experts", "gb300", -0.174, 0.482, 14, 0.714},
    ErrorSpread{"mixture of experts", "h100-sxm", -0.116, 2.190, 10, 0.700},
};
constexpr std::array kCalibrated = {
    ErrorSpread{"context parallel", "", -0.086, 0.094, 66, 0.697},
    ErrorSpread{"dense", "", -0.141, 0.163, 272, 0.699},
    ErrorSpread{"mixture of experts", "", -0.300, 0.429, 206, 0.806},
};

// Written from tests/validation/measured_memory_test.cpp's output (MeasuredMemory.PeaksHoldOnTodaysRuns
// checks it): measured max allocated / predicted tensor bytes - 1 over the table's allocated rows.
constexpr ErrorSpread kMemory{"memory", "", -0.038, 0.177, 14};

// Written from tests/validation/calibration_loo_test.cpp's output (LeaveOneOut.CalibrationOnHeldOutRuns
// checks them): pairs of check rows of one release, GPU kind, model and GPU count.
constexpr std::array kRankingTolerances = {
    RankingTolerance{"", 0.043, 14},
    RankingTolerance{"context parallel", 0.007, 2},
    RankingTolerance{"dense", 0.042, 4},
    RankingTolerance{"mixture of experts", 0.065, 8},
};

const ErrorSpread* find_spread(std::span<const ErrorSpread> table, std::string_view group, std::string_view gpu_kind) {
  for (const ErrorSpread& s : table) {
    if (s.group == group && s.gpu_kind == gpu_kind) return &s;
  }
  return nullptr;
}

}  // namespace

std::string_view prediction_group(const model::Model& model, const plan::Plan& plan) noexcept {
  if (model.shape && model.shape->moe) return "mixture of experts";
  if (plan.degrees[plan::Axis::Context] > 1) return "context parallel";
  return "dense";
}

std::span<const ErrorSpread> uncalibrated_spreads() noexcept { return kUncalibrated; }
std::span<const ErrorSpread> calibrated_spreads() noexcept { return kCalibrated; }

std::optional<ErrorBand> coverage_band(std::vector<double> errors) {
  if (static_cast<int>(errors.size()) < kFewestRows) return std::nullopt;
  std::sort(errors.begin(), errors.end());
  // k = floor((n + 1)(1 - kBandCoverage) / 2), in integers: (1 - 0.8) / 2 = 1 / 10.
  static_assert(kBandCoverage == 0.8);
  const std::size_t k = (errors.size() + 1) / 10;
  return ErrorBand{errors[k - 1], errors[errors.size() - k]};
}

std::optional<StepBand> step_band(double step_s, std::string_view group, std::span<const std::string_view> gpu_kinds,
                                  const SoftwareProfile* profile) {
  const std::string_view gpu_kind = gpu_kinds.size() == 1 ? gpu_kinds.front() : std::string_view();
  // A profile calibrates the step when it was fitted on runs of every GPU kind of the run and has a
  // rate factor (activation_memory alone does not move a step).
  const bool calibrated = profile != nullptr && !gpu_kinds.empty() &&
                          std::all_of(gpu_kinds.begin(), gpu_kinds.end(),
                                      [&](std::string_view kind) { return profile->fitted_on(kind); }) &&
                          std::any_of(profile->factors.begin(), profile->factors.end(),
                                      [](const Factor& f) { return f.kind != FactorKind::ActivationMemory; });
  const ErrorSpread* spread = nullptr;
  if (calibrated) {
    spread = find_spread(kCalibrated, group, "");
  } else {
    spread = find_spread(kUncalibrated, group, gpu_kind);
    if (spread == nullptr) spread = find_spread(kUncalibrated, group, "");
  }
  if (spread == nullptr) return std::nullopt;
  return StepBand{step_s * (1 + spread->low), step_s * (1 + spread->high), calibrated, *spread};
}

std::span<const RankingTolerance> ranking_tolerances() noexcept { return kRankingTolerances; }

const RankingTolerance& ranking_tolerance(std::string_view group) noexcept {
  for (const RankingTolerance& t : kRankingTolerances) {
    if (t.group == group && t.pairs >= kFewestPairs) return t;
  }
  return kRankingTolerances.front();  // every group's pairs
}

const ErrorSpread& memory_spread() noexcept { return kMemory; }

MemoryBand memory_band(std::int64_t peak_bytes, std::int64_t runtime_bytes) noexcept {
  const auto tensors = static_cast<double>(std::max<std::int64_t>(peak_bytes - runtime_bytes, 0));
  const auto at = [&](double error) { return peak_bytes + static_cast<std::int64_t>(std::llround(tensors * error)); };
  return {at(kMemory.low), at(kMemory.high), kMemory};
}

std::string memory_band_text(const MemoryBand& band) {
  return fmt::format("published allocated peaks measured {:+.0f} % to {:+.0f} % off their predictions ({} rows)",
                     band.basis.low * 100, band.basis.high * 100, band.basis.predictions);
}

std::string band_basis_text(const StepBand& band) {
  const ErrorSpread& s = band.basis;
  const std::string where = s.gpu_kind.empty() ? "on every GPU kind" : fmt::format("on {}", s.gpu_kind);
  if (band.calibrated) {
    return fmt::format("calibrated: {} runs predicted by a profile fitted on another run of their release and GPU kind "
                       "measured {:+.0f} % to {:+.0f} % off ({} predictions; of a release and GPU kind held out in "
                       "turn, {:.0f} % fell inside the others' band)",
                       s.group, s.low * 100, s.high * 100, s.predictions, s.held_out_coverage * 100);
  }
  return fmt::format("uncalibrated: published {} runs {} measured {:+.0f} % to {:+.0f} % off their predictions ({} rows; "
                     "of a release held out in turn, {:.0f} % fell inside the others' band; mpsim calibrate on a run of "
                     "yours narrows it)",
                     s.group, where, s.low * 100, s.high * 100, s.predictions, s.held_out_coverage * 100);
}

}  // namespace mpsim::calibration
