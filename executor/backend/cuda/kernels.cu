// The backend's elementwise and row kernels. Row kernels give one block to a row and reduce in
// shared memory, reading a row before writing it so outputs may alias inputs where backend.h
// allows it. Column sums (sum_rows, layer-norm parameter gradients) give each block 32 columns
// and add rows in a fixed order, so results do not depend on scheduling; only the embedding
// backward (atomicAdd into rows that repeat) does.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/cuda/kernels.h"

namespace mpsim::executor::cuda {
namespace {

constexpr int kThreads = 256;    // elementwise kernels and row kernels
constexpr int kColumnTile = 32;  // columns per block in the column sums
constexpr int kRowLanes = 8;     // rows added concurrently per column tile
constexpr std::int64_t kMaxBlocks = 1 << 16;
constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kGeluCubic = 0.044715f;

unsigned blocks_for(std::int64_t work) {
  return static_cast<unsigned>(std::clamp<std::int64_t>((work + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__device__ __forceinline__ float& at(MatrixView m, std::int64_t r, std::int64_t c) { return m.data[r * m.ld + c]; }

enum class Reduce { Sum, Max };

/// Reduction over the block (blockDim.x == kThreads); every thread gets the result. Ends with a
/// barrier, so shared memory and the row may be touched again right after.
template <Reduce kind>
__device__ float block_reduce(float value) {
  __shared__ float partial[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) {
    const float other = __shfl_xor_sync(0xffffffffu, value, offset);
    value = kind == Reduce::Sum ? value + other : fmaxf(value, other);
  }
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int warp = static_cast<int>(threadIdx.x) / 32;
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  float result = partial[0];
  for (int w = 1; w < kThreads / 32; ++w)
    result = kind == Reduce::Sum ? result + partial[w] : fmaxf(result, partial[w]);
  __syncthreads();
  return result;
}

/// Grid-stride loop over the rows x cols elements of a view: calls f(r, c).
template <class F>
__device__ void for_each_element(std::int64_t rows, std::int64_t cols, F f) {
  const std::int64_t total = rows * cols;
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total; i += stride) {
    f(i / cols, i % cols);
  }
}

__global__ void fill_kernel(MatrixView m, float value) {
  for_each_element(m.rows, m.cols, [&](std::int64_t r, std::int64_t c) { at(m, r, c) = value; });
}

__global__ void axpy_kernel(float alpha, MatrixView x, MatrixView y) {
  for_each_element(y.rows, y.cols, [&](std::int64_t r, std::int64_t c) { at(y, r, c) += alpha * at(x, r, c); });
}

__global__ void add_row_vector_kernel(const float* bias, MatrixView y) {
  for_each_element(y.rows, y.cols, [&](std::int64_t r, std::int64_t c) { at(y, r, c) += bias[c]; });
}

__global__ void gelu_forward_kernel(MatrixView x, MatrixView y) {
  for_each_element(x.rows, x.cols, [&](std::int64_t r, std::int64_t c) {
    const float v = at(x, r, c);
    at(y, r, c) = 0.5f * v * (1.0f + tanhf(kSqrt2OverPi * (v + kGeluCubic * v * v * v)));
  });
}

__global__ void gelu_backward_kernel(MatrixView x, MatrixView dy, MatrixView dx) {
  for_each_element(x.rows, x.cols, [&](std::int64_t r, std::int64_t c) {
    const float v = at(x, r, c);
    const float t = tanhf(kSqrt2OverPi * (v + kGeluCubic * v * v * v));
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kGeluCubic * v * v);
    at(dx, r, c) = at(dy, r, c) * (0.5f * (1.0f + t) + 0.5f * v * (1.0f - t * t) * du);
  });
}

/// Column sums over a tile of 32 columns: first[c] (= beta * first[c] + sum of a(r, c)) and, when
/// `second` is set, second[c] += sum of b(r, c). Rows are added in the same order on every run.
template <class A, class B>
__device__ void column_sums(std::int64_t rows, std::int64_t cols, float beta, float* first, A a, float* second, B b) {
  __shared__ float sum_a[kRowLanes][kColumnTile + 1];
  __shared__ float sum_b[kRowLanes][kColumnTile + 1];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kColumnTile + threadIdx.x;
  float acc_a = 0.0f;
  float acc_b = 0.0f;
  if (c < cols) {
    for (std::int64_t r = threadIdx.y; r < rows; r += kRowLanes) {
      acc_a += a(r, c);
      if (second != nullptr) acc_b += b(r, c);
    }
  }
  sum_a[threadIdx.y][threadIdx.x] = acc_a;
  sum_b[threadIdx.y][threadIdx.x] = acc_b;
  __syncthreads();
  if (threadIdx.y != 0 || c >= cols) return;
  float total_a = 0.0f;
  float total_b = 0.0f;
  for (int lane = 0; lane < kRowLanes; ++lane) {
    total_a += sum_a[lane][threadIdx.x];
    total_b += sum_b[lane][threadIdx.x];
  }
  first[c] = (beta == 0.0f ? 0.0f : beta * first[c]) + total_a;
  if (second != nullptr) second[c] += total_b;
}

__global__ void sum_rows_kernel(MatrixView dy, float beta, float* grad) {
  const auto value = [&](std::int64_t r, std::int64_t c) { return at(dy, r, c); };
  column_sums(dy.rows, dy.cols, beta, grad, value, nullptr, value);
}

__global__ void layer_norm_params_kernel(MatrixView dy, MatrixView x, const float* mean, const float* rstd,
                                         float* dgamma, float* dbeta) {
  const auto dgamma_term = [&](std::int64_t r, std::int64_t c) {
    return at(dy, r, c) * ((at(x, r, c) - mean[r]) * rstd[r]);
  };
  const auto dbeta_term = [&](std::int64_t r, std::int64_t c) { return at(dy, r, c); };
  column_sums(dy.rows, dy.cols, 1.0f, dgamma, dgamma_term, dbeta, dbeta_term);
}

__global__ void layer_norm_forward_kernel(MatrixView x, const float* gamma, const float* beta, float epsilon,
                                          MatrixView y, float* mean, float* rstd) {
  const std::int64_t r = blockIdx.x;
  const auto n = static_cast<float>(x.cols);
  float sum = 0.0f;
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) sum += at(x, r, c);
  const float mu = block_reduce<Reduce::Sum>(sum) / n;
  float squares = 0.0f;
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) {
    const float d = at(x, r, c) - mu;
    squares += d * d;
  }
  const float rs = rsqrtf(block_reduce<Reduce::Sum>(squares) / n + epsilon);
  if (threadIdx.x == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) {
    at(y, r, c) = (at(x, r, c) - mu) * rs * gamma[c] + beta[c];
  }
}

__global__ void layer_norm_dx_kernel(MatrixView dy, MatrixView x, const float* gamma, const float* mean,
                                     const float* rstd, MatrixView dx) {
  const std::int64_t r = blockIdx.x;
  const auto n = static_cast<float>(x.cols);
  const float mu = mean[r];
  const float rs = rstd[r];
  float sum_g = 0.0f;
  float sum_gx = 0.0f;
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) {
    const float g = at(dy, r, c) * gamma[c];
    sum_g += g;
    sum_gx += g * ((at(x, r, c) - mu) * rs);
  }
  const float mean_g = block_reduce<Reduce::Sum>(sum_g) / n;
  const float mean_gx = block_reduce<Reduce::Sum>(sum_gx) / n;
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) {
    const float xhat = (at(x, r, c) - mu) * rs;
    const float g = at(dy, r, c) * gamma[c];
    at(dx, r, c) = rs * (g - mean_g - xhat * mean_gx);
  }
}

__global__ void softmax_forward_kernel(MatrixView x, float scale, bool causal, MatrixView y) {
  const std::int64_t r = blockIdx.x;
  // Row r of a causal block keeps columns 0..r + max(0, cols - rows) (all of them once that reaches cols).
  const std::int64_t last = r + 1 + (x.cols > x.rows ? x.cols - x.rows : 0);
  const std::int64_t keep = causal && last < x.cols ? last : x.cols;
  float top = -INFINITY;
  for (std::int64_t c = threadIdx.x; c < keep; c += kThreads) top = fmaxf(top, scale * at(x, r, c));
  top = block_reduce<Reduce::Max>(top);
  float sum = 0.0f;
  for (std::int64_t c = threadIdx.x; c < keep; c += kThreads) sum += expf(scale * at(x, r, c) - top);
  const float inv = 1.0f / block_reduce<Reduce::Sum>(sum);
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) {
    at(y, r, c) = c < keep ? expf(scale * at(x, r, c) - top) * inv : 0.0f;
  }
}

__global__ void softmax_backward_kernel(MatrixView y, MatrixView dy, float scale, MatrixView dx) {
  const std::int64_t r = blockIdx.x;
  float dot = 0.0f;
  for (std::int64_t c = threadIdx.x; c < y.cols; c += kThreads) dot += at(dy, r, c) * at(y, r, c);
  dot = block_reduce<Reduce::Sum>(dot);
  for (std::int64_t c = threadIdx.x; c < y.cols; c += kThreads) {
    at(dx, r, c) = scale * at(y, r, c) * (at(dy, r, c) - dot);
  }
}

/// Columns row r keeps under softmax_forward's causal rule (backend.h).
__device__ std::int64_t kept_columns(MatrixView x, std::int64_t r, bool causal) {
  const std::int64_t last = r + 1 + (x.cols > x.rows ? x.cols - x.rows : 0);
  return causal && last < x.cols ? last : x.cols;
}

__global__ void softmax_forward_lse_kernel(MatrixView x, float scale, bool causal, MatrixView y, float* lse) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t keep = kept_columns(x, r, causal);
  float top = -INFINITY;
  for (std::int64_t c = threadIdx.x; c < keep; c += kThreads) top = fmaxf(top, scale * at(x, r, c));
  top = block_reduce<Reduce::Max>(top);
  float sum = 0.0f;
  for (std::int64_t c = threadIdx.x; c < keep; c += kThreads) sum += expf(scale * at(x, r, c) - top);
  const float log_sum = top + logf(block_reduce<Reduce::Sum>(sum));
  if (threadIdx.x == 0) lse[r] = log_sum;
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) {
    at(y, r, c) = c < keep ? expf(scale * at(x, r, c) - log_sum) : 0.0f;
  }
}

__global__ void softmax_from_lse_kernel(MatrixView x, float scale, bool causal, const float* lse, MatrixView y) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t keep = kept_columns(x, r, causal);
  for (std::int64_t c = threadIdx.x; c < x.cols; c += kThreads) {
    at(y, r, c) = c < keep ? expf(scale * at(x, r, c) - lse[r]) : 0.0f;
  }
}

__global__ void merge_attention_kernel(MatrixView out, float* lse, MatrixView part, const float* part_lse) {
  const std::int64_t r = blockIdx.x;
  const float top = fmaxf(lse[r], part_lse[r]);
  const float merged = top + logf(expf(lse[r] - top) + expf(part_lse[r] - top));
  const float keep = expf(lse[r] - merged);
  const float take = expf(part_lse[r] - merged);
  for (std::int64_t c = threadIdx.x; c < out.cols; c += kThreads) {
    at(out, r, c) = keep * at(out, r, c) + take * at(part, r, c);
  }
  __syncthreads();  // every thread has read lse[r] before it changes
  if (threadIdx.x == 0) lse[r] = merged;
}

__global__ void row_dot_kernel(MatrixView a, MatrixView b, float* out) {
  const std::int64_t r = blockIdx.x;
  float dot = 0.0f;
  for (std::int64_t c = threadIdx.x; c < a.cols; c += kThreads) dot += at(a, r, c) * at(b, r, c);
  dot = block_reduce<Reduce::Sum>(dot);
  if (threadIdx.x == 0) out[r] = dot;
}

__global__ void softmax_backward_rows_kernel(MatrixView y, MatrixView dy, float scale, const float* row_sum,
                                             MatrixView dx) {
  const std::int64_t r = blockIdx.x;
  for (std::int64_t c = threadIdx.x; c < y.cols; c += kThreads) {
    at(dx, r, c) = scale * at(y, r, c) * (at(dy, r, c) - row_sum[r]);
  }
}

__global__ void embedding_forward_kernel(MatrixView table, const std::int32_t* tokens, MatrixView out) {
  for_each_element(out.rows, out.cols,
                   [&](std::int64_t r, std::int64_t c) { at(out, r, c) += at(table, tokens[r], c); });
}

__global__ void embedding_backward_kernel(MatrixView dout, const std::int32_t* tokens, MatrixView dtable) {
  for_each_element(dout.rows, dout.cols,
                   [&](std::int64_t r, std::int64_t c) { atomicAdd(&at(dtable, tokens[r], c), at(dout, r, c)); });
}

__global__ void cross_entropy_kernel(MatrixView logits, const std::int32_t* labels, float scale, float inv_rows,
                                     MatrixView dlogits, float* row_loss) {
  const std::int64_t r = blockIdx.x;
  const std::int32_t label = labels[r];
  const float label_logit = at(logits, r, label);  // read before any thread writes dlogits (may alias)
  float top = -INFINITY;
  for (std::int64_t c = threadIdx.x; c < logits.cols; c += kThreads) top = fmaxf(top, at(logits, r, c));
  top = block_reduce<Reduce::Max>(top);
  float sum = 0.0f;
  for (std::int64_t c = threadIdx.x; c < logits.cols; c += kThreads) sum += expf(at(logits, r, c) - top);
  const float log_sum = logf(block_reduce<Reduce::Sum>(sum)) + top;
  if (threadIdx.x == 0) row_loss[r] = log_sum - label_logit;
  for (std::int64_t c = threadIdx.x; c < logits.cols; c += kThreads) {
    const float p = expf(at(logits, r, c) - log_sum);
    at(dlogits, r, c) = scale * (p - (c == label ? 1.0f : 0.0f)) * inv_rows;
  }
}

__global__ void write_header_kernel(std::int64_t* header, std::int64_t tag, std::int64_t count) {
  header[0] = tag;
  header[1] = count;
}

__global__ void sgd_kernel(float* param, const float* grad, std::size_t count, float learning_rate) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    param[i] -= learning_rate * grad[i];
  }
}

__global__ void adam_kernel(float* param, const float* grad, float* m, float* v, std::size_t count, AdamHyper hyper,
                            float bias1, float bias2) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const float g = grad[i];
    const float mi = hyper.beta1 * m[i] + (1.0f - hyper.beta1) * g;
    const float vi = hyper.beta2 * v[i] + (1.0f - hyper.beta2) * g * g;
    m[i] = mi;
    v[i] = vi;
    param[i] -= hyper.learning_rate * (mi / bias1) / (sqrtf(vi / bias2) + hyper.epsilon);
  }
}

dim3 column_grid(std::int64_t cols) { return dim3(static_cast<unsigned>((cols + kColumnTile - 1) / kColumnTile)); }

dim3 column_block() { return dim3(kColumnTile, kRowLanes); }

unsigned row_grid(std::int64_t rows) { return static_cast<unsigned>(rows); }

}  // namespace

void preload_kernels() {
  cudaFuncAttributes attributes{};
  const auto load = [&](auto* kernel) { MPSIM_CUDA_TRY(cudaFuncGetAttributes(&attributes, kernel)); };
  load(fill_kernel);
  load(axpy_kernel);
  load(add_row_vector_kernel);
  load(gelu_forward_kernel);
  load(gelu_backward_kernel);
  load(sum_rows_kernel);
  load(layer_norm_params_kernel);
  load(layer_norm_forward_kernel);
  load(layer_norm_dx_kernel);
  load(softmax_forward_kernel);
  load(softmax_backward_kernel);
  load(softmax_forward_lse_kernel);
  load(softmax_from_lse_kernel);
  load(merge_attention_kernel);
  load(row_dot_kernel);
  load(softmax_backward_rows_kernel);
  load(embedding_forward_kernel);
  load(embedding_backward_kernel);
  load(cross_entropy_kernel);
  load(write_header_kernel);
  load(sgd_kernel);
  load(adam_kernel);
}

void launch_fill(cudaStream_t stream, MatrixView m, float value) {
  fill_kernel<<<blocks_for(m.rows * m.cols), kThreads, 0, stream>>>(m, value);
}

void launch_axpy(cudaStream_t stream, float alpha, MatrixView x, MatrixView y) {
  axpy_kernel<<<blocks_for(y.rows * y.cols), kThreads, 0, stream>>>(alpha, x, y);
}

void launch_add_row_vector(cudaStream_t stream, const float* bias, MatrixView y) {
  add_row_vector_kernel<<<blocks_for(y.rows * y.cols), kThreads, 0, stream>>>(bias, y);
}

void launch_sum_rows(cudaStream_t stream, MatrixView dy, float beta, float* grad) {
  sum_rows_kernel<<<column_grid(dy.cols), column_block(), 0, stream>>>(dy, beta, grad);
}

void launch_gelu_forward(cudaStream_t stream, MatrixView x, MatrixView y) {
  gelu_forward_kernel<<<blocks_for(x.rows * x.cols), kThreads, 0, stream>>>(x, y);
}

void launch_gelu_backward(cudaStream_t stream, MatrixView x, MatrixView dy, MatrixView dx) {
  gelu_backward_kernel<<<blocks_for(x.rows * x.cols), kThreads, 0, stream>>>(x, dy, dx);
}

void launch_layer_norm_forward(cudaStream_t stream, MatrixView x, const float* gamma, const float* beta, float epsilon,
                               MatrixView y, float* mean, float* rstd) {
  layer_norm_forward_kernel<<<row_grid(x.rows), kThreads, 0, stream>>>(x, gamma, beta, epsilon, y, mean, rstd);
}

void launch_layer_norm_backward(cudaStream_t stream, MatrixView dy, MatrixView x, const float* gamma, const float* mean,
                                const float* rstd, MatrixView dx, float* dgamma, float* dbeta) {
  layer_norm_params_kernel<<<column_grid(x.cols), column_block(), 0, stream>>>(dy, x, mean, rstd, dgamma, dbeta);
  layer_norm_dx_kernel<<<row_grid(x.rows), kThreads, 0, stream>>>(dy, x, gamma, mean, rstd, dx);
}

void launch_softmax_forward(cudaStream_t stream, MatrixView x, float scale, bool causal, MatrixView y) {
  softmax_forward_kernel<<<row_grid(x.rows), kThreads, 0, stream>>>(x, scale, causal, y);
}

void launch_softmax_backward(cudaStream_t stream, MatrixView y, MatrixView dy, float scale, MatrixView dx) {
  softmax_backward_kernel<<<row_grid(y.rows), kThreads, 0, stream>>>(y, dy, scale, dx);
}

void launch_softmax_forward_lse(cudaStream_t stream, MatrixView x, float scale, bool causal, MatrixView y, float* lse) {
  softmax_forward_lse_kernel<<<row_grid(x.rows), kThreads, 0, stream>>>(x, scale, causal, y, lse);
}

void launch_softmax_from_lse(cudaStream_t stream, MatrixView x, float scale, bool causal, const float* lse,
                             MatrixView y) {
  softmax_from_lse_kernel<<<row_grid(x.rows), kThreads, 0, stream>>>(x, scale, causal, lse, y);
}

void launch_merge_attention(cudaStream_t stream, MatrixView out, float* lse, MatrixView part, const float* part_lse) {
  merge_attention_kernel<<<row_grid(out.rows), kThreads, 0, stream>>>(out, lse, part, part_lse);
}

void launch_row_dot(cudaStream_t stream, MatrixView a, MatrixView b, float* out) {
  row_dot_kernel<<<row_grid(a.rows), kThreads, 0, stream>>>(a, b, out);
}

void launch_softmax_backward_rows(cudaStream_t stream, MatrixView y, MatrixView dy, float scale, const float* row_sum,
                                  MatrixView dx) {
  softmax_backward_rows_kernel<<<row_grid(y.rows), kThreads, 0, stream>>>(y, dy, scale, row_sum, dx);
}

void launch_embedding_forward(cudaStream_t stream, MatrixView table, const std::int32_t* tokens, MatrixView out) {
  embedding_forward_kernel<<<blocks_for(out.rows * out.cols), kThreads, 0, stream>>>(table, tokens, out);
}

void launch_embedding_backward(cudaStream_t stream, MatrixView dout, const std::int32_t* tokens, MatrixView dtable) {
  embedding_backward_kernel<<<blocks_for(dout.rows * dout.cols), kThreads, 0, stream>>>(dout, tokens, dtable);
}

void launch_cross_entropy(cudaStream_t stream, MatrixView logits, const std::int32_t* labels, float scale,
                          MatrixView dlogits, float* row_loss) {
  const float inv_rows = 1.0f / static_cast<float>(logits.rows);
  cross_entropy_kernel<<<row_grid(logits.rows), kThreads, 0, stream>>>(logits, labels, scale, inv_rows, dlogits,
                                                                       row_loss);
}

void launch_write_header(cudaStream_t stream, std::int64_t* header, std::int64_t tag, std::int64_t count) {
  write_header_kernel<<<1, 1, 0, stream>>>(header, tag, count);
}

void launch_sgd_step(cudaStream_t stream, float* param, const float* grad, std::size_t count, float learning_rate) {
  sgd_kernel<<<blocks_for(static_cast<std::int64_t>(count)), kThreads, 0, stream>>>(param, grad, count, learning_rate);
}

void launch_adam_step(cudaStream_t stream, float* param, const float* grad, float* m, float* v, std::size_t count,
                      const AdamHyper& hyper, float bias1, float bias2) {
  adam_kernel<<<blocks_for(static_cast<std::int64_t>(count)), kThreads, 0, stream>>>(param, grad, m, v, count, hyper,
                                                                                     bias1, bias2);
}

}  // namespace mpsim::executor::cuda
