#include "sim/calibration/software_profile.h"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace mpsim::calibration {

namespace {
constexpr std::array<std::string_view, kFactorKinds.size()> kFactorNames = {
    "all_rates",        "gemm",           "fp8_gemm",          "attention",        "memory_bound",
    "nvlink_transfers", "network_transfers", "pcie_transfers", "activation_memory"};
/// Links and HBM: how far above the nominal rate a factor may go (see factor_ceiling).
constexpr double kRateCeiling = 1.25;

}  // namespace

std::string_view to_string(FactorKind kind) noexcept { return kFactorNames[static_cast<std::size_t>(kind)]; }

std::optional<FactorKind> factor_kind_named(std::string_view name) noexcept {
  for (FactorKind kind : kFactorKinds) {
    if (to_string(kind) == name) return kind;
  }
  return std::nullopt;
}

std::span<const std::string_view> factor_names() noexcept { return kFactorNames; }

std::string_view to_string(PeakKind kind) noexcept { return kind == PeakKind::Allocated ? "allocated" : "reserved"; }

std::optional<PeakKind> peak_kind_named(std::string_view name) noexcept {
  for (const PeakKind kind : {PeakKind::Allocated, PeakKind::Reserved}) {
    if (to_string(kind) == name) return kind;
  }
  return std::nullopt;
}

bool is_gpu_factor(FactorKind kind) noexcept {
  return kind != FactorKind::AllRates && kind != FactorKind::NvlinkTransfers && kind != FactorKind::NetworkTransfers &&
         kind != FactorKind::PcieTransfers;
}

double SoftwareProfile::factor(FactorKind kind) const noexcept { return factor_on(kind, {}); }

double SoftwareProfile::factor_on(FactorKind kind, std::string_view gpu_kind_id) const noexcept {
  const Factor* shared = nullptr;
  for (const Factor& f : factors) {
    if (f.kind != kind) continue;
    if (!gpu_kind_id.empty() && f.gpu_kind == gpu_kind_id) return f.value;
    if (f.gpu_kind.empty()) shared = &f;
  }
  return shared != nullptr ? shared->value : 1.0;
}

std::string SoftwareProfile::factor_source(FactorKind kind) const {
  for (const ReadFactor& r : read_factors) {
    if (r.kind != kind) continue;
    return fmt::format("read from kernel traces: {} kernels, {:.4g} ms measured vs {:.4g} ms predicted per step{}",
                       r.kernels, r.measured_s * 1e3, r.predicted_s * 1e3,
                       r.clamped ? " (clamped to the factor's bound)" : "");
  }
  return kind == FactorKind::ActivationMemory ? "fitted to the runs' peaks" : "fitted to the runs' steps";
}

bool SoftwareProfile::fitted_on(std::string_view gpu_kind_id) const noexcept {
  return std::find(gpu_kinds.begin(), gpu_kinds.end(), gpu_kind_id) != gpu_kinds.end();
}

double factor_ceiling(FactorKind kind, const topology::Cluster& cluster, std::string_view gpu_kind_id) noexcept {
  // Every rate alike: no further than the tightest of their own bounds.
  if (kind == FactorKind::AllRates) {
    return std::min({factor_ceiling(FactorKind::Gemm, cluster, gpu_kind_id),
                     factor_ceiling(FactorKind::Attention, cluster, gpu_kind_id), kRateCeiling});
  }
  const bool efficiency = kind == FactorKind::Gemm || kind == FactorKind::Fp8Gemm || kind == FactorKind::Attention;
  if (kind == FactorKind::ActivationMemory) return kLargestActivationFactor;
  double ceiling = efficiency ? std::numeric_limits<double>::infinity() : kRateCeiling;
  for (const topology::GpuKind& gpu : cluster.gpu_kinds()) {
    if (!gpu_kind_id.empty() && gpu.id != gpu_kind_id) continue;
    switch (kind) {
      case FactorKind::Gemm:
        ceiling = std::min({ceiling, 1.0 / gpu.matmul_efficiency, 1.0 / gpu.fp8_matmul_efficiency});
        break;
      case FactorKind::Fp8Gemm:
        ceiling = std::min(ceiling, 1.0 / gpu.fp8_matmul_efficiency);
        break;
      case FactorKind::Attention:
        ceiling = std::min(ceiling, 1.0 / gpu.attention_efficiency);
        for (const auto& [generation, efficiency] : gpu.attention_kernels) ceiling = std::min(ceiling, 1.0 / efficiency);
        break;
      default:
        break;
    }
  }
  return ceiling;
}

std::optional<std::string> factor_above_ceiling(const std::vector<Factor>& factors, const topology::Cluster& cluster) {
  // all_rates multiplies every rate's own factor: above 1 it may carry one past its bound.
  double all_rates = 1.0;
  for (const Factor& f : factors) {
    if (f.kind == FactorKind::AllRates) all_rates = f.value;
  }
  for (const Factor& f : factors) {
    // A factor of a GPU kind the cluster lacks is not applied there (apply_factors).
    if (!f.gpu_kind.empty() && std::none_of(cluster.gpu_kinds().begin(), cluster.gpu_kinds().end(),
                                            [&](const topology::GpuKind& g) { return g.id == f.gpu_kind; })) {
      continue;
    }
    const double ceiling = factor_ceiling(f.kind, cluster, f.gpu_kind);
    const bool scaled = f.kind != FactorKind::AllRates && f.kind != FactorKind::ActivationMemory && all_rates > 1.0;
    const double value = scaled ? f.value * all_rates : f.value;
    // The fit stops at the ceiling itself; what it writes is rounded to 6 digits.
    if (value > ceiling * (1 + 1e-5)) {
      return fmt::format("{}{} {:.6g}{} is above what this cluster allows ({:.6g}: a kernel efficiency beyond its GPUs' "
                         "peak, a link or HBM beyond 1.25 x its rate, or activations beyond 4 x mpsim's count)",
                         to_string(f.kind), f.gpu_kind.empty() ? "" : " on " + f.gpu_kind, f.value,
                         scaled ? fmt::format(" times all_rates {:.6g}", all_rates) : "", ceiling);
    }
  }
  return std::nullopt;
}

void apply_factors(const std::vector<Factor>& factors, topology::Cluster& cluster) {
  for (std::size_t i = 0; i < cluster.gpu_kinds().size(); ++i) {
    topology::GpuKind gpu = cluster.gpu_kinds()[i];
    // A factor of this kind's own overrides the shared one of its name.
    const auto overridden = [&](const Factor& shared) {
      return std::any_of(factors.begin(), factors.end(),
                         [&](const Factor& f) { return f.kind == shared.kind && f.gpu_kind == gpu.id; });
    };
    for (const Factor& f : factors) {
      if (f.gpu_kind.empty() ? overridden(f) : f.gpu_kind != gpu.id) continue;
      const bool every_rate = f.kind == FactorKind::AllRates;
      // every GEMM: a stack's GEMM path (its kernels, launches, layouts) serves all precisions
      if (every_rate || f.kind == FactorKind::Gemm) {
        gpu.matmul_efficiency *= f.value;
        gpu.fp8_matmul_efficiency *= f.value;
      }
      if (f.kind == FactorKind::Fp8Gemm) gpu.fp8_matmul_efficiency *= f.value;
      if (every_rate || f.kind == FactorKind::Attention) {
        gpu.attention_efficiency *= f.value;
        for (auto& [generation, efficiency] : gpu.attention_kernels) efficiency *= f.value;
      }
      if (every_rate || f.kind == FactorKind::MemoryBound) gpu.memory_bandwidth = gpu.memory_bandwidth * f.value;
      if (f.kind == FactorKind::ActivationMemory) gpu.activation_memory_factor *= f.value;
    }
    cluster.replace_gpu_kind(static_cast<int>(i), std::move(gpu));
  }
  for (std::size_t i = 0; i < cluster.links().size(); ++i) {
    const topology::Link& link = cluster.links()[i];
    double scale = 1.0;
    for (const Factor& f : factors) {
      if (!f.gpu_kind.empty()) continue;  // links are shared (is_gpu_factor)
      if (f.kind == FactorKind::AllRates || (f.kind == FactorKind::NvlinkTransfers && link.kind == topology::LinkKind::NvLink) ||
          (f.kind == FactorKind::NetworkTransfers && link.kind == topology::LinkKind::Net) ||
          (f.kind == FactorKind::PcieTransfers && link.kind == topology::LinkKind::Pcie)) {
        scale *= f.value;
      }
    }
    if (scale != 1.0) {
      cluster.set_link_rate(topology::LinkId{static_cast<std::uint32_t>(i)}, link.bandwidth * scale,
                            link.latency);
    }
  }
}

}  // namespace mpsim::calibration
