#pragma once
/// The classes of GPU kernel a software profile prices with a factor each (calibration's gemm,
/// fp8_gemm, attention and memory_bound): one enum for the cost model, which splits each pass's time
/// by them (engine::ClassTimes), and for the trace reader, which sorts a profiler trace's kernels into
/// them by name (interop/trace), so the two sides meet without matching names.
#include <array>
#include <cstdint>
#include <string_view>

namespace mpsim::trace {

/// 16-bit GEMMs (the weight GEMMs, standard attention's score matmuls), FP8 GEMMs, FlashAttention
/// kernels, and memory-bound work (elementwise kernels, FP8 casts, the optimizer step).
enum class KernelClass : std::uint8_t { Gemm, Fp8Gemm, Attention, MemoryBound };
inline constexpr std::array<KernelClass, 4> kKernelClasses = {KernelClass::Gemm, KernelClass::Fp8Gemm,
                                                              KernelClass::Attention, KernelClass::MemoryBound};
/// The class's name: that of the software-profile factor that scales its rate.
[[nodiscard]] std::string_view to_string(KernelClass c) noexcept;

}  // namespace mpsim::trace
