#pragma once
/// Launchers of the backend's small CUDA kernels (kernels.cu). Each enqueues its work on `stream`
/// and returns at once; every pointer is device memory, every view is row-major and strided
/// (MatrixView). Semantics are those of the same-named Backend methods (backend.h); the backend
/// has already checked shapes and skips empty work, and checks the launch afterwards.
#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

#include "executor/backend/backend.h"

namespace mpsim::executor::cuda {

/// Loads every kernel below now. With CUDA's lazy loading a kernel's first launch may wait for the
/// whole device, and so for an NCCL kernel that waits on a peer: loading them at start-up keeps
/// such waits out of the steps.
void preload_kernels();

void launch_fill(cudaStream_t stream, MatrixView m, float value);
void launch_axpy(cudaStream_t stream, float alpha, MatrixView x, MatrixView y);
void launch_add_row_vector(cudaStream_t stream, const float* bias, MatrixView y);
/// grad[c] = (beta == 0 ? 0 : beta * grad[c]) + sum over rows of dy[r, c].
void launch_sum_rows(cudaStream_t stream, MatrixView dy, float beta, float* grad);
void launch_gelu_forward(cudaStream_t stream, MatrixView x, MatrixView y);
void launch_gelu_backward(cudaStream_t stream, MatrixView x, MatrixView dy, MatrixView dx);
void launch_layer_norm_forward(cudaStream_t stream, MatrixView x, const float* gamma, const float* beta, float epsilon,
                               MatrixView y, float* mean, float* rstd);
/// dgamma and dbeta first, then dx, so dx may alias dy.
void launch_layer_norm_backward(cudaStream_t stream, MatrixView dy, MatrixView x, const float* gamma, const float* mean,
                                const float* rstd, MatrixView dx, float* dgamma, float* dbeta);
void launch_softmax_forward(cudaStream_t stream, MatrixView x, float scale, bool causal, MatrixView y);
void launch_softmax_backward(cudaStream_t stream, MatrixView y, MatrixView dy, float scale, MatrixView dx);
void launch_softmax_forward_lse(cudaStream_t stream, MatrixView x, float scale, bool causal, MatrixView y, float* lse);
void launch_softmax_from_lse(cudaStream_t stream, MatrixView x, float scale, bool causal, const float* lse,
                             MatrixView y);
void launch_merge_attention(cudaStream_t stream, MatrixView out, float* lse, MatrixView part, const float* part_lse);
void launch_row_dot(cudaStream_t stream, MatrixView a, MatrixView b, float* out);
void launch_softmax_backward_rows(cudaStream_t stream, MatrixView y, MatrixView dy, float scale, const float* row_sum,
                                  MatrixView dx);
/// tokens: out.rows device ints, each in [0, table.rows).
void launch_embedding_forward(cudaStream_t stream, MatrixView table, const std::int32_t* tokens, MatrixView out);
void launch_embedding_backward(cudaStream_t stream, MatrixView dout, const std::int32_t* tokens, MatrixView dtable);
/// Per row r: row_loss[r] = logsumexp(logits[r]) - logits[r, labels[r]];
/// dlogits[r] = scale * (softmax(logits[r]) - onehot(labels[r])) / logits.rows. dlogits may alias logits.
void launch_cross_entropy(cudaStream_t stream, MatrixView logits, const std::int32_t* labels, float scale,
                          MatrixView dlogits, float* row_loss);
/// header[0] = tag, header[1] = count: the envelope sent ahead of a point-to-point message.
void launch_write_header(cudaStream_t stream, std::int64_t* header, std::int64_t tag, std::int64_t count);
void launch_sgd_step(cudaStream_t stream, float* param, const float* grad, std::size_t count, float learning_rate);
/// bias1 = 1 - beta1^step, bias2 = 1 - beta2^step (computed once on the host).
void launch_adam_step(cudaStream_t stream, float* param, const float* grad, float* m, float* v, std::size_t count,
                      const AdamHyper& hyper, float bias1, float bias2);

}  // namespace mpsim::executor::cuda
