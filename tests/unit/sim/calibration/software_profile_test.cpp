// apply_factors on a shipped cluster: each factor scales exactly the rates its name says and nothing
// else; factor_ceiling stops an efficiency at the peak. A GPU kind's own factors (per kind) on AMP's
// mixed V100 / T4 cluster: they move that kind's rates alone, the cost model prices its stages with
// them and no other, and on a one-kind cluster they are the shared factors.
#include "sim/calibration/software_profile.h"

#include <algorithm>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "calibration_test_support.h"
#include "sim/calibration/calibrate.h"
#include "sim/calibration/profile_file.h"
#include "sim/core/yaml_field.h"
#include "sim/engine/cost_model.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::calibration {
namespace {

using testing::source_file;

/// 16 DGX H100: NVLink, PCIe, CPU-socket and network links, and a GPU kind with two attention
/// kernel generations (fa2, fa3), so every rate a factor may touch is there to be checked.
topology::Cluster h100_cluster() { return topology::load_topology_file(source_file("topologies/16x-dgx-h100.yaml")); }

std::size_t links_of_kind(const topology::Cluster& cluster, topology::LinkKind kind) {
  std::size_t n = 0;
  for (const topology::Link& link : cluster.links()) n += link.kind == kind ? 1 : 0;
  return n;
}

/// The link rates scaled by `nvlink` on NVLink links and `network` on network links; every other
/// link, and every latency, as before.
void expect_links_scaled(const topology::Cluster& before, const topology::Cluster& after, double nvlink, double network,
                         double pcie = 1.0) {
  ASSERT_EQ(before.links().size(), after.links().size());
  for (std::size_t i = 0; i < before.links().size(); ++i) {
    const topology::Link& was = before.links()[i];
    const topology::Link& now = after.links()[i];
    SCOPED_TRACE(was.name);
    const double scale = was.kind == topology::LinkKind::NvLink ? nvlink
                         : was.kind == topology::LinkKind::Net  ? network
                         : was.kind == topology::LinkKind::Pcie ? pcie
                                                                : 1.0;
    EXPECT_DOUBLE_EQ(now.bandwidth.in_bytes_per_sec(), was.bandwidth.in_bytes_per_sec() * scale);
    EXPECT_EQ(now.latency, was.latency);
  }
}

TEST(ApplyFactors, TheClusterHasEveryRateAFactorTouches) {
  const topology::Cluster cluster = h100_cluster();
  EXPECT_GT(links_of_kind(cluster, topology::LinkKind::NvLink), 0u);
  EXPECT_GT(links_of_kind(cluster, topology::LinkKind::Net), 0u);
  EXPECT_GT(links_of_kind(cluster, topology::LinkKind::Pcie), 0u);
  ASSERT_FALSE(cluster.gpu_kinds().empty());
  EXPECT_GE(cluster.gpu_kinds().front().attention_kernels.size(), 2u);
}

TEST(ApplyFactors, GemmScalesEveryGemmEfficiencyAndNothingElse) {
  const topology::Cluster before = h100_cluster();
  topology::Cluster after = before;
  apply_factors({{FactorKind::Gemm, 0.5}}, after);
  ASSERT_EQ(before.gpu_kinds().size(), after.gpu_kinds().size());
  for (std::size_t i = 0; i < before.gpu_kinds().size(); ++i) {
    const topology::GpuKind& was = before.gpu_kinds()[i];
    const topology::GpuKind& now = after.gpu_kinds()[i];
    EXPECT_DOUBLE_EQ(now.matmul_efficiency, was.matmul_efficiency * 0.5);
    EXPECT_DOUBLE_EQ(now.fp8_matmul_efficiency, was.fp8_matmul_efficiency * 0.5);
    EXPECT_DOUBLE_EQ(now.attention_efficiency, was.attention_efficiency);
    EXPECT_EQ(now.attention_kernels, was.attention_kernels);
    EXPECT_EQ(now.memory_bandwidth, was.memory_bandwidth);
  }
  // The GPUs themselves run at the new kind's numbers, not just the catalogue list.
  for (const topology::DeviceId gpu : after.gpus()) {
    EXPECT_DOUBLE_EQ(after.gpu_kind_of(gpu).matmul_efficiency, before.gpu_kind_of(gpu).matmul_efficiency * 0.5);
  }
  expect_links_scaled(before, after, 1.0, 1.0);
}

TEST(ApplyFactors, Fp8GemmScalesOnlyTheFp8Efficiency) {
  const topology::Cluster before = h100_cluster();
  topology::Cluster after = before;
  apply_factors({{FactorKind::Fp8Gemm, 0.5}}, after);
  for (std::size_t i = 0; i < before.gpu_kinds().size(); ++i) {
    EXPECT_DOUBLE_EQ(after.gpu_kinds()[i].fp8_matmul_efficiency, before.gpu_kinds()[i].fp8_matmul_efficiency * 0.5);
    EXPECT_DOUBLE_EQ(after.gpu_kinds()[i].matmul_efficiency, before.gpu_kinds()[i].matmul_efficiency);
  }
}

TEST(ApplyFactors, AttentionScalesTheEfficiencyAndEveryKernelGeneration) {
  const topology::Cluster before = h100_cluster();
  topology::Cluster after = before;
  apply_factors({{FactorKind::Attention, 0.7}}, after);
  for (std::size_t i = 0; i < before.gpu_kinds().size(); ++i) {
    const topology::GpuKind& was = before.gpu_kinds()[i];
    const topology::GpuKind& now = after.gpu_kinds()[i];
    EXPECT_DOUBLE_EQ(now.attention_efficiency, was.attention_efficiency * 0.7);
    ASSERT_EQ(now.attention_kernels.size(), was.attention_kernels.size());
    for (const auto& [generation, efficiency] : was.attention_kernels) {
      EXPECT_DOUBLE_EQ(now.attention_kernels.at(generation), efficiency * 0.7);
    }
    EXPECT_DOUBLE_EQ(now.matmul_efficiency, was.matmul_efficiency);
  }
  expect_links_scaled(before, after, 1.0, 1.0);
}

TEST(ApplyFactors, MemoryBoundScalesTheHbmBandwidth) {
  const topology::Cluster before = h100_cluster();
  topology::Cluster after = before;
  apply_factors({{FactorKind::MemoryBound, 0.6}}, after);
  for (std::size_t i = 0; i < before.gpu_kinds().size(); ++i) {
    const topology::GpuKind& was = before.gpu_kinds()[i];
    const topology::GpuKind& now = after.gpu_kinds()[i];
    EXPECT_DOUBLE_EQ(now.memory_bandwidth.in_bytes_per_sec(), was.memory_bandwidth.in_bytes_per_sec() * 0.6);
    EXPECT_DOUBLE_EQ(now.matmul_efficiency, was.matmul_efficiency);
    EXPECT_DOUBLE_EQ(now.attention_efficiency, was.attention_efficiency);
  }
  expect_links_scaled(before, after, 1.0, 1.0);
}

TEST(ApplyFactors, TransferFactorsScaleTheirOwnLinksOnly) {
  const topology::Cluster before = h100_cluster();
  {
    topology::Cluster after = before;
    apply_factors({{FactorKind::NvlinkTransfers, 0.5}}, after);
    expect_links_scaled(before, after, 0.5, 1.0);
  }
  {
    topology::Cluster after = before;
    apply_factors({{FactorKind::NetworkTransfers, 0.25}}, after);
    expect_links_scaled(before, after, 1.0, 0.25);
  }
  {
    topology::Cluster after = before;
    apply_factors({{FactorKind::PcieTransfers, 0.4}}, after);
    expect_links_scaled(before, after, 1.0, 1.0, 0.4);
  }
  {
    topology::Cluster after = before;
    apply_factors({{FactorKind::NvlinkTransfers, 0.5}, {FactorKind::NetworkTransfers, 0.25}, {FactorKind::PcieTransfers, 0.4}},
                  after);
    expect_links_scaled(before, after, 0.5, 0.25, 0.4);
    // No GPU rate moves with a link factor.
    for (std::size_t i = 0; i < before.gpu_kinds().size(); ++i) {
      EXPECT_DOUBLE_EQ(after.gpu_kinds()[i].matmul_efficiency, before.gpu_kinds()[i].matmul_efficiency);
      EXPECT_EQ(after.gpu_kinds()[i].memory_bandwidth, before.gpu_kinds()[i].memory_bandwidth);
    }
  }
}

// all_rates is every rate's own factor at once: the GPU's efficiencies, kernel generations and HBM, and
// every link (NVLink, PCIe, CPU sockets, network); no latency moves.
TEST(ApplyFactors, AllRatesScalesEveryRateAlikeAndNoLatency) {
  const topology::Cluster before = h100_cluster();
  topology::Cluster after = before;
  apply_factors({{FactorKind::AllRates, 0.5}}, after);
  topology::Cluster one_by_one = before;
  apply_factors({{FactorKind::Gemm, 0.5},
                 {FactorKind::Attention, 0.5},
                 {FactorKind::MemoryBound, 0.5},
                 {FactorKind::NvlinkTransfers, 0.5},
                 {FactorKind::NetworkTransfers, 0.5},
                 {FactorKind::PcieTransfers, 0.5}},
                one_by_one);
  for (std::size_t i = 0; i < before.gpu_kinds().size(); ++i) {
    const topology::GpuKind& now = after.gpu_kinds()[i];
    const topology::GpuKind& each = one_by_one.gpu_kinds()[i];
    EXPECT_DOUBLE_EQ(now.matmul_efficiency, each.matmul_efficiency);
    EXPECT_DOUBLE_EQ(now.fp8_matmul_efficiency, each.fp8_matmul_efficiency);
    EXPECT_DOUBLE_EQ(now.attention_efficiency, each.attention_efficiency);
    EXPECT_EQ(now.attention_kernels, each.attention_kernels);
    EXPECT_EQ(now.memory_bandwidth, each.memory_bandwidth);
    EXPECT_DOUBLE_EQ(now.activation_memory_factor, before.gpu_kinds()[i].activation_memory_factor);
  }
  EXPECT_GT(links_of_kind(before, topology::LinkKind::Smp), 0u);
  for (std::size_t i = 0; i < before.links().size(); ++i) {
    SCOPED_TRACE(before.links()[i].name);
    EXPECT_DOUBLE_EQ(after.links()[i].bandwidth.in_bytes_per_sec(), before.links()[i].bandwidth.in_bytes_per_sec() * 0.5);
    EXPECT_EQ(after.links()[i].latency, before.links()[i].latency);
  }
  EXPECT_FALSE(is_gpu_factor(FactorKind::AllRates));  // it moves the links too: shared, never per kind
}

// all_rates multiplies each rate's own factor, so a hand-written pair is held to the product: the GEMMs
// at their peak are fine alone and with all_rates 1 or below, not with all_rates above 1.
TEST(FactorCeiling, AllRatesAboveOneCountsAgainstEachRatesOwnBound) {
  const topology::Cluster cluster = h100_cluster();
  const double gemm_peak = factor_ceiling(FactorKind::Gemm, cluster);
  EXPECT_FALSE(factor_above_ceiling({{FactorKind::Gemm, gemm_peak}}, cluster));
  EXPECT_FALSE(factor_above_ceiling({{FactorKind::AllRates, 0.5}, {FactorKind::Gemm, gemm_peak}}, cluster));
  const auto why = factor_above_ceiling({{FactorKind::AllRates, 1.1}, {FactorKind::Gemm, gemm_peak}}, cluster);
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("gemm"), std::string::npos) << *why;
  EXPECT_NE(why->find("times all_rates 1.1"), std::string::npos) << *why;
}

TEST(FactorCeiling, AnEfficiencyStopsAtThePeakAndARateAtAQuarterAbove) {
  const topology::Cluster before = h100_cluster();
  const double gemm = factor_ceiling(FactorKind::Gemm, before);
  topology::Cluster at_ceiling = before;
  apply_factors({{FactorKind::Gemm, gemm}}, at_ceiling);
  // The higher of the two GEMM efficiencies reaches 1 of the peak exactly; neither passes it.
  for (const topology::GpuKind& kind : at_ceiling.gpu_kinds()) {
    EXPECT_LE(kind.matmul_efficiency, 1.0 + 1e-12);
    EXPECT_LE(kind.fp8_matmul_efficiency, 1.0 + 1e-12);
  }
  const topology::GpuKind& h100 = at_ceiling.gpu_kinds().front();
  EXPECT_NEAR(std::max(h100.matmul_efficiency, h100.fp8_matmul_efficiency), 1.0, 1e-12);
  // Attention: the best kernel generation reaches the peak.
  const double attention = factor_ceiling(FactorKind::Attention, before);
  const topology::GpuKind& was = before.gpu_kinds().front();
  double best = was.attention_efficiency;
  for (const auto& [generation, efficiency] : was.attention_kernels) best = std::max(best, efficiency);
  EXPECT_NEAR(attention * best, 1.0, 1e-12);
  EXPECT_DOUBLE_EQ(factor_ceiling(FactorKind::NetworkTransfers, before), 1.25);
  EXPECT_DOUBLE_EQ(factor_ceiling(FactorKind::PcieTransfers, before), 1.25);
  EXPECT_DOUBLE_EQ(factor_ceiling(FactorKind::MemoryBound, before), 1.25);
}

TEST(FactorNames, EveryKindReadsBackFromItsName) {
  for (const FactorKind kind : kFactorKinds) EXPECT_EQ(factor_kind_named(to_string(kind)), kind);
  EXPECT_FALSE(factor_kind_named("gem").has_value());
  EXPECT_EQ(factor_names().size(), kFactorKinds.size());
}

/// AMP's cluster: three p3.8xlarge (V100) and one g4dn.12xlarge (T4), the T4 node last.
topology::Cluster amp_cluster() { return topology::load_topology_file(source_file("topologies/amp-p3-g4-mixed.yaml")); }
constexpr const char* kT4 = "t4-16gb";
constexpr const char* kV100 = "v100-16gb";

const topology::GpuKind& kind_named(const topology::Cluster& cluster, const std::string& id) {
  const auto it = std::find_if(cluster.gpu_kinds().begin(), cluster.gpu_kinds().end(),
                               [&](const topology::GpuKind& k) { return k.id == id; });
  if (it == cluster.gpu_kinds().end()) throw std::out_of_range(id);
  return *it;
}

TEST(ApplyFactors, AKindsOwnFactorMovesThatKindAloneAndOverridesTheShared) {
  const topology::Cluster before = amp_cluster();
  ASSERT_EQ(before.gpu_kinds().size(), 2u);
  topology::Cluster after = before;
  // Shared gemm 0.5 everywhere but on the T4, whose own is 2; memory_bound 0.6 on the T4 only.
  apply_factors({{FactorKind::Gemm, 0.5}, {FactorKind::Gemm, 2.0, kT4}, {FactorKind::MemoryBound, 0.6, kT4}}, after);
  const topology::GpuKind& t4 = kind_named(after, kT4);
  const topology::GpuKind& v100 = kind_named(after, kV100);
  EXPECT_DOUBLE_EQ(t4.matmul_efficiency, kind_named(before, kT4).matmul_efficiency * 2.0);
  EXPECT_DOUBLE_EQ(t4.memory_bandwidth.in_bytes_per_sec(), kind_named(before, kT4).memory_bandwidth.in_bytes_per_sec() * 0.6);
  EXPECT_DOUBLE_EQ(v100.matmul_efficiency, kind_named(before, kV100).matmul_efficiency * 0.5);
  EXPECT_EQ(v100.memory_bandwidth, kind_named(before, kV100).memory_bandwidth);
  // Every GPU runs at its own kind's numbers.
  for (const topology::DeviceId gpu : after.gpus()) {
    const double scale = after.gpu_kind_of(gpu).id == kT4 ? 2.0 : 0.5;
    EXPECT_DOUBLE_EQ(after.gpu_kind_of(gpu).matmul_efficiency, before.gpu_kind_of(gpu).matmul_efficiency * scale);
  }
  expect_links_scaled(before, after, 1.0, 1.0);
}

TEST(ApplyFactors, AFactorOfAKindTheClusterLacksChangesNothing) {
  const topology::Cluster before = h100_cluster();
  topology::Cluster after = before;
  apply_factors({{FactorKind::Gemm, 0.5, kT4}}, after);
  EXPECT_EQ(after.gpu_kinds(), before.gpu_kinds());
  // Nor is it held to this cluster's ceilings.
  EXPECT_FALSE(factor_above_ceiling({{FactorKind::MemoryBound, 5.0, kT4}}, before).has_value());
}

TEST(ApplyFactors, FactorOnReadsTheKindsOwnThenTheShared) {
  SoftwareProfile p;
  p.factors = {{FactorKind::Gemm, 0.5}, {FactorKind::Gemm, 2.0, kT4}, {FactorKind::Attention, 0.7, kT4}};
  EXPECT_DOUBLE_EQ(p.factor(FactorKind::Gemm), 0.5);
  EXPECT_DOUBLE_EQ(p.factor_on(FactorKind::Gemm, kT4), 2.0);
  EXPECT_DOUBLE_EQ(p.factor_on(FactorKind::Gemm, kV100), 0.5);
  EXPECT_DOUBLE_EQ(p.factor(FactorKind::Attention), 1.0);
  EXPECT_DOUBLE_EQ(p.factor_on(FactorKind::Attention, kT4), 0.7);
}

TEST(FactorCeiling, AKindsOwnFactorIsBoundByThatKindAlone) {
  const topology::Cluster cluster = amp_cluster();
  const double t4 = 1.0 / std::max(kind_named(cluster, kT4).matmul_efficiency, kind_named(cluster, kT4).fp8_matmul_efficiency);
  const double v100 =
      1.0 / std::max(kind_named(cluster, kV100).matmul_efficiency, kind_named(cluster, kV100).fp8_matmul_efficiency);
  ASSERT_NE(t4, v100);
  EXPECT_DOUBLE_EQ(factor_ceiling(FactorKind::Gemm, cluster, kT4), t4);
  EXPECT_DOUBLE_EQ(factor_ceiling(FactorKind::Gemm, cluster, kV100), v100);
  EXPECT_DOUBLE_EQ(factor_ceiling(FactorKind::Gemm, cluster), std::min(t4, v100));
  // The T4's own factor may pass the V100's ceiling, not its own.
  const double between = (std::min(t4, v100) + std::max(t4, v100)) / 2;
  const std::string lower = t4 < v100 ? kT4 : kV100;
  const std::string higher = t4 < v100 ? kV100 : kT4;
  EXPECT_FALSE(factor_above_ceiling({{FactorKind::Gemm, between, higher}}, cluster).has_value());
  const auto why = factor_above_ceiling({{FactorKind::Gemm, between, lower}}, cluster);
  ASSERT_TRUE(why.has_value());
  EXPECT_NE(why->find("gemm on " + lower), std::string::npos) << *why;
  EXPECT_TRUE(factor_above_ceiling({{FactorKind::Gemm, between}}, cluster).has_value());
}

/// AMP's best plan (8 stages, the last on the T4 node) on `cluster`, priced by the engine's cost model.
struct AmpCosts {
  plan::Plan plan;
  engine::CostModel costs;
  std::vector<std::string> stage_kind;  ///< by pipeline rank
};

AmpCosts amp_costs(const topology::Cluster& cluster) {
  const model::Model model = model::load_model_file(source_file("configs/models/gpt2-medium-amp.yaml"));
  AmpCosts out;
  out.plan = plan::resolve_plan(plan::load_plan_file(source_file("configs/plans/amp-gpt2-het-best.yaml")), cluster, model);
  const plan::Layout layout(out.plan);
  out.costs = engine::build_cost_model(cluster, model, out.plan, layout);
  for (int rank = 0; rank < out.plan.degrees[plan::Axis::Pipeline]; ++rank) {
    const int first = layout.group(layout.with(0, plan::Axis::Pipeline, rank), plan::Axis::Tensor).front();
    out.stage_kind.push_back(cluster.gpu_kind_of(cluster.gpus().at(static_cast<std::size_t>(first))).id);
  }
  return out;
}

void expect_same_chunk(const engine::ChunkCost& a, const engine::ChunkCost& b) {
  EXPECT_EQ(a.forward, b.forward);
  EXPECT_EQ(a.backward, b.backward);
  EXPECT_EQ(a.backward_input, b.backward_input);
  EXPECT_EQ(a.backward_weight, b.backward_weight);
  EXPECT_EQ(a.kernels.by_class, b.kernels.by_class);
}

TEST(PerKindCost, AT4StagesElementwiseTimeScalesByItsFactorAndAV100StageIsUntouched) {
  const topology::Cluster before = amp_cluster();
  topology::Cluster after = before;
  constexpr double kFactor = 0.5;  // the T4's HBM at half its rate
  apply_factors({{FactorKind::MemoryBound, kFactor, kT4}}, after);
  const AmpCosts was = amp_costs(before);
  const AmpCosts now = amp_costs(after);
  ASSERT_EQ(was.stage_kind, now.stage_kind);
  ASSERT_NE(std::count(was.stage_kind.begin(), was.stage_kind.end(), kT4), 0);
  ASSERT_NE(std::count(was.stage_kind.begin(), was.stage_kind.end(), kV100), 0);
  for (std::size_t rank = 0; rank < was.stage_kind.size(); ++rank) {
    SCOPED_TRACE(rank);
    const engine::RankCost& a = was.costs.ranks[rank];
    const engine::RankCost& b = now.costs.ranks[rank];
    ASSERT_EQ(a.chunks.size(), b.chunks.size());
    if (was.stage_kind[rank] != kT4) {
      for (std::size_t c = 0; c < a.chunks.size(); ++c) expect_same_chunk(a.chunks[c], b.chunks[c]);
      EXPECT_EQ(a.optimizer_step, b.optimizer_step);
      continue;
    }
    // Elementwise work is bytes over the HBM's rate: each of its terms 1 / 0.5 times as long, to the
    // nanosecond each term is rounded to (at most one term per layer and pass).
    for (std::size_t c = 0; c < a.chunks.size(); ++c) {
      const auto elementwise = [](const engine::ChunkCost& k) {
        return k.kernels[engine::KernelClass::MemoryBound].to_seconds() * 1e9;
      };
      ASSERT_GT(elementwise(a.chunks[c]), 0);
      EXPECT_NEAR(elementwise(b.chunks[c]), elementwise(a.chunks[c]) / kFactor, 64);
    }
    const double step = a.optimizer_step.to_seconds() * 1e9;
    EXPECT_NEAR(b.optimizer_step.to_seconds() * 1e9, step / kFactor, 2);
  }
}

TEST(PerKindCost, AT4StageIsPricedAsIfItsKindWereEditedByHand) {
  // The per-kind factor goes through the one place the cost model reads a stage's rates: its GPU kind.
  const topology::Cluster before = amp_cluster();
  topology::Cluster with_factor = before;
  apply_factors({{FactorKind::Gemm, 1.5, kT4}}, with_factor);
  topology::Cluster by_hand = before;
  for (std::size_t i = 0; i < by_hand.gpu_kinds().size(); ++i) {
    topology::GpuKind kind = by_hand.gpu_kinds()[i];
    if (kind.id != kT4) continue;
    kind.matmul_efficiency *= 1.5;
    kind.fp8_matmul_efficiency *= 1.5;
    by_hand.replace_gpu_kind(static_cast<int>(i), kind);
  }
  const AmpCosts was = amp_costs(before);
  const AmpCosts factor = amp_costs(with_factor);
  const AmpCosts hand = amp_costs(by_hand);
  for (std::size_t rank = 0; rank < was.stage_kind.size(); ++rank) {
    SCOPED_TRACE(rank);
    for (std::size_t c = 0; c < was.costs.ranks[rank].chunks.size(); ++c) {
      expect_same_chunk(factor.costs.ranks[rank].chunks[c], hand.costs.ranks[rank].chunks[c]);
      const bool t4 = was.stage_kind[rank] == kT4;
      // A faster GEMM shortens the T4's forward, and only the T4's.
      if (t4) {
        EXPECT_LT(factor.costs.ranks[rank].chunks[c].forward, was.costs.ranks[rank].chunks[c].forward);
      } else {
        expect_same_chunk(factor.costs.ranks[rank].chunks[c], was.costs.ranks[rank].chunks[c]);
      }
    }
  }
}

TEST(PerKindCost, OnOneKindAKindsOwnFactorsPredictAsTheSharedOnes) {
  const MeasuredRun run = testing::runs_from(testing::gpt3_13b_row("p4d", "{step_time_s: 1}")).front();
  const std::string kind = run.gpu_kind();
  const std::vector<Factor> shared = {{FactorKind::Gemm, 0.8}, {FactorKind::Attention, 0.7}, {FactorKind::MemoryBound, 0.9},
                                      {FactorKind::NetworkTransfers, 0.6}};
  std::vector<Factor> own = shared;
  for (Factor& f : own) {
    if (is_gpu_factor(f.kind)) f.gpu_kind = kind;
  }
  const double step_shared = predict(run, shared).step_time_s;
  EXPECT_EQ(predict(run, own).step_time_s, step_shared);
  EXPECT_NE(step_shared, predict(run, {}).step_time_s);
  // And as files: a profile with only a per-kind entry, against the same factors shared.
  const auto load = [](const std::string& text) { return load_profile(YamlDocument::parse(text, "p.yaml").root()); };
  const SoftwareProfile per_kind = load("profile:\n  per_kind:\n    " + kind + ": {gemm: 0.8, attention: 0.7}\n");
  const SoftwareProfile as_shared = load("profile:\n  factors: {gemm: 0.8, attention: 0.7}\n");
  EXPECT_EQ(predict(run, per_kind.factors).step_time_s, predict(run, as_shared.factors).step_time_s);
}

}  // namespace
}  // namespace mpsim::calibration
