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

/// Where a rank sits on its node, as MPI says (MPI_Comm_split_type with MPI_COMM_TYPE_SHARED): its
/// rank among the node's ranks and their number. Launcher variables (SLURM_LOCALID and the like) are
/// not trusted: under srun with some MPIs they disagree with the ranks MPI groups on a node.
struct NodePlacement {
  int local_rank = 0;
  int local_ranks = 1;
};

/// The device of a rank, or why it has none. NCCL takes one GPU per rank (two ranks on one device fail
/// with "Duplicate GPU detected"), so rank i of a node uses device i, and a node with more ranks than
/// visible devices is an error naming both counts and the fix.
struct DeviceChoice {
  int device = -1;
  std::string error;  ///< empty when `device` is set
};
[[nodiscard]] inline DeviceChoice device_for_rank(NodePlacement on_node, int device_count) {
  if (device_count <= 0) return {-1, "no CUDA device visible to this process"};
  if (on_node.local_ranks > device_count) {
    return {-1, "this node runs " + std::to_string(on_node.local_ranks) + " ranks but sees " +
                    std::to_string(device_count) + " CUDA device" + (device_count == 1 ? "" : "s") +
                    ": NCCL needs one GPU per rank; start at most " + std::to_string(device_count) +
                    " ranks per node (mpirun --map-by ppr:" + std::to_string(device_count) +
                    ":node) or make more GPUs visible (CUDA_VISIBLE_DEVICES)"};
  }
  return {on_node.local_rank, {}};
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
