#pragma once
/// The one place a backend is chosen by name.
#include <memory>
#include <string_view>

#include "executor/backend/backend.h"

namespace mpsim::executor {

/// "cpu" (Eigen + MPI) or "cuda" (cuBLAS + NCCL; only when built with MPSIM_WITH_CUDA). Throws
/// BackendError for an unknown or unavailable backend.
[[nodiscard]] std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options);

}  // namespace mpsim::executor
