#include "executor/backend/cuda/cuda_check.h"

#include <fmt/format.h>
#include <mpi.h>

#include <cstring>
#include <string>

#include "executor/backend/backend.h"

namespace mpsim::executor::cuda {
namespace {

/// "rank R" when MPI can tell (it always can once a backend exists), else "rank ?".
std::string rank_text() {
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  int rank = -1;
  if (initialized != 0 && finalized == 0 && MPI_Comm_rank(MPI_COMM_WORLD, &rank) == MPI_SUCCESS) {
    return fmt::format("rank {}", rank);
  }
  return "rank ?";
}

/// __FILE__ without the directories above the repository's executor/ folder.
const char* short_file(const char* file) {
  const char* found = std::strstr(file, "executor/");
  return found != nullptr ? found : file;
}

[[noreturn]] void raise(const char* file, int line, const std::string& what) {
  throw BackendError(fmt::format("{}:{}: {}: {}", short_file(file), line, rank_text(), what));
}

}  // namespace

void throw_cuda_error(cudaError_t code, const char* call, const char* file, int line) {
  raise(file, line, fmt::format("{} failed: {} ({})", call, cudaGetErrorString(code), cudaGetErrorName(code)));
}

void throw_cublas_error(cublasStatus_t code, const char* call, const char* file, int line) {
  raise(file, line, fmt::format("{} failed: {} ({})", call, cublasGetStatusString(code), cublasGetStatusName(code)));
}

void throw_nccl_error(ncclResult_t code, const char* call, const char* file, int line) {
  const char* last = ncclGetLastError(nullptr);
  raise(file, line,
        fmt::format("{} failed: {}{}{}", call, ncclGetErrorString(code), last != nullptr && *last != '\0' ? ": " : "",
                    last != nullptr ? last : ""));
}

void throw_mpi_error(int code, const char* call, const char* file, int line) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  MPI_Error_string(code, text, &length);
  raise(file, line, fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(length))));
}

void throw_backend_error(const char* file, int line, const std::string& what) { raise(file, line, what); }

}  // namespace mpsim::executor::cuda
