#pragma once
/// Pure rules of the CUDA backend, kept free of CUDA headers so they are tested on any machine:
/// which device a rank uses, and how a row-major gemm becomes one column-major cuBLAS call.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "executor/backend/backend.h"

namespace mpsim::executor::cuda {

/// The node-local rank the launcher exported: Open MPI's OMPI_COMM_WORLD_LOCAL_RANK first, then
/// Slurm's SLURM_LOCALID (srun). Either argument may be null (unset); a value that is not a
/// non-negative integer counts as unset. Empty when neither is usable: the backend then asks MPI
/// (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED).
[[nodiscard]] inline std::optional<int> local_rank_from_launcher(const char* ompi_local_rank,
                                                                 const char* slurm_local_id) noexcept {
  for (const char* text : {ompi_local_rank, slurm_local_id}) {
    if (text == nullptr) continue;
    const std::string_view view(text);
    int value = -1;
    const auto [end, error] = std::from_chars(view.data(), view.data() + view.size(), value);
    if (error == std::errc() && end == view.data() + view.size() && value >= 0) return value;
  }
  return std::nullopt;
}

/// Device of a rank: its node-local rank modulo the devices it sees (so 8 ranks on a node with 8
/// GPUs use one each, and more ranks than GPUs share them round-robin). device_count > 0.
[[nodiscard]] constexpr int device_for_local_rank(int local_rank, int device_count) noexcept {
  return local_rank % device_count;
}

/// One cublasSgemm call in column-major terms. A row-major r x c matrix with leading dimension ld
/// is, read column-major, its c x r transpose with the same ld. So row-major C = op(A) op(B) is
/// column-major C^T = op(B)^T op(A)^T: cuBLAS's first operand is B (transposed iff tb), its second
/// is A (transposed iff ta), m = N (columns of C), n = M (rows of C), k = the inner dimension.
struct ColumnMajorGemm {
  bool transpose_first = false;
  bool transpose_second = false;
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  const float* first = nullptr;
  std::int64_t ld_first = 0;
  const float* second = nullptr;
  std::int64_t ld_second = 0;
  float* c = nullptr;
  std::int64_t ldc = 0;
};

/// Empty when op(a) (M x K), op(b) (K x N) and c (M x N) agree; else a message naming the shapes.
[[nodiscard]] inline std::string gemm_shape_error(Transpose ta, Transpose tb, MatrixView a, MatrixView b,
                                                  MatrixView c) {
  const bool at = ta == Transpose::Yes;
  const bool bt = tb == Transpose::Yes;
  const std::int64_t a_rows = at ? a.cols : a.rows;
  const std::int64_t a_cols = at ? a.rows : a.cols;
  const std::int64_t b_rows = bt ? b.cols : b.rows;
  const std::int64_t b_cols = bt ? b.rows : b.cols;
  if (a_rows == c.rows && b_cols == c.cols && a_cols == b_rows) return {};
  return "gemm shapes disagree: op(a) is " + std::to_string(a_rows) + "x" + std::to_string(a_cols) + ", op(b) is " +
         std::to_string(b_rows) + "x" + std::to_string(b_cols) + ", c is " + std::to_string(c.rows) + "x" +
         std::to_string(c.cols);
}

/// The column-major call computing row-major c = alpha op(a) op(b) + beta c (shapes already checked).
[[nodiscard]] inline ColumnMajorGemm to_column_major(Transpose ta, Transpose tb, MatrixView a, MatrixView b,
                                                     MatrixView c) noexcept {
  ColumnMajorGemm call;
  call.transpose_first = tb == Transpose::Yes;
  call.transpose_second = ta == Transpose::Yes;
  call.m = c.cols;
  call.n = c.rows;
  call.k = ta == Transpose::Yes ? a.rows : a.cols;
  call.first = b.data;
  call.ld_first = b.ld;
  call.second = a.data;
  call.ld_second = a.ld;
  call.c = c.data;
  call.ldc = c.ld;
  return call;
}

}  // namespace mpsim::executor::cuda
