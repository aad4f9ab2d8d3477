#pragma once
/// The contract between make_backend("cuda") and the CUDA backend module it opens at run time: the
/// module's file name and the one function it exports. The factory throws BackendError as
/// make_cuda_backend() does; the caller owns the returned backend.
#include "executor/backend/backend.h"

#define MPSIM_CUDA_BACKEND_FACTORY mpsim_make_cuda_backend

namespace mpsim::executor {

inline constexpr const char* kCudaModuleFile = "libmpsim_cuda_backend.so";
inline constexpr const char* kCudaModuleFactory = "mpsim_make_cuda_backend";
using CudaBackendFactory = Backend* (*)(const BackendOptions*);

}  // namespace mpsim::executor
