#include "sim/trace/kernel_class.h"

#include <cstddef>

namespace mpsim::trace {

std::string_view to_string(KernelClass c) noexcept {
  static constexpr std::array<std::string_view, kKernelClasses.size()> kNames = {"gemm", "fp8_gemm", "attention",
                                                                                 "memory_bound"};
  return kNames[static_cast<std::size_t>(c)];
}

}  // namespace mpsim::trace
