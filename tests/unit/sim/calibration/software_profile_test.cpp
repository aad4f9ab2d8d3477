// apply_factors on a shipped cluster: each factor scales exactly the rates its name says and nothing
// else; factor_ceiling stops an efficiency at the peak.
#include "sim/calibration/software_profile.h"

#include <algorithm>
#include <cstddef>

#include <gtest/gtest.h>

#include "calibration_test_support.h"
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
void expect_links_scaled(const topology::Cluster& before, const topology::Cluster& after, double nvlink, double network) {
  ASSERT_EQ(before.links().size(), after.links().size());
  for (std::size_t i = 0; i < before.links().size(); ++i) {
    const topology::Link& was = before.links()[i];
    const topology::Link& now = after.links()[i];
    SCOPED_TRACE(was.name);
    const double scale = was.kind == topology::LinkKind::NvLink ? nvlink : was.kind == topology::LinkKind::Net ? network : 1.0;
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
    apply_factors({{FactorKind::NvlinkTransfers, 0.5}, {FactorKind::NetworkTransfers, 0.25}}, after);
    expect_links_scaled(before, after, 0.5, 0.25);
    // No GPU rate moves with a link factor.
    for (std::size_t i = 0; i < before.gpu_kinds().size(); ++i) {
      EXPECT_DOUBLE_EQ(after.gpu_kinds()[i].matmul_efficiency, before.gpu_kinds()[i].matmul_efficiency);
      EXPECT_EQ(after.gpu_kinds()[i].memory_bandwidth, before.gpu_kinds()[i].memory_bandwidth);
    }
  }
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
  EXPECT_DOUBLE_EQ(factor_ceiling(FactorKind::MemoryBound, before), 1.25);
}

TEST(FactorNames, EveryKindReadsBackFromItsName) {
  for (const FactorKind kind : kFactorKinds) EXPECT_EQ(factor_kind_named(to_string(kind)), kind);
  EXPECT_FALSE(factor_kind_named("gem").has_value());
  EXPECT_EQ(factor_names().size(), kFactorKinds.size());
}

}  // namespace
}  // namespace mpsim::calibration
