#pragma once
/// How long the kernels of a training step take on one GPU: weight GEMMs by their shape, attention
/// cores (FlashAttention or the materialized scores), and memory-bound elementwise work. The cost
/// model sums these per pass; nothing else in the simulator times compute.
///
/// GEMM model (docs/simulator.md, "Compute"): a GEMM [m x k] x [k x n] takes
///   max(2mnk / (peak x efficiency x tile utilization), bytes moved / HBM bandwidth) + launch latency
/// where the tile utilization is wave quantization over the SMs: ceil(m/128) x ceil(n/128) output
/// tiles run in waves of one tile per SM, and a partial last wave or a partial edge tile costs as
/// much as a full one.
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>

#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"
#include "sim/topology/gpu_kind.h"
#include "sim/trace/kernel_class.h"

namespace mpsim::engine {

/// What one GPU kind reaches in one precision.
struct KernelRates {
  FlopsPerSec gemm;              ///< large GEMMs: peak at the precision x its efficiency
  FlopsPerSec attention;         ///< FlashAttention: 16-bit peak x the attention efficiency of its generation
  FlopsPerSec standard_scores;   ///< the score matmuls of standard attention: 16-bit GEMMs
  BytesPerSec memory;            ///< HBM
  int sm_count = 0;              ///< 0: unknown, no wave quantization
  int gemm_input_bytes = 2;      ///< bytes per GEMM input element (1 for FP8)
  int activation_bytes = 2;      ///< the model's dtype: GEMM outputs and activations
  bool fp8 = false;
};

/// `attention_kernel`: the FlashAttention generation the run's software ships (the plan's), whose rate
/// the GPU kind gives (`attention_kernels`; a plan check requires it); unset: the kind's
/// `attention_efficiency`. Throws std::invalid_argument when the kind has no rate for it.
[[nodiscard]] KernelRates kernel_rates(const topology::GpuKind& gpu, plan::Precision precision, int dtype_bytes,
                                       std::optional<topology::AttentionGeneration> attention_kernel = std::nullopt);

/// The classes of kernel a software profile prices (trace/kernel_class.h, shared with the trace reader).
using trace::KernelClass;
using trace::kKernelClasses;

/// Kernel time split by class. The cost model keeps each pass's time in this form and charges its
/// total(), so a breakdown cannot drift from the time simulated. A layer's time profiled in the model
/// file has no class (`profiled`).
struct ClassTimes {
  std::array<TimeNs, kKernelClasses.size()> by_class{};
  TimeNs profiled;

  [[nodiscard]] static ClassTimes of(KernelClass c, TimeNs t) noexcept {
    ClassTimes out;
    out.by_class[static_cast<std::size_t>(c)] = t;
    return out;
  }
  [[nodiscard]] static ClassTimes of_profiled(TimeNs t) noexcept {
    ClassTimes out;
    out.profiled = t;
    return out;
  }
  [[nodiscard]] TimeNs operator[](KernelClass c) const noexcept { return by_class[static_cast<std::size_t>(c)]; }
  [[nodiscard]] TimeNs total() const noexcept {
    TimeNs sum = profiled;
    for (const TimeNs t : by_class) sum += t;
    return sum;
  }
  ClassTimes& operator+=(const ClassTimes& o) noexcept {
    for (std::size_t i = 0; i < by_class.size(); ++i) by_class[i] += o.by_class[i];
    profiled += o.profiled;
    return *this;
  }
  ClassTimes& operator-=(const ClassTimes& o) noexcept {
    for (std::size_t i = 0; i < by_class.size(); ++i) by_class[i] -= o.by_class[i];
    profiled -= o.profiled;
    return *this;
  }
  /// Every class `n` times (n passes of the same work).
  ClassTimes& operator*=(std::int64_t n) noexcept {
    for (TimeNs& t : by_class) t = t * n;
    profiled = profiled * n;
    return *this;
  }
  [[nodiscard]] friend ClassTimes operator+(ClassTimes a, const ClassTimes& b) noexcept { return a += b; }
  [[nodiscard]] friend ClassTimes operator-(ClassTimes a, const ClassTimes& b) noexcept { return a -= b; }
};

/// The class of the GEMMs `rates` times: FP8 under an FP8 precision.
[[nodiscard]] inline KernelClass gemm_class(const KernelRates& rates) noexcept {
  return rates.fp8 ? KernelClass::Fp8Gemm : KernelClass::Gemm;
}

/// [m x k] x [k x n], `groups` times in one grouped kernel (the routed experts).
struct GemmShape {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  std::int64_t groups = 1;
};

/// Output tiles' useful share of the SM-waves they occupy, in (0, 1]; 1 when the SM count is unknown.
[[nodiscard]] double tile_utilization(GemmShape shape, int sm_count) noexcept;
/// One GEMM's time (see the header comment); zero for an empty shape.
[[nodiscard]] TimeNs gemm_time(const KernelRates& rates, GemmShape shape) noexcept;

/// The three GEMMs of a layer's weight matrix multiply for `micro_batch` samples on one of `tensor`
/// ranks (its split decides which dimension shrinks): forward, activation gradient, weight gradient.
/// A grouped GEMM (the routed experts) runs on one of `expert` x `expert_tensor` ranks: its experts
/// divided by `expert`, its matrices split by `expert_tensor`, and the tokens a rank routes (its
/// 1/tensor share of the sequence) gathered over the expert-tensor group, spread over its experts.
/// expert_tensor 0 (the default) means the tensor degree, Megatron's default. `expert_load` scales a
/// grouped GEMM's rows to the busiest expert rank's (plan::Plan::expert_load).
struct GemmPasses {
  GemmShape forward;
  GemmShape backward_input;
  GemmShape backward_weight;
};
[[nodiscard]] GemmPasses gemm_passes(const model::Gemm& gemm, int micro_batch, int tensor, int expert = 1,
                                     int expert_tensor = 0, double expert_load = 1.0) noexcept;

/// Attention core time for `micro_batch` samples on one of `tensor` ranks. FlashAttention: FLOPs as
/// its papers count them (4 q kv d per head forward, halved under a causal mask; backward 2.5 x the
/// forward, which recomputes the scores) at the attention rate. Standard: the score matmuls (4 q kv d
/// per head forward, twice that backward) at the 16-bit GEMM rate; their softmax and dropout traffic
/// is elementwise work, counted by the caller.
struct AttentionTimes {
  TimeNs forward;
  TimeNs backward;
  KernelClass kernel_class = KernelClass::Attention;  ///< standard attention's matmuls: 16-bit GEMMs
};
[[nodiscard]] AttentionTimes attention_time(const KernelRates& rates, const model::AttentionCore& core,
                                            plan::AttentionKernel kernel, int micro_batch, int tensor) noexcept;

/// HBM traffic that FP8 GEMMs add: each quantized GEMM input is written row-wise and column-wise in
/// 8 bits (the second copy feeds the weight-gradient GEMM), 2 bytes per element. Forward: the
/// activation input; backward: the output gradient.
inline constexpr std::int64_t kFp8CastBytesPerElement = 2;

}  // namespace mpsim::engine
