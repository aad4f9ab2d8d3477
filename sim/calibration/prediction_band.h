#pragma once
/// How sure a prediction is: the band its measured step is expected in, from how far predictions of its
/// kind have been from published measurements (docs/calibration.md, "Bands"; docs/validation.md).
///
/// Uncalibrated, the band is coverage_band of the errors of the validation's check rows of the same
/// group (dense, mixture of experts, context parallel) on the same GPU kind (the group's rows on every
/// kind where the kind has fewer than kFewestRows); calibrated (a profile fitted on runs of the same GPU
/// kind), of the leave-one-out errors of profiles fitted on one run of the same release, GPU kind and
/// group. The tables are today's figures; tests/validation/calibration_loo_test.cpp
/// recomputes them from the rows and fails when they drift.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "sim/calibration/software_profile.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"

namespace mpsim::calibration {

/// The validation's groups: "dense", "mixture of experts", "context parallel".
[[nodiscard]] std::string_view prediction_group(const model::Model& model, const plan::Plan& plan) noexcept;

/// The errors (measured step / predicted step - 1) of a set of predictions: their coverage_band and how
/// many they are.
struct ErrorSpread {
  std::string_view group;
  std::string_view gpu_kind;  ///< catalogue id; "" for every kind
  double low = 0;
  double high = 0;
  int predictions = 0;
  /// How the band did on predictions it was not drawn from: calibrated, the share of a cell's
  /// predictions (one release, GPU kind and group) inside the band of the group's other cells, each
  /// cell held out in turn; uncalibrated, the share of a release's rows inside the band of the other
  /// releases' rows (the group's over every kind where those are too few), each release held out in
  /// turn. The errors of one release share its software's offset, so this can fall short of
  /// kBandCoverage, which holds for one more error of the errors' own kind. 0 for the memory spread.
  double held_out_coverage = 0;
};
[[nodiscard]] std::span<const ErrorSpread> uncalibrated_spreads() noexcept;
[[nodiscard]] std::span<const ErrorSpread> calibrated_spreads() noexcept;

/// The share of further errors a band is to hold (with many errors, their 10th to 90th percentile).
inline constexpr double kBandCoverage = 0.8;
/// The fewest errors a band is drawn from: the smallest to the largest of n errors holds a further one
/// with probability (n - 1) / (n + 1), which reaches kBandCoverage at 9 (a GPU kind with fewer rows
/// takes its group's band over every kind).
inline constexpr int kFewestRows = 9;
static_assert(static_cast<double>(kFewestRows - 1) / (kFewestRows + 1) >= kBandCoverage &&
              static_cast<double>(kFewestRows - 2) / kFewestRows < kBandCoverage);

struct ErrorBand {
  double low = 0;
  double high = 0;
};
/// The band, drawn from `errors` of past predictions, that holds the error of a further prediction of
/// the same kind with probability at least kBandCoverage whatever their distribution, as long as the
/// errors are exchangeable (split conformal prediction): from the k-th smallest error to the k-th
/// largest, k = floor((n + 1)(1 - kBandCoverage) / 2), which holds (n + 1 - 2k) / (n + 1) of them.
/// Nothing from fewer than kFewestRows errors, of which no such band exists.
[[nodiscard]] std::optional<ErrorBand> coverage_band(std::vector<double> errors);

struct StepBand {
  double low_s = 0;
  double high_s = 0;
  bool calibrated = false;
  ErrorSpread basis;  ///< the spread it came from
};

/// The band of a prediction of `step_s`; `profile` is the one applied (if any) and `gpu_kinds` the
/// catalogue ids of the run's GPUs (several on a mixed cluster, whose uncalibrated spread is every
/// kind's rows; calibrated when the profile was fitted on runs of every one of them). Nothing when no
/// spread covers the group.
[[nodiscard]] std::optional<StepBand> step_band(double step_s, std::string_view group,
                                                std::span<const std::string_view> gpu_kinds,
                                                const SoftwareProfile* profile);

/// "uncalibrated: published dense runs on h100-sxm measured -8 % to +17 % off their predictions (29 rows;
/// mpsim calibrate on a run of yours narrows it)", or the calibrated basis.
[[nodiscard]] std::string band_basis_text(const StepBand& band);

/// How far mpsim's predicted ratio between two runs of one model on one cluster is from the measured
/// ratio: the median of |(measured a / measured b) / (predicted a / predicted b) - 1| over pairs of
/// published runs of the same release, GPU kind, model and GPU count that differ in their configuration
/// (tests/validation: precision recipes, parallel degrees), per group. Two plans whose predicted steps
/// differ by less than this are ones the predictions cannot order: the planner prefers, among them, the
/// one with the most memory headroom (planner/headroom_choice.h). Pairs, not single rows, because the
/// error common to every run of one software stack (docs/validation.md's medians of 6-45 %) cancels in
/// a ratio.
struct RankingTolerance {
  std::string_view group;  ///< "" for the pairs of every group
  double share = 0;        ///< median |ratio error|
  int pairs = 0;
};
[[nodiscard]] std::span<const RankingTolerance> ranking_tolerances() noexcept;
/// A group's own pairs give its tolerance (a median) from this many on.
inline constexpr int kFewestPairs = 5;
/// The group's tolerance, or every group's pooled one when the group has fewer than kFewestPairs pairs.
[[nodiscard]] const RankingTolerance& ranking_tolerance(std::string_view group) noexcept;

/// The spread of measured peak memory around its prediction: measured max allocated / predicted tensor
/// bytes - 1 over the allocated rows of the measured-memory table (tests/validation/measured_memory.yaml;
/// tests/validation/measured_memory_test.cpp recomputes it and fails when it drifts), its coverage_band.
/// Reserved figures (the allocator's cache too) are another quantity and left out.
[[nodiscard]] const ErrorSpread& memory_spread() noexcept;

struct MemoryBand {
  std::int64_t low_bytes = 0;
  std::int64_t high_bytes = 0;
  ErrorSpread basis;
};

/// The band of a predicted peak of `peak_bytes`, of which `runtime_bytes` (CUDA context, workspaces,
/// communicators, ZeRO 3's collective-stream pools: engine::StaticMemory::reserved) is held apart from the tensors the spread is of.
[[nodiscard]] MemoryBand memory_band(std::int64_t peak_bytes, std::int64_t runtime_bytes) noexcept;

/// "published allocated peaks measured -5 % to +10 % off their predictions (10 rows)".
[[nodiscard]] std::string memory_band_text(const MemoryBand& band);

}  // namespace mpsim::calibration
