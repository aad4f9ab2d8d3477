#pragma once
/// The one place CUDA, cuBLAS, NCCL and MPI return codes become errors. Each macro
/// evaluates its call once and, on failure, throws BackendError reading
///   "file:line: rank R: <call text> failed: <error string>"
/// The rank is asked of MPI when the error is built (MPI is initialised before any backend exists),
/// so helpers without a backend at hand report it too. Private to executor/backend/cuda/.
#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace mpsim::executor::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t code, const char* call, const char* file, int line);
/// Adds ncclGetLastError's explanation (the calling thread's last NCCL failure) to the result string.
[[noreturn]] void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line);
[[noreturn]] void throw_mpi_error(int code, const char* call, const char* file, int line);
/// Any other failure of this backend (bad arguments, a peer that timed out), with the same prefix.
[[noreturn]] void throw_backend_error(const char* file, int line, const std::string& what);

}  // namespace mpsim::executor::cuda

#define MPSIM_CUDA_TRY(call)                                                                  \
  do {                                                                                        \
    const cudaError_t mpsim_cuda_code_ = (call);                                              \
    if (mpsim_cuda_code_ != cudaSuccess) {                                                    \
      ::mpsim::executor::cuda::throw_cuda_error(mpsim_cuda_code_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (false)

#define MPSIM_CUBLAS_TRY(call)                                                                    \
  do {                                                                                            \
    const cublasStatus_t mpsim_cublas_code_ = (call);                                             \
    if (mpsim_cublas_code_ != CUBLAS_STATUS_SUCCESS) {                                            \
      ::mpsim::executor::cuda::throw_cublas_error(mpsim_cublas_code_, #call, __FILE__, __LINE__); \
    }                                                                                             \
  } while (false)

#define MPSIM_NCCL_TRY(call)                                                                  \
  do {                                                                                        \
    const ncclResult_t mpsim_nccl_code_ = (call);                                             \
    if (mpsim_nccl_code_ != ncclSuccess) {                                                    \
      ::mpsim::executor::cuda::throw_nccl_error(mpsim_nccl_code_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (false)

/// For calls on non-blocking communicators (ncclConfig_t::blocking = 0): ncclInProgress means NCCL
/// goes on with the call in the background and is not an error. The caller then waits for the
/// communicators involved to leave ncclInProgress (ncclCommGetAsyncError) before it issues anything
/// else to them or to the streams they use.
#define MPSIM_NCCL_TRY_ASYNC(call)                                                            \
  do {                                                                                        \
    const ncclResult_t mpsim_nccl_code_ = (call);                                             \
    if (mpsim_nccl_code_ != ncclSuccess && mpsim_nccl_code_ != ncclInProgress) {              \
      ::mpsim::executor::cuda::throw_nccl_error(mpsim_nccl_code_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (false)

#define MPSIM_MPI_TRY(call)                                                                 \
  do {                                                                                      \
    const int mpsim_mpi_code_ = (call);                                                     \
    if (mpsim_mpi_code_ != 0 /* MPI_SUCCESS */) {                                           \
      ::mpsim::executor::cuda::throw_mpi_error(mpsim_mpi_code_, #call, __FILE__, __LINE__); \
    }                                                                                       \
  } while (false)

/// Checks the launch of the kernel just issued (a bad configuration fails here, not later).
#define MPSIM_CUDA_TRY_LAUNCH() MPSIM_CUDA_TRY(cudaGetLastError())
