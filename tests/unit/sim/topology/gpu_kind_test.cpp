#include "sim/core/yaml_field.h"
#include "sim/topology/gpu_kind.h"

#include <gtest/gtest.h>

#include "sim/core/input_error.h"

#include <optional>
#include <string>
#include <tuple>
#include <utility>

namespace mpsim::topology {
namespace {

// The built-in kinds carry their published numbers (configs/hardware/gpus.yaml names each source).
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
                      {"b200", 2250, 180, 8000},     {"gb200", 2500, 186, 8000},   {"b300", 2250, 288, 8000},
                      {"gb300", 2500, 279, 8000},   {"t4-16gb", 65, 16, 320}};
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
  EXPECT_FALSE(catalog.find("t4-16gb")->peak_for(DType::Bf16).has_value());    // nor has Turing
}

// SM counts: A100 108, H100/H200 132, B200 148 (stas00/ml-engineering training/performance, wave
// quantization); V100 80 (NVIDIA V100 whitepaper).
TEST(GpuCatalog, BuiltinSmCounts) {
  const auto& catalog = GpuCatalog::builtin();
  const std::pair<const char*, int> rows[] = {{"v100-16gb", 80},  {"v100-32gb", 80}, {"a100-40gb", 108},
                                              {"a100-80gb", 108}, {"h100-sxm", 132}, {"h200", 132},
                                              {"b200", 148},      {"b300", 148},     {"gb300", 152},
                                              {"gb200", 152},     {"t4-16gb", 40}};
  for (const auto& [id, sms] : rows) {
    const GpuKind* kind = catalog.find(id);
    ASSERT_NE(kind, nullptr) << id;
    EXPECT_EQ(kind->sm_count, sms) << id;
  }
  // V100's FP32 peak is 80 SMs x 64 FP32 lanes x 2 FLOP (FMA) x 1.53 GHz boost = 15.67 TFLOP/s.
  const GpuKind* v100 = catalog.find("v100-16gb");
  EXPECT_NEAR(v100->sm_count * 64 * 2 * 1.53e9, v100->peak_for(DType::Fp32)->in_flop_per_sec(), 0.005 * 15.7e12);
  // T4's is 40 SMs x 64 FP32 lanes x 2 FLOP x 1.59 GHz boost = 8.14 TFLOP/s (datasheet 8.1).
  const GpuKind* t4 = catalog.find("t4");
  EXPECT_NEAR(t4->sm_count * 64 * 2 * 1.59e9, t4->peak_for(DType::Fp32)->in_flop_per_sec(), 0.006 * 8.1e12);
  for (const std::string& name : catalog.names()) EXPECT_GT(catalog.find(name)->sm_count, 0) << name;
}

// Tensor-core peaks double per halving of the element width: tf32 = bf16 / 2, fp8 = 2 x bf16 (dense), fp16 =
// bf16, on every kind that lists them (the structure of the vendor tables, STAS_ACC).
TEST(GpuCatalog, TensorPeaksDoublePerHalvedWidth) {
  const auto& catalog = GpuCatalog::builtin();
  for (const std::string& name : catalog.names()) {
    const GpuKind& k = *catalog.find(name);
    const auto bf16 = k.peak_for(DType::Bf16);
    if (!bf16) continue;
    EXPECT_DOUBLE_EQ(k.peak_for(DType::Fp16)->in_flop_per_sec(), bf16->in_flop_per_sec()) << name;
    if (auto tf32 = k.peak_for(DType::Tf32)) {
      EXPECT_DOUBLE_EQ(2 * tf32->in_flop_per_sec(), bf16->in_flop_per_sec()) << name;
    }
    if (auto fp8 = k.peak_for(DType::Fp8)) {  // within the vendor's rounding: H100 989.4 -> 989, 1978.9 -> 1979
      EXPECT_NEAR(fp8->in_flop_per_sec(), 2 * bf16->in_flop_per_sec(), 1e-3 * fp8->in_flop_per_sec()) << name;
    }
  }
}

// matmul_efficiency = the best single-GEMM bf16 throughput mamf-finder measures / peak, times 0.76 (the ratio
// the A100 calibration on Megatron SC21 gives, configs/hardware/gpus.yaml), rounded to two places from the table's
// rounded percentage (B200: 77.6% x 0.76 = 0.590), hence the tolerance. MAMF rows:
// stas00/ml-engineering accelerator chapter.
TEST(GpuCatalog, MatmulEfficiencyFollowsTheMamfTable) {
  // The A100's value, fitted on Megatron SC21, is 0.76 of its mamf-finder maximum; every other kind
  // takes the same share of its own (16-bit and FP8).
  const double a100_ratio = GpuCatalog::builtin().find("a100-80gb")->matmul_efficiency / (271.2 / 312);
  EXPECT_NEAR(a100_ratio, 0.76, 0.005);
  const std::tuple<const char*, double, double> mamf[] = {
      {"h100-sxm", 794.5, 989}, {"b200", 1745.0, 2250}, {"gb200", 1822.0, 2500}, {"b300", 1769.0, 2250}};
  for (const auto& [id, measured, peak] : mamf) {
    const GpuKind* k = GpuCatalog::builtin().find(id);
    ASSERT_NE(k, nullptr) << id;
    EXPECT_DOUBLE_EQ(k->peak_for(DType::Bf16)->in_flop_per_sec(), peak * 1e12) << id;
    EXPECT_NEAR(k->matmul_efficiency, measured / peak * a100_ratio, 0.006) << id;
  }
  const std::tuple<const char*, double, double> mamf_fp8[] = {
      {"h100-sxm", 1402.6, 1979}, {"h200", 1453.4, 1979}, {"b200", 3432.5, 4500}, {"gb200", 3615.6, 5000}};
  for (const auto& [id, measured, peak] : mamf_fp8) {
    const GpuKind* k = GpuCatalog::builtin().find(id);
    EXPECT_NEAR(k->fp8_matmul_efficiency, measured / peak * a100_ratio, 0.006) << id;
  }
}

// Attention rates per kernel generation (configs/hardware/gpus.yaml attention_kernels): H100's
// FlashAttention-2 rate is its fwd 355 / bwd 337 TFLOP/s at 32k (Dao-AILab/flash-attention#1051)
// combined as FlashAttention counts a step
// (backward 2.5 x the forward's FLOPs), over 989; its FA3 rate is the default attention_efficiency.
TEST(GpuCatalog, AttentionRatesPerKernelGeneration) {
  const auto& catalog = GpuCatalog::builtin();
  const GpuKind* h100 = catalog.find("h100-sxm");
  const double fa2_step = 3.5 / (1.0 / 355 + 2.5 / 337);
  ASSERT_TRUE(h100->attention_efficiency_of(AttentionGeneration::Fa2).has_value());
  EXPECT_NEAR(*h100->attention_efficiency_of(AttentionGeneration::Fa2), fa2_step / 989, 0.001);
  EXPECT_DOUBLE_EQ(*h100->attention_efficiency_of(AttentionGeneration::Fa3), h100->attention_efficiency);
  EXPECT_DOUBLE_EQ(*h100->attention_efficiency_of(std::nullopt), 0.452);
  EXPECT_FALSE(h100->attention_efficiency_of(AttentionGeneration::Fa4).has_value());  // Blackwell's
  EXPECT_EQ(catalog.find("h200")->attention_kernels, h100->attention_kernels);          // the same die
  EXPECT_NEAR(*catalog.find("gb200")->attention_efficiency_of(AttentionGeneration::Fa2), 373.9 / 2500, 0.001);
  // On every kind the default is its newest generation's rate, and no older generation is faster.
  for (const std::string& name : catalog.names()) {
    const GpuKind* k = catalog.find(name);
    if (k->attention_kernels.empty()) continue;
    EXPECT_DOUBLE_EQ(k->attention_kernels.rbegin()->second, k->attention_efficiency) << name;
    double previous = 0;
    for (const auto& [generation, efficiency] : k->attention_kernels) {
      EXPECT_GE(efficiency, previous) << name << " " << to_string(generation);
      previous = efficiency;
    }
  }
}

TEST(GpuKind, AttentionKernelsAreKnownGenerations) {
  const auto load = [](const std::string& kernels) {
    const YamlDocument doc = YamlDocument::parse(
        "peak: { bf16: \"989 TFLOP/s\" }\nmemory: \"80 GiB\"\nmemory_bandwidth: \"3350 GB/s\"\n"
        "attention_efficiency: 0.45\nattention_kernels: " + kernels + "\n",
        "kind.yaml");
    return load_gpu_kind(doc.root(), "test");
  };
  const GpuKind k = load("{ fa2: 0.3, fa3: 0.45 }");
  EXPECT_DOUBLE_EQ(*k.attention_efficiency_of(AttentionGeneration::Fa2), 0.3);
  EXPECT_DOUBLE_EQ(*k.attention_efficiency_of(AttentionGeneration::Fa3), 0.45);
  EXPECT_THROW((void)load("{ fa5: 0.5 }"), InputError);
  EXPECT_THROW((void)load("{ fa2: 1.5 }"), InputError);
}

TEST(GpuCatalog, AliasesResolve) {
  const auto& catalog = GpuCatalog::builtin();
  EXPECT_EQ(catalog.find("a100-sxm4-80gb"), catalog.find("a100-80gb"));
  EXPECT_EQ(catalog.find("h100-sxm5-80gb")->id, "h100-sxm");
  EXPECT_EQ(catalog.find("tpu-v5"), nullptr);
  EXPECT_EQ(catalog.find("b300-sxm")->id, "b300");
  EXPECT_EQ(catalog.find("gb200-nvl72")->id, "gb200");
  EXPECT_EQ(catalog.find("gb300-sxm")->id, "gb300");
}

TEST(GpuCatalog, NvlinkBandwidthPerDirection) {
  // A100: 12 links x 25 GB/s = 300 GB/s per direction (600 GB/s bidirectional marketing figure).
  const GpuKind* a100 = GpuCatalog::builtin().find("a100-80gb");
  EXPECT_DOUBLE_EQ(a100->nvlink_bandwidth_per_link.in_bytes_per_sec() * a100->nvlink_links, 300e9);
  const GpuKind* h100 = GpuCatalog::builtin().find("h100-sxm");
  EXPECT_DOUBLE_EQ(h100->nvlink_bandwidth_per_link.in_bytes_per_sec() * h100->nvlink_links, 450e9);
  // NVLink 5 (B200, GB200, B300, GB300): 18 links x 50 GB/s = 900 GB/s per direction, 1.8 TB/s both ways.
  for (const char* id : {"b200", "gb200", "b300", "gb300"}) {
    const GpuKind* k = GpuCatalog::builtin().find(id);
    EXPECT_DOUBLE_EQ(2 * k->nvlink_bandwidth_per_link.in_bytes_per_sec() * k->nvlink_links, 1.8e12) << id;
  }
}

}  // namespace
}  // namespace mpsim::topology
