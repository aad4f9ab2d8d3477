#include "sim/engine/kernel_time.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/plan/plan_check.h"

namespace mpsim::engine {
namespace {

/// Output tile edge of the GEMM kernels cuBLAS and CUTLASS pick for training shapes on A100, H100 and
/// B200 (128 x 128 and 128 x 256 thread-block tiles; the smaller one is taken so that a large GEMM is
/// not penalised for a tile choice the library would avoid). Source: the tile and wave quantization
/// rules of stas00/ml-engineering's training performance chapter.
constexpr std::int64_t kTileEdge = 128;
/// Fixed time of one GEMM beyond its FLOPs and bytes: launch, prologue and the last tiles' drain.
/// Fitted on the two smallest cuBLASLt rows of H100 FP8 (the Azure AI Benchmarking Guide's ND H100 v5
/// results: 1024^3 at 274 TFLOP/s and 2048^3 at 1011 TFLOP/s are both matched within
/// 5 % with 4.5 us once wave quantization is applied).
constexpr TimeNs kGemmLatency = TimeNs::ns(4'500);
/// FlashAttention's backward runs 5 matmuls to the forward's 2 (it recomputes the scores).
constexpr double kFlashBackwardPerForward = 2.5;
constexpr double kFlopsPerMac = 2.0;
/// Block-scaled FP8 GEMMs' rate against per-tensor FP8 ones on the same GPU: the block scales (MXFP8:
/// an E8M0 scale per 32 elements of each operand; DeepSeek's blockwise recipe: an FP32 scale per
/// 1 x 128 activation tile and 128 x 128 weight block) are loaded and applied inside the main loop.
/// No published GEMM table has both; fitted on the five Llama-3 8B pairs of Megatron-Bridge's tables
/// that differ only in the recipe (B200, GB200, GB300; 25.09 and 25.11: MXFP8 2.0-5.5 %, mean 3.9 %,
/// slower end to end), so that the simulated pairs differ by that mean (3.8 %). The blockwise recipe
/// uses it too (its one published pair, DeepSeek-V3 on 1024 H100 in 25.09: 2.4 % slower end to end).
constexpr double kBlockScaledGemmRateVsFp8 = 0.93;

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

}  // namespace

KernelRates kernel_rates(const topology::GpuKind& gpu, plan::Precision precision, int dtype_bytes,
                         std::optional<topology::AttentionGeneration> attention_kernel) {
  KernelRates r;
  const FlopsPerSec sixteen_bit = gpu.training_peak(2).value_or(gpu.peak.begin()->second);
  const FlopsPerSec gemm_peak = gpu.peak_for(plan::gemm_dtype(precision)).value_or(sixteen_bit);
  r.fp8 = plan::is_fp8(precision);
  r.gemm = gemm_peak * (r.fp8 ? gpu.fp8_matmul_efficiency : gpu.matmul_efficiency);
  if (precision == plan::Precision::Mxfp8 || precision == plan::Precision::Fp8Blockwise) {
    r.gemm = r.gemm * kBlockScaledGemmRateVsFp8;
  }
  const std::optional<double> attention_efficiency = gpu.attention_efficiency_of(attention_kernel);
  if (!attention_efficiency) {
    throw std::invalid_argument(fmt::format("{} has no attention rate for {} kernels", gpu.name,
                                            topology::to_string(*attention_kernel)));
  }
  r.attention = sixteen_bit * *attention_efficiency;
  r.standard_scores = sixteen_bit * gpu.matmul_efficiency;
  r.memory = gpu.memory_bandwidth;
  r.sm_count = gpu.sm_count;
  r.activation_bytes = dtype_bytes;
  r.gemm_input_bytes = r.fp8 ? 1 : (precision == plan::Precision::Fp32 ? 4 : 2);
  return r;
}

double tile_utilization(GemmShape shape, int sm_count) noexcept {
  if (sm_count <= 0 || shape.m <= 0 || shape.n <= 0) return 1.0;
  const std::int64_t tiles = shape.groups * ceil_div(shape.m, kTileEdge) * ceil_div(shape.n, kTileEdge);
  const std::int64_t waves = ceil_div(tiles, sm_count);
  const double occupied = static_cast<double>(waves) * sm_count * kTileEdge * kTileEdge;
  return static_cast<double>(shape.groups) * static_cast<double>(shape.m) * static_cast<double>(shape.n) / occupied;
}

TimeNs gemm_time(const KernelRates& rates, GemmShape s) noexcept {
  if (s.m <= 0 || s.n <= 0 || s.k <= 0) return TimeNs{};
  const double flops = kFlopsPerMac * static_cast<double>(s.groups) * static_cast<double>(s.m) *
                       static_cast<double>(s.n) * static_cast<double>(s.k);
  const TimeNs compute = compute_time(Flops::flop(flops / tile_utilization(s, rates.sm_count)), rates.gemm);
  const std::int64_t bytes =
      s.groups * ((s.m * s.k + s.k * s.n) * rates.gemm_input_bytes + s.m * s.n * rates.activation_bytes);
  const TimeNs memory = transfer_time(Bytes::bytes(bytes), rates.memory);
  return std::max(compute, memory) + kGemmLatency;
}

GemmPasses gemm_passes(const model::Gemm& g, int micro_batch, int tensor, int expert, int expert_tensor,
                       double expert_load) noexcept {
  const bool grouped = g.groups > 1;
  const int split = grouped && expert_tensor > 0 ? expert_tensor : tensor;
  const std::int64_t groups = grouped ? std::max<std::int64_t>(1, g.groups / std::max(1, expert)) : 1;
  // A grouped GEMM's rows: the tokens the rank routes, gathered over the expert-tensor group (with
  // expert_tensor = tensor, every token of the layer).
  std::int64_t routed = grouped ? ceil_div(g.tokens * micro_batch * split, tensor) : g.tokens * micro_batch;
  // The busiest expert rank's share, which the others wait for at the combine.
  if (grouped) routed = static_cast<std::int64_t>(std::ceil(static_cast<double>(routed) * expert_load));
  const std::int64_t tokens = ceil_div(routed, groups);  // per group
  const std::int64_t in = g.split == model::TensorSplit::Rows ? ceil_div(g.in, split) : g.in;
  const std::int64_t out = g.split == model::TensorSplit::Columns ? ceil_div(g.out, split) : g.out;
  return {GemmShape{tokens, out, in, groups}, GemmShape{tokens, in, out, groups}, GemmShape{in, out, tokens, groups}};
}

AttentionTimes attention_time(const KernelRates& rates, const model::AttentionCore& core, plan::AttentionKernel kernel,
                              int micro_batch, int tensor) noexcept {
  const double heads = static_cast<double>(ceil_div(core.heads, tensor));
  const double matmuls = kFlopsPerMac * core.score_macs_per_head() * heads * micro_batch;
  if (kernel == plan::AttentionKernel::Flash) {
    const double forward = core.causal ? matmuls / 2 : matmuls;
    return {compute_time(Flops::flop(forward), rates.attention),
            compute_time(Flops::flop(forward * kFlashBackwardPerForward), rates.attention)};
  }
  return {compute_time(Flops::flop(matmuls), rates.standard_scores),
          compute_time(Flops::flop(2 * matmuls), rates.standard_scores), KernelClass::Gemm};
}

}  // namespace mpsim::engine
