#include "sim/calibration/kernel_rates.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"

namespace mpsim::calibration {
namespace {

std::size_t index_of(engine::KernelClass c) { return static_cast<std::size_t>(c); }

/// The factor that scales a class's rate: the one of the same name.
ReadFactor bounded(FactorKind kind, double ratio, double ceiling, const KernelReading& reading) {
  ReadFactor f{kind, std::clamp(ratio, kSmallestRateFactor, ceiling), reading.kernels, reading.measured_s,
               reading.predicted_s, false};
  f.clamped = f.value != ratio;
  return f;
}

}  // namespace

FactorKind factor_of(trace::KernelClass c) noexcept {
  switch (c) {
    case trace::KernelClass::Gemm: return FactorKind::Gemm;
    case trace::KernelClass::Fp8Gemm: return FactorKind::Fp8Gemm;
    case trace::KernelClass::Attention: return FactorKind::Attention;
    case trace::KernelClass::MemoryBound: return FactorKind::MemoryBound;
  }
  return FactorKind::Gemm;
}

std::vector<engine::ClassTimes> predicted_kernel_times(const MeasuredRun& run) {
  const engine::CostModel costs = engine::build_cost_model(run.cluster, run.model, run.plan, plan::Layout(run.plan));
  std::vector<engine::ClassTimes> out;
  for (const engine::RankCost& rank : costs.ranks) out.push_back(engine::step_kernel_times(rank, run.plan.microbatches));
  return out;
}

std::vector<KernelReading> kernel_readings(const MeasuredRun& run, const std::vector<MeasuredKernels>& ranks) {
  const std::vector<engine::ClassTimes> predicted = predicted_kernel_times(run);
  std::vector<KernelReading> out;
  for (const engine::KernelClass c : engine::kKernelClasses) out.push_back({c, 0, 0, 0});
  if (ranks.empty()) return out;
  for (const MeasuredKernels& rank : ranks) {
    if (rank.stage < 0 || rank.stage >= static_cast<int>(predicted.size())) {
      throw std::invalid_argument(
          fmt::format("a traced rank is on pipeline rank {}, which the plan's {} pipeline ranks lack", rank.stage,
                      predicted.size()));
    }
    for (KernelReading& r : out) {
      const std::size_t i = index_of(r.kernel_class);
      r.kernels += rank.kernels[i];
      r.measured_s += rank.seconds_per_step[i];
      r.predicted_s += predicted[static_cast<std::size_t>(rank.stage)][r.kernel_class].to_seconds();
    }
  }
  for (KernelReading& r : out) {
    r.measured_s /= static_cast<double>(ranks.size());
    r.predicted_s /= static_cast<double>(ranks.size());
  }
  return out;
}

std::vector<ReadFactor> read_kernel_factors(const std::vector<KernelReading>& readings, const topology::Cluster& cluster) {
  const auto reading = [&](engine::KernelClass c) {
    for (const KernelReading& r : readings) {
      if (r.kernel_class == c) return r;
    }
    return KernelReading{c, 0, 0, 0};
  };
  const auto both = [](const KernelReading& r) { return r.measured_s > 0 && r.predicted_s > 0; };
  std::vector<ReadFactor> out;
  const KernelReading sixteen = reading(engine::KernelClass::Gemm);
  const KernelReading fp8 = reading(engine::KernelClass::Fp8Gemm);
  const double gemm_ceiling = factor_ceiling(FactorKind::Gemm, cluster);
  if (both(sixteen) && both(fp8)) {
    // Both kinds of GEMM on both sides: gemm from the 16-bit ones, fp8_gemm from the FP8 ones beyond it
    // (their rate is the catalogue's x gemm x fp8_gemm), the product within the FP8 peak.
    const ReadFactor gemm = bounded(FactorKind::Gemm, sixteen.predicted_s / sixteen.measured_s, gemm_ceiling, sixteen);
    out.push_back(gemm);
    const double fp8_ceiling = factor_ceiling(FactorKind::Fp8Gemm, cluster);
    out.push_back(bounded(FactorKind::Fp8Gemm, fp8.predicted_s / fp8.measured_s / gemm.value,
                          std::min(fp8_ceiling, fp8_ceiling / gemm.value), fp8));
  } else {
    // Every GEMM together: one side's FP8 GEMMs cannot be told from its 16-bit ones.
    const KernelReading all{engine::KernelClass::Gemm, sixteen.kernels + fp8.kernels,
                            sixteen.measured_s + fp8.measured_s, sixteen.predicted_s + fp8.predicted_s};
    if (both(all)) out.push_back(bounded(FactorKind::Gemm, all.predicted_s / all.measured_s, gemm_ceiling, all));
  }
  for (const engine::KernelClass c : {engine::KernelClass::Attention, engine::KernelClass::MemoryBound}) {
    const KernelReading r = reading(c);
    if (both(r)) out.push_back(bounded(factor_of(c), r.predicted_s / r.measured_s, factor_ceiling(factor_of(c), cluster), r));
  }
  return out;
}

}  // namespace mpsim::calibration
