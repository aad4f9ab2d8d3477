#pragma once
/// The two halves of a linear layer, shared by the dense and the mixture-of-experts blocks.
#include "executor/backend/backend.h"
#include "executor/net/layers.h"

namespace mpsim::executor {

/// y = x W (+ b): W is in x out.
inline void linear(const LayerContext& ctx, MatrixView x, const Param& w, const Param* b, MatrixView y) {
  ctx.backend->gemm(Transpose::No, Transpose::No, 1.0f, x, w.value(), 0.0f, y);
  if (b != nullptr) ctx.backend->add_row_vector(b->data, y);
}

/// dW += x^T dy; db += column sums of dy.
inline void linear_weight_grad(const LayerContext& ctx, MatrixView x, MatrixView dy, const Param& w, const Param* b) {
  ctx.backend->gemm(Transpose::Yes, Transpose::No, 1.0f, x, dy, 1.0f, w.gradient());
  if (b != nullptr) ctx.backend->sum_rows(dy, 1.0f, b->grad);
}

}  // namespace mpsim::executor
