#pragma once
/// The one place a backend is chosen by name.
#include <memory>
#include <string_view>

#include "executor/backend/backend.h"

namespace mpsim::executor {

/// "cpu" (Eigen + MPI) or "cuda" (cuBLAS + NCCL, in the module libmpsim_cuda_backend.so that a build
/// with MPSIM_WITH_CUDA writes beside mpsim, opened here at first use; MPSIM_CUDA_BACKEND names another
/// path). Throws BackendError for an unknown backend, or when the module cannot be loaded.
[[nodiscard]] std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options);

}  // namespace mpsim::executor
