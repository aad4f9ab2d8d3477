#include "sim/topology/gpu_kind.h"

#include <gtest/gtest.h>

namespace mpsim::topology {
namespace {

// The built-in kinds carry the numbers of shared/reference/hardware_specs.yaml.
TEST(GpuCatalog, BuiltinKindsMatchTheReference) {
  const auto& catalog = GpuCatalog::builtin();
  struct Row {
    const char* id;
    double bf16_or_fp16_tflops;
    double memory_gib;
    double hbm_gb_per_s;
  };
  const Row rows[] = {{"v100-16gb", 125, 16, 900},   {"v100-32gb", 125, 32, 900},  {"a100-40gb", 312, 40, 1555},
                      {"a100-80gb", 312, 80, 2039},  {"h100-sxm", 989, 80, 3350},  {"h200", 989, 141, 4800},
                      {"b200", 2250, 180, 8000}};
  for (const Row& row : rows) {
    const GpuKind* kind = catalog.find(row.id);
    ASSERT_NE(kind, nullptr) << row.id;
    const auto peak = kind->peak_for(DType::Bf16) ? kind->peak_for(DType::Bf16) : kind->peak_for(DType::Fp16);
    ASSERT_TRUE(peak.has_value()) << row.id;
    EXPECT_DOUBLE_EQ(peak->in_flop_per_sec(), row.bf16_or_fp16_tflops * 1e12) << row.id;
    EXPECT_EQ(kind->memory, Bytes::gib(row.memory_gib)) << row.id;
    EXPECT_DOUBLE_EQ(kind->memory_bandwidth.in_bytes_per_sec(), row.hbm_gb_per_s * 1e9) << row.id;
  }
  EXPECT_FALSE(catalog.find("v100-16gb")->peak_for(DType::Bf16).has_value());  // Volta has no bf16
}

// SM counts: A100 108, H100/H200 132, B200 148 (stas00/ml-engineering training/performance, as quoted in
// shared/reference/kernels_and_collectives.yaml, gemm.rules.wave_quantization); V100 80 (NVIDIA V100 whitepaper).
TEST(GpuCatalog, BuiltinSmCounts) {
  const auto& catalog = GpuCatalog::builtin();
  const std::pair<const char*, int> rows[] = {{"v100-16gb", 80},  {"v100-32gb", 80}, {"a100-40gb", 108},
                                              {"a100-80gb", 108}, {"h100-sxm", 132}, {"h200", 132},
                                              {"b200", 148}};
  for (const auto& [id, sms] : rows) {
    const GpuKind* kind = catalog.find(id);
    ASSERT_NE(kind, nullptr) << id;
    EXPECT_EQ(kind->sm_count, sms) << id;
  }
  // V100's FP32 peak is 80 SMs x 64 FP32 lanes x 2 FLOP (FMA) x 1.53 GHz boost = 15.67 TFLOP/s.
  const GpuKind* v100 = catalog.find("v100-16gb");
  EXPECT_NEAR(v100->sm_count * 64 * 2 * 1.53e9, v100->peak_for(DType::Fp32)->in_flop_per_sec(), 0.005 * 15.7e12);
  for (const std::string& name : catalog.names()) EXPECT_GT(catalog.find(name)->sm_count, 0) << name;
}

TEST(GpuCatalog, AliasesResolve) {
  const auto& catalog = GpuCatalog::builtin();
  EXPECT_EQ(catalog.find("a100-sxm4-80gb"), catalog.find("a100-80gb"));
  EXPECT_EQ(catalog.find("h100-sxm5-80gb")->id, "h100-sxm");
  EXPECT_EQ(catalog.find("tpu-v5"), nullptr);
}

TEST(GpuCatalog, NvlinkBandwidthPerDirection) {
  // A100: 12 links x 25 GB/s = 300 GB/s per direction (600 GB/s bidirectional marketing figure).
  const GpuKind* a100 = GpuCatalog::builtin().find("a100-80gb");
  EXPECT_DOUBLE_EQ(a100->nvlink_bandwidth_per_link.in_bytes_per_sec() * a100->nvlink_links, 300e9);
  const GpuKind* h100 = GpuCatalog::builtin().find("h100-sxm");
  EXPECT_DOUBLE_EQ(h100->nvlink_bandwidth_per_link.in_bytes_per_sec() * h100->nvlink_links, 450e9);
}

}  // namespace
}  // namespace mpsim::topology
