#pragma once
/// A software profile: what one software stack (a framework release, its kernels and its recipe's
/// overlaps) reaches on the hardware, as a few named factors on the GPU kinds' and links' catalogue
/// rates, shared by every GPU kind or, for a GPU's own factors, given per kind. `mpsim calibrate` fits
/// them from measured runs (calibrate.h); `--profile FILE` applies them to a cluster before anything is
/// simulated, so the engine, the planner and its bounds all see the same rates (docs/calibration.md).
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/topology/cluster.h"

namespace mpsim::calibration {

/// What a factor scales. Each multiplies a rate (1 = the catalogue's; 0.9 = 10 % slower).
enum class FactorKind : std::uint8_t {
  /// Every rate below alike (GEMMs, attention, HBM, every link): what stretches a whole step rather than
  /// one kind of work (host overheads and launch gaps, synchronizations, stragglers), and all that one
  /// measured step can say. The fit takes it first; a rate's own factor joins it only where the runs
  /// tell that rate apart (calibrate.h).
  AllRates,
  Gemm,               ///< every GEMM: the GPU kind's matmul_efficiency and fp8_matmul_efficiency
  Fp8Gemm,            ///< FP8 GEMMs beyond that: fp8_matmul_efficiency
  Attention,          ///< FlashAttention: attention_efficiency and every kernel generation's rate
  MemoryBound,        ///< elementwise work and the optimizer step: the HBM bandwidth
  NvlinkTransfers,    ///< collectives and sends inside an NVLink domain: NVLink links' bandwidth
  NetworkTransfers,   ///< collectives and sends between nodes: network links' bandwidth
  /// Collectives and sends between GPUs of a node without NVLink between them: PCIe links' bandwidth
  /// (NCCL's transport there: peer-to-peer over a switch, or copies through host memory across a root
  /// complex). Fitted only on runs whose nodes have such GPUs (calibrate.cpp's can_move).
  PcieTransfers,
  /// Not a rate: the activations' bytes (GpuKind::activation_memory_factor), fitted to measured peaks
  /// rather than steps. 1.1 = the stack's activations take 10 % more than mpsim counts.
  ActivationMemory,
};
inline constexpr std::array<FactorKind, 9> kFactorKinds = {
    FactorKind::AllRates,        FactorKind::Gemm,             FactorKind::Fp8Gemm,
    FactorKind::Attention,       FactorKind::MemoryBound,      FactorKind::NvlinkTransfers,
    FactorKind::NetworkTransfers, FactorKind::PcieTransfers,   FactorKind::ActivationMemory};
/// The smallest value a rate factor may take: a rate a twentieth of the catalogue's is a broken run,
/// not a software stack.
inline constexpr double kSmallestRateFactor = 0.05;
/// activation_memory's ceiling: a stack holding four times what mpsim counts is a model mpsim does not
/// describe (the validation's measured peaks are within 0.5-1.3 x, docs/validation.md "Memory").
inline constexpr double kLargestActivationFactor = 4.0;

/// The factors that scale rates, which the step fit chooses among.
inline constexpr std::array<FactorKind, 8> kRateFactorKinds = {
    FactorKind::AllRates,        FactorKind::Gemm,             FactorKind::Fp8Gemm,      FactorKind::Attention,
    FactorKind::MemoryBound,     FactorKind::NvlinkTransfers,  FactorKind::NetworkTransfers, FactorKind::PcieTransfers};
[[nodiscard]] std::string_view to_string(FactorKind kind) noexcept;
[[nodiscard]] std::optional<FactorKind> factor_kind_named(std::string_view name) noexcept;
/// Every factor's name, for error messages.
[[nodiscard]] std::span<const std::string_view> factor_names() noexcept;

/// A factor fitted to some runs: how far its value may go is the physics' (an efficiency above the
/// peak is refused: the fit stops at the bound and the residual says what is left).
struct Factor {
  Factor() = default;
  Factor(FactorKind kind_, double value_, std::string gpu_kind_ = {})
      : kind(kind_), value(value_), gpu_kind(std::move(gpu_kind_)) {}
  FactorKind kind = FactorKind::Gemm;
  double value = 1.0;
  /// Empty: every GPU kind (a shared factor). Otherwise a GPU kind's catalogue id (`t4-16gb`): the
  /// factor is that kind's alone and overrides the shared factor of the same name there. Only the
  /// factors of a GPU (is_gpu_factor) are per kind; a link joins GPUs of any kind.
  std::string gpu_kind;
  friend bool operator==(const Factor&, const Factor&) = default;
};

/// Whether `kind` scales a GPU's own rates or bytes (gemm, fp8_gemm, attention, memory_bound,
/// activation_memory), so that a profile may set it per GPU kind; the links' factors and all_rates (which
/// scales the links too) are shared.
[[nodiscard]] bool is_gpu_factor(FactorKind kind) noexcept;

/// The runs whose predicted steps a fitted factor moves (by kSmallestElasticity or more at the fit's
/// probe: calibrate.h), which set its value; written for per-kind fits, where the runs of one kind set
/// its factors and not the other's.
struct FactorRuns {
  FactorKind kind = FactorKind::Gemm;
  std::string gpu_kind;           ///< as Factor::gpu_kind
  std::vector<std::string> runs;  ///< in the runs files' order
  friend bool operator==(const FactorRuns&, const FactorRuns&) = default;
};

/// Which of the PyTorch caching allocator's peaks a run measured: `allocated` (live tensors,
/// max_memory_allocated) is compared with mpsim's peak less its runtime part (CUDA context,
/// workspaces, communicators, ZeRO 3's collective-stream pools: engine::StaticMemory::reserved), `reserved` (max_memory_reserved) with
/// the whole peak.
enum class PeakKind : std::uint8_t { Allocated, Reserved };
[[nodiscard]] std::string_view to_string(PeakKind kind) noexcept;
[[nodiscard]] std::optional<PeakKind> peak_kind_named(std::string_view name) noexcept;

/// One run whose measured peak memory the activation_memory factor was fitted on.
struct PeakResidual {
  std::string run;
  PeakKind kind = PeakKind::Reserved;
  double measured_gib = 0;
  double predicted_gib = 0;  ///< with the profile
  double uncalibrated_gib = 0;
  std::optional<int> stage;  ///< the pipeline stage the peak was logged on (MeasuredRun::peak_stage); none: every GPU
  [[nodiscard]] double error() const noexcept { return predicted_gib / measured_gib - 1; }
  friend bool operator==(const PeakResidual&, const PeakResidual&) = default;
};

/// One run the profile was fitted on: the measured step against the calibrated prediction.
struct FitResidual {
  std::string run;
  double measured_step_s = 0;
  double predicted_step_s = 0;  ///< with the profile
  double uncalibrated_step_s = 0;
  [[nodiscard]] double error() const noexcept { return predicted_step_s / measured_step_s - 1; }
};

/// A factor read from a run's kernel traces rather than fitted to its step (kernel_rates.h): the
/// predicted time of its kernels at the catalogue's rate over the measured time, per step on a traced
/// rank (the mean over the ranks).
struct ReadFactor {
  FactorKind kind = FactorKind::Gemm;
  double value = 1.0;
  std::int64_t kernels = 0;  ///< the kernels read, over every rank and profiled step
  double measured_s = 0;     ///< per step
  double predicted_s = 0;    ///< per step, at the catalogue's rates
  bool clamped = false;      ///< predicted / measured passed the factor's bounds; `value` is the bound
  friend bool operator==(const ReadFactor&, const ReadFactor&) = default;
};

struct SoftwareProfile {
  std::string name;
  /// At most one per kind and GPU kind: the shared ones (gpu_kind empty) first, then each GPU kind's.
  std::vector<Factor> factors;
  std::vector<std::string> gpu_kinds;    ///< catalogue ids of the runs' GPUs, sorted
  std::vector<FitResidual> residuals;    ///< the runs it was fitted on, in the runs files' order
  std::vector<PeakResidual> peak_residuals;  ///< the runs activation_memory was fitted on
  std::vector<ReadFactor> read_factors;  ///< of `factors`, those read from kernel traces (the rest were fitted)
  std::vector<FactorRuns> set_by;        ///< per-kind fits: the runs that set each fitted factor
  /// The shared factor of `kind`; 1 when absent.
  [[nodiscard]] double factor(FactorKind kind) const noexcept;
  /// What `kind` is on GPUs of `gpu_kind_id`: its own factor there, else the shared one, else 1.
  [[nodiscard]] double factor_on(FactorKind kind, std::string_view gpu_kind_id) const noexcept;
  /// How `kind` was set, in words: "read from kernel traces: N kernels, X ms measured vs Y ms predicted
  /// per step" or "fitted to the runs' steps" (activation_memory: "fitted to the runs' peaks").
  [[nodiscard]] std::string factor_source(FactorKind kind) const;
  /// Whether the profile was fitted on runs of this GPU kind.
  [[nodiscard]] bool fitted_on(std::string_view gpu_kind_id) const noexcept;
  friend bool operator==(const SoftwareProfile&, const SoftwareProfile&) = default;
};

/// The largest value a factor may take on `cluster` (on its GPUs of `gpu_kind_id` alone, for a per-kind
/// factor: none of that kind, no bound but the links' and HBM's): a kernel efficiency no higher than 1 of
/// the peak on any of its GPU kinds; activations no more than 4 x mpsim's count (kLargestActivationFactor);
/// a link or HBM no faster than 1.25 x its catalogue rate (collectives reach
/// 0.68-0.95 of a link's nominal rate, collective_tuning.h, so 1.25 x lets a stack beat those figures
/// without inventing bandwidth the hardware lacks).
[[nodiscard]] double factor_ceiling(FactorKind kind, const topology::Cluster& cluster,
                                    std::string_view gpu_kind_id = {}) noexcept;

/// The first of `factors` above its ceiling on `cluster` (a hand-edited profile, or one fitted on other
/// GPUs), said in a sentence; nothing when all are within.
[[nodiscard]] std::optional<std::string> factor_above_ceiling(const std::vector<Factor>& factors,
                                                              const topology::Cluster& cluster);

/// The cluster with `factors` applied: on each GPU kind, that kind's factor of a name where it has one,
/// else the shared factor (SoftwareProfile::factor_on); on each link, the shared link factors. Every
/// pass a stage prices, it prices with its own GPU kind's rates (engine/cost_model.h), so this is the
/// one place a per-kind factor enters; a factor for a GPU kind the cluster lacks changes nothing.
void apply_factors(const std::vector<Factor>& factors, topology::Cluster& cluster);
inline void apply_profile(const SoftwareProfile& profile, topology::Cluster& cluster) {
  apply_factors(profile.factors, cluster);
}

}  // namespace mpsim::calibration
