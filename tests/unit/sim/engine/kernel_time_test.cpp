// Kernel times against closed forms worked out by hand from the GEMM model (kernel_time.h):
// max(2mnk / (peak x efficiency x tile utilization), bytes / HBM) + 4.5 us per GEMM.
#include "sim/engine/kernel_time.h"
#include "sim/engine/compute_contention.h"

#include <optional>
#include <stdexcept>

#include <gtest/gtest.h>

namespace mpsim::engine {
namespace {

topology::GpuKind h100() {
  topology::GpuKind g;
  g.id = "h100-test";
  g.peak = {{topology::DType::Bf16, FlopsPerSec::tflop_per_sec(989)}, {topology::DType::Fp8, FlopsPerSec::tflop_per_sec(1979)}};
  g.memory_bandwidth = BytesPerSec::gigabytes_per_sec(3350);
  g.sm_count = 132;
  g.matmul_efficiency = 0.6;
  g.fp8_matmul_efficiency = 0.5;
  g.attention_efficiency = 0.45;
  return g;
}

constexpr double kLatencyNs = 4'500;

TEST(KernelTime, TileUtilizationIsWaveQuantization) {
  // One 128 x 128 tile on 132 SMs fills one SM of the wave.
  EXPECT_DOUBLE_EQ(tile_utilization({128, 128, 64}, 132), 1.0 / 132);
  // 132 tiles: one full wave.
  EXPECT_DOUBLE_EQ(tile_utilization({128 * 132, 128, 64}, 132), 1.0);
  // 133 tiles: two waves, the second holding one tile.
  EXPECT_DOUBLE_EQ(tile_utilization({128 * 133, 128, 64}, 132), 133.0 / 264);
  // A partial edge tile costs a full one: 129 rows take two tile rows.
  EXPECT_DOUBLE_EQ(tile_utilization({129, 128 * 66, 64}, 132), 129.0 * 128 * 66 / (132.0 * 128 * 128));
  // Unknown SM count: no quantization.
  EXPECT_DOUBLE_EQ(tile_utilization({100, 100, 100}, 0), 1.0);
}

TEST(KernelTime, LargeGemmIsComputeBound) {
  const KernelRates r = kernel_rates(h100(), plan::Precision::Bf16, 2);
  // 8192^3: 64 x 64 = 4096 tiles, 32 waves of 132, utilization 4096 / 4224.
  const double flops = 2.0 * 8192.0 * 8192.0 * 8192.0;
  const double seconds = flops / (989e12 * 0.6 * (4096.0 / 4224.0));
  const TimeNs t = gemm_time(r, {8192, 8192, 8192});
  EXPECT_NEAR(static_cast<double>(t.base()), seconds * 1e9 + kLatencyNs, 2.0);
}

TEST(KernelTime, ThinGemmIsMemoryBound) {
  const KernelRates r = kernel_rates(h100(), plan::Precision::Bf16, 2);
  // k = 1: 2 x 8192 x 8192 FLOPs but 8192^2 output elements of 2 bytes (+ the inputs): HBM-bound.
  const double bytes = (8192.0 * 1 + 1 * 8192.0) * 2 + 8192.0 * 8192.0 * 2;
  const TimeNs t = gemm_time(r, {8192, 8192, 1});
  EXPECT_NEAR(static_cast<double>(t.base()), bytes / 3350e9 * 1e9 + kLatencyNs, 2.0);
}

TEST(KernelTime, Fp8RunsAtTheFp8PeakAndEfficiency) {
  const KernelRates bf16 = kernel_rates(h100(), plan::Precision::Bf16, 2);
  const KernelRates fp8 = kernel_rates(h100(), plan::Precision::Fp8, 2);
  EXPECT_DOUBLE_EQ(fp8.gemm.in_flop_per_sec(), 1979e12 * 0.5);
  EXPECT_DOUBLE_EQ(bf16.gemm.in_flop_per_sec(), 989e12 * 0.6);
  EXPECT_EQ(fp8.gemm_input_bytes, 1);
  EXPECT_TRUE(fp8.fp8);
  // MXFP8 uses the same tensor cores.
  // MXFP8: the FP8 rate less its block scales' 7 % (fitted on Megatron-Bridge's FP8/MXFP8 pairs).
  EXPECT_DOUBLE_EQ(kernel_rates(h100(), plan::Precision::Mxfp8, 2).gemm.in_flop_per_sec(), 1979e12 * 0.5 * 0.93);
  // Attention stays 16-bit.
  EXPECT_DOUBLE_EQ(fp8.attention.in_flop_per_sec(), 989e12 * 0.45);
}

TEST(KernelTime, GemmPassesSplitByTensorParallelism) {
  // Column-parallel [tokens x 4096] x [4096 x 12288] on 4 ranks, micro batch 2: the output splits.
  const GemmPasses c = gemm_passes(model::Gemm{1024, 4096, 12288, model::TensorSplit::Columns}, 2, 4);
  EXPECT_EQ(c.forward.m, 2048);
  EXPECT_EQ(c.forward.n, 3072);
  EXPECT_EQ(c.forward.k, 4096);
  EXPECT_EQ(c.backward_input.n, 4096);  // activation gradient: [tokens x out] x [out x in]
  EXPECT_EQ(c.backward_input.k, 3072);
  EXPECT_EQ(c.backward_weight.m, 4096);  // weight gradient: [in x tokens] x [tokens x out]
  EXPECT_EQ(c.backward_weight.n, 3072);
  EXPECT_EQ(c.backward_weight.k, 2048);
  // Row-parallel: the input splits.
  const GemmPasses r = gemm_passes(model::Gemm{1024, 12288, 4096, model::TensorSplit::Rows}, 1, 4);
  EXPECT_EQ(r.forward.k, 3072);
  EXPECT_EQ(r.forward.n, 4096);
}

TEST(KernelTime, FlashAttentionHalvesCausalScoresAndBackwardIsTwoAndAHalf) {
  const KernelRates r = kernel_rates(h100(), plan::Precision::Bf16, 2);
  const model::AttentionCore core{4096, 4096, 32, 128, true};
  // Forward: 4 q kv d per head, 32 heads over 2 ranks, micro batch 1, halved by the causal mask.
  const double forward = 4.0 * 4096 * 4096 * 128 * 16 / 2;
  const AttentionTimes flash = attention_time(r, core, plan::AttentionKernel::Flash, 1, 2);
  EXPECT_NEAR(static_cast<double>(flash.forward.base()), forward / (989e12 * 0.45) * 1e9, 1.0);
  EXPECT_NEAR(static_cast<double>(flash.backward.base()), 2.5 * forward / (989e12 * 0.45) * 1e9, 1.0);
  // Standard attention multiplies the whole s x s (the mask saves nothing) at the GEMM rate; backward twice.
  const AttentionTimes standard = attention_time(r, core, plan::AttentionKernel::Standard, 1, 2);
  EXPECT_NEAR(static_cast<double>(standard.forward.base()), 2 * forward / (989e12 * 0.6) * 1e9, 1.0);
  EXPECT_NEAR(static_cast<double>(standard.backward.base()), 4 * forward / (989e12 * 0.6) * 1e9, 1.0);
}

TEST(KernelTime, AttentionRateIsTheKernelGenerationsTheRunShips) {
  // The built-in H100: FA3's rate by default (attention_efficiency 0.452), FA2's (0.346, 342 of 989
  // TFLOP/s: FlashAttention-2 at 32k, Dao-AILab/flash-attention#1051) for a release that ships
  // FlashAttention-2-generation kernels (NeMo 24.03.01's long-sequence table).
  const topology::GpuKind& h100_sxm = *topology::GpuCatalog::builtin().find("h100-sxm");
  const auto rate = [&](std::optional<topology::AttentionGeneration> g) {
    return kernel_rates(h100_sxm, plan::Precision::Fp8, 2, g).attention.in_flop_per_sec();
  };
  EXPECT_DOUBLE_EQ(rate(std::nullopt), 989e12 * 0.452);
  EXPECT_DOUBLE_EQ(rate(topology::AttentionGeneration::Fa3), 989e12 * 0.452);
  EXPECT_DOUBLE_EQ(rate(topology::AttentionGeneration::Fa2), 989e12 * 0.346);
  // The GEMMs do not change with it.
  EXPECT_DOUBLE_EQ(
      kernel_rates(h100_sxm, plan::Precision::Fp8, 2, topology::AttentionGeneration::Fa2).gemm.in_flop_per_sec(),
      kernel_rates(h100_sxm, plan::Precision::Fp8, 2).gemm.in_flop_per_sec());
  // A flash core of the same shape takes 0.452 / 0.346 as long.
  const model::AttentionCore core{32768, 32768, 32, 128, true};
  const AttentionTimes fa3 =
      attention_time(kernel_rates(h100_sxm, plan::Precision::Bf16, 2), core, plan::AttentionKernel::Flash, 1, 1);
  const AttentionTimes fa2 =
      attention_time(kernel_rates(h100_sxm, plan::Precision::Bf16, 2, topology::AttentionGeneration::Fa2), core,
                     plan::AttentionKernel::Flash, 1, 1);
  EXPECT_NEAR(static_cast<double>(fa2.backward.base()) / static_cast<double>(fa3.backward.base()), 0.452 / 0.346,
              1e-6);
  // No FA4 kernels run on Hopper: no rate to take.
  EXPECT_THROW((void)rate(topology::AttentionGeneration::Fa4), std::invalid_argument);
  // A kind without a table answers only for its default.
  EXPECT_DOUBLE_EQ(kernel_rates(h100(), plan::Precision::Bf16, 2).attention.in_flop_per_sec(), 989e12 * 0.45);
  EXPECT_THROW((void)kernel_rates(h100(), plan::Precision::Bf16, 2, topology::AttentionGeneration::Fa2),
               std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::engine

namespace mpsim::engine {
namespace {

// A pass beside NCCL's kernels gets the SMs their 16 channels leave: 132 / (132 - 16) on H100.
TEST(ComputeContention, PassBesideCommunicationGetsTheLeftoverSms) {
  const topology::GpuKind gpu = h100();
  EXPECT_EQ(contended_compute(TimeNs::ns(116'000), gpu).base(), 132'000);
  topology::GpuKind unknown = gpu;
  unknown.sm_count = 0;
  EXPECT_EQ(contended_compute(TimeNs::ns(116'000), unknown).base(), 116'000);
}

TEST(KernelTime, GroupedGemmIsItsGroupsInOneKernel) {
  const KernelRates r = kernel_rates(h100(), plan::Precision::Bf16, 2);
  // 8 experts of 256 rows: the FLOPs and output tiles of one 2048-row GEMM, compute-bound either way.
  EXPECT_EQ(gemm_time(r, {256, 4096, 4096, 8}), gemm_time(r, {2048, 4096, 4096, 1}));
  // 128 experts of 16 rows: each a partial 128-row tile, so eight times the tile work of dense rows.
  const TimeNs sparse = gemm_time(r, {16, 4096, 4096, 128});
  const TimeNs dense = gemm_time(r, {2048, 4096, 4096, 1});
  EXPECT_GT(sparse, dense * 4);
  // The passes of a grouped layer GEMM split its rows over the groups.
  const GemmPasses p = gemm_passes(model::Gemm{4096, 512, 1024, model::TensorSplit::Columns, 8}, 2, 2);
  EXPECT_EQ(p.forward.m, 1024);
  EXPECT_EQ(p.forward.n, 512);
  EXPECT_EQ(p.forward.groups, 8);
  EXPECT_EQ(p.backward_weight.k, 1024);
}

}  // namespace
}  // namespace mpsim::engine
