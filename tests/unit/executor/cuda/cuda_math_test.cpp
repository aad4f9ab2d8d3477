// The CUDA backend's math, memory and marks against naive host references on small random inputs
// (strided views throughout), plus its pure rules (device choice, the row-major gemm mapping),
// which run on any machine. Without a CUDA device the device tests skip.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <iostream>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "executor/backend/cuda/cuda_backend.h"
#include "executor/backend/cuda/cuda_check.h"
#include "executor/backend/cuda/device_rules.h"
#include "tests/unit/executor/cuda/cuda_test_support.h"

namespace mpsim::executor {
namespace {

using cuda_test::DevicePool;
using cuda_test::HostMatrix;

constexpr float kTolerance = 2e-5f;

/// |expected - actual| <= tolerance * max(1, |expected|) over the viewed region.
void expect_near(const HostMatrix& expected, const HostMatrix& actual, float tolerance = kTolerance) {
  ASSERT_EQ(expected.rows, actual.rows);
  ASSERT_EQ(expected.cols, actual.cols);
  for (std::int64_t r = 0; r < expected.rows; ++r) {
    for (std::int64_t c = 0; c < expected.cols; ++c) {
      const float e = expected(r, c);
      ASSERT_NEAR(e, actual(r, c), tolerance * std::max(1.0f, std::abs(e))) << "at (" << r << ", " << c << ")";
    }
  }
}

void expect_near(const std::vector<float>& expected, const std::vector<float>& actual, float tolerance = kTolerance) {
  ASSERT_EQ(expected.size(), actual.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    ASSERT_NEAR(expected[i], actual[i], tolerance * std::max(1.0f, std::abs(expected[i]))) << "at " << i;
  }
}

/// The padding columns of `after` are those of `before`: a kernel wrote only inside the view.
void expect_padding_kept(const HostMatrix& before, const HostMatrix& after) {
  for (std::int64_t r = 0; r < before.rows; ++r) {
    for (std::int64_t c = before.cols; c < before.ld; ++c) ASSERT_EQ(before(r, c), after(r, c)) << r << ", " << c;
  }
}

HostMatrix transpose_of(const HostMatrix& m) {
  HostMatrix t(m.cols, m.rows);
  for (std::int64_t r = 0; r < m.rows; ++r) {
    for (std::int64_t c = 0; c < m.cols; ++c) t(c, r) = m(r, c);
  }
  return t;
}

/// c = alpha * op(a) * op(b) + beta * c, in double; beta == 0 ignores c.
HostMatrix reference_gemm(Transpose ta, Transpose tb, float alpha, const HostMatrix& a, const HostMatrix& b, float beta,
                          HostMatrix c) {
  const HostMatrix oa = ta == Transpose::Yes ? transpose_of(a) : a;
  const HostMatrix ob = tb == Transpose::Yes ? transpose_of(b) : b;
  for (std::int64_t r = 0; r < c.rows; ++r) {
    for (std::int64_t col = 0; col < c.cols; ++col) {
      double sum = 0;
      for (std::int64_t k = 0; k < oa.cols; ++k) sum += static_cast<double>(oa(r, k)) * ob(k, col);
      c(r, col) = static_cast<float>(alpha * sum + (beta == 0.0f ? 0.0 : beta * static_cast<double>(c(r, col))));
    }
  }
  return c;
}

// --- pure rules (no device needed) ---------------------------------------------------------------

/// A naive column-major sgemm, as cuBLAS defines it: C(m x n) = alpha op(A) op(B) + beta C, with
/// element (i, j) of a column-major matrix at p[i + j * ld].
void column_major_sgemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
                        std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        const float av = ta ? a[p + i * lda] : a[i + p * lda];
        const float bv = tb ? b[j + p * ldb] : b[p + j * ldb];
        sum += static_cast<double>(av) * bv;
      }
      c[i + j * ldc] =
          static_cast<float>(alpha * sum + (beta == 0.0f ? 0.0 : beta * static_cast<double>(c[i + j * ldc])));
    }
  }
}

TEST(CudaGemmMapping, ColumnMajorCallComputesTheRowMajorProduct) {
  std::mt19937 rng(11);
  const std::int64_t m = 5;
  const std::int64_t n = 7;
  const std::int64_t k = 3;
  for (const Transpose ta : {Transpose::No, Transpose::Yes}) {
    for (const Transpose tb : {Transpose::No, Transpose::Yes}) {
      HostMatrix a = ta == Transpose::Yes ? HostMatrix(k, m, 2) : HostMatrix(m, k, 2);
      HostMatrix b = tb == Transpose::Yes ? HostMatrix(n, k, 1) : HostMatrix(k, n, 1);
      HostMatrix c(m, n, 3);
      a.randomize(rng);
      b.randomize(rng);
      c.randomize(rng);
      const MatrixView av{a.data.data(), a.rows, a.cols, a.ld};
      const MatrixView bv{b.data.data(), b.rows, b.cols, b.ld};
      const MatrixView cv{c.data.data(), c.rows, c.cols, c.ld};
      ASSERT_EQ(cuda::gemm_shape_error(ta, tb, av, bv, cv), "");
      const HostMatrix expected = reference_gemm(ta, tb, 0.5f, a, b, 2.0f, c);
      const cuda::ColumnMajorGemm call = cuda::to_column_major(ta, tb, av, bv, cv);
      column_major_sgemm(call.transpose_first, call.transpose_second, call.m, call.n, call.k, 0.5f, call.first,
                         call.ld_first, call.second, call.ld_second, 2.0f, call.c, call.ldc);
      expect_near(expected, c, 1e-6f);
    }
  }
}

TEST(CudaGemmMapping, ShapeMismatchIsNamed) {
  float dummy = 0;
  const MatrixView a{&dummy, 4, 3, 3};
  const MatrixView b{&dummy, 2, 5, 5};
  const MatrixView c{&dummy, 4, 5, 5};
  EXPECT_NE(cuda::gemm_shape_error(Transpose::No, Transpose::No, a, b, c).find("op(a) is 4x3"), std::string::npos);
  EXPECT_EQ(cuda::gemm_shape_error(Transpose::No, Transpose::Yes, a, MatrixView{&dummy, 5, 3, 3}, c), "");
}

/// The message of the BackendError that `f` throws (empty when it throws none).
template <class F>
std::string error_of(F f) {
  try {
    f();
  } catch (const BackendError& e) {
    return e.what();
  }
  return {};
}

TEST(CudaCheck, FailedCallsThrowWithFileLineRankCallAndErrorString) {
  const std::string cuda_error = error_of([] { MPSIM_CUDA_TRY(cudaErrorInvalidValue); });
  EXPECT_NE(cuda_error.find("cuda_math_test.cpp:"), std::string::npos) << cuda_error;
  EXPECT_NE(cuda_error.find("rank 0"), std::string::npos) << cuda_error;
  EXPECT_NE(cuda_error.find("cudaErrorInvalidValue failed: invalid argument"), std::string::npos) << cuda_error;

  const std::string blas_error = error_of([] { MPSIM_CUBLAS_TRY(CUBLAS_STATUS_INVALID_VALUE); });
  EXPECT_NE(blas_error.find("CUBLAS_STATUS_INVALID_VALUE failed:"), std::string::npos) << blas_error;

  const std::string nccl_error = error_of([] { MPSIM_NCCL_TRY(ncclInvalidArgument); });
  EXPECT_NE(nccl_error.find("ncclInvalidArgument failed: invalid argument"), std::string::npos) << nccl_error;

  const std::string mpi_error = error_of([] { MPSIM_MPI_TRY(MPI_ERR_COUNT); });
  EXPECT_NE(mpi_error.find("MPI_ERR_COUNT failed: "), std::string::npos) << mpi_error;

  EXPECT_EQ(error_of([] { MPSIM_CUDA_TRY(cudaSuccess); }), "");
  EXPECT_EQ(error_of([] { MPSIM_NCCL_TRY(ncclSuccess); }), "");
}

TEST(CudaBackendWithoutDevice, MakingItThrowsBackendError) {
  if (cuda_test::has_cuda_device()) GTEST_SKIP() << "a CUDA device is present";
  try {
    (void)make_cuda_backend(BackendOptions{});
    ADD_FAILURE() << "no BackendError";
  } catch (const BackendError& e) {
    // file:line, the rank, and what is missing.
    const std::string what = e.what();
    EXPECT_NE(what.find("executor/backend/cuda/cuda_backend.cpp:"), std::string::npos) << what;
    EXPECT_NE(what.find("rank 0"), std::string::npos) << what;
    EXPECT_NE(what.find("no CUDA device"), std::string::npos) << what;
    std::cout << "  (" << what << ")\n";
  }
}

// --- the backend on a device -------------------------------------------------------------------

class CudaMath : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (cuda_test::has_cuda_device()) backend_ = make_cuda_backend(BackendOptions{});
  }
  static void TearDownTestSuite() { backend_.reset(); }
  void SetUp() override {
    MPSIM_REQUIRE_DEVICE(backend_ != nullptr, cuda_test::no_device_reason());
    pool_ = std::make_unique<DevicePool>(*backend_);
  }
  void TearDown() override { pool_.reset(); }

  Backend& backend() { return *backend_; }
  DevicePool& pool() { return *pool_; }

  std::mt19937 rng_{2024};
  static std::unique_ptr<Backend> backend_;
  std::unique_ptr<DevicePool> pool_;
};

std::unique_ptr<Backend> CudaMath::backend_;

TEST_F(CudaMath, IdentityAndAllocation) {
  EXPECT_EQ(backend().name(), "cuda");
  EXPECT_EQ(backend().world_size(), 1);
  EXPECT_EQ(backend().world_rank(), 0);
  float* zeros = backend().allocate(1000);
  EXPECT_EQ(pool().download(zeros, 1000), std::vector<float>(1000, 0.0f));
  float* empty = backend().allocate(0);
  EXPECT_NE(empty, nullptr);
  EXPECT_NE(empty, zeros);
  backend().release(empty);
  backend().release(zeros);
  backend().release(nullptr);  // not ours: ignored
}

TEST_F(CudaMath, UploadDownloadCopyFill) {
  HostMatrix src(6, 5, 2);
  src.randomize(rng_);
  HostMatrix dst(6, 5, 4);
  dst.randomize(rng_);
  const MatrixView s = pool().upload(src);
  const MatrixView d = pool().upload(dst);
  EXPECT_EQ(pool().download(s).data, src.data);
  backend().copy(s, d);
  const HostMatrix copied = pool().download(d);
  expect_near(src, copied, 0.0f);
  expect_padding_kept(dst, copied);
  backend().fill(d.columns(1, 3), 2.5f);
  const HostMatrix filled = pool().download(d);
  for (std::int64_t r = 0; r < 6; ++r) {
    for (std::int64_t c = 0; c < 5; ++c) ASSERT_EQ(filled(r, c), c >= 1 && c < 4 ? 2.5f : src(r, c));
  }
  expect_padding_kept(dst, filled);
}

TEST_F(CudaMath, GemmAllTransposes) {
  const std::int64_t m = 9;
  const std::int64_t n = 13;
  const std::int64_t k = 11;
  for (const Transpose ta : {Transpose::No, Transpose::Yes}) {
    for (const Transpose tb : {Transpose::No, Transpose::Yes}) {
      for (const float beta : {0.0f, 0.5f}) {
        HostMatrix a = ta == Transpose::Yes ? HostMatrix(k, m, 3) : HostMatrix(m, k, 3);
        HostMatrix b = tb == Transpose::Yes ? HostMatrix(n, k, 2) : HostMatrix(k, n, 2);
        HostMatrix c(m, n, 1);
        a.randomize(rng_);
        b.randomize(rng_);
        c.randomize(rng_);
        if (beta == 0.0f) c(0, 0) = std::numeric_limits<float>::quiet_NaN();  // beta 0 ignores c
        const HostMatrix expected = reference_gemm(ta, tb, 1.5f, a, b, beta, c);
        const MatrixView cv = pool().upload(c);
        backend().gemm(ta, tb, 1.5f, pool().upload(a), pool().upload(b), beta, cv);
        const HostMatrix got = pool().download(cv);
        expect_near(expected, got, 1e-5f);
        expect_padding_kept(c, got);
      }
    }
  }
}

TEST_F(CudaMath, GemmOnColumnSlices) {
  // One head's columns of a wider matrix, as attention layers address them.
  HostMatrix q(4, 12, 0);
  HostMatrix kmat(6, 12, 0);
  q.randomize(rng_);
  kmat.randomize(rng_);
  HostMatrix scores(4, 6);
  const MatrixView qv = pool().upload(q);
  const MatrixView kv = pool().upload(kmat);
  const MatrixView sv = pool().upload(scores);
  backend().gemm(Transpose::No, Transpose::Yes, 1.0f, qv.columns(4, 4), kv.columns(4, 4), 0.0f, sv);
  HostMatrix qh(4, 4);
  HostMatrix kh(6, 4);
  for (std::int64_t r = 0; r < 4; ++r) {
    for (std::int64_t c = 0; c < 4; ++c) qh(r, c) = q(r, c + 4);
  }
  for (std::int64_t r = 0; r < 6; ++r) {
    for (std::int64_t c = 0; c < 4; ++c) kh(r, c) = kmat(r, c + 4);
  }
  expect_near(reference_gemm(Transpose::No, Transpose::Yes, 1.0f, qh, kh, 0.0f, scores), pool().download(sv), 1e-5f);
}

TEST_F(CudaMath, GemmShapeMismatchThrows) {
  const MatrixView a = pool().upload(HostMatrix(3, 4));
  const MatrixView b = pool().upload(HostMatrix(5, 2));
  const MatrixView c = pool().upload(HostMatrix(3, 2));
  EXPECT_THROW(backend().gemm(Transpose::No, Transpose::No, 1.0f, a, b, 0.0f, c), BackendError);
}

TEST_F(CudaMath, AxpyAddRowVectorSumRows) {
  HostMatrix x(7, 37, 2);
  HostMatrix y(7, 37, 5);
  x.randomize(rng_);
  y.randomize(rng_);
  std::vector<float> bias(37);
  std::vector<float> grad(37);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : bias) v = dist(rng_);
  for (float& v : grad) v = dist(rng_);

  HostMatrix expected = y;
  for (std::int64_t r = 0; r < 7; ++r) {
    for (std::int64_t c = 0; c < 37; ++c) expected(r, c) += -0.75f * x(r, c) + bias[static_cast<std::size_t>(c)];
  }
  const MatrixView yv = pool().upload(y);
  backend().axpy(-0.75f, pool().upload(x), yv);
  float* bias_device = pool().raw(bias);
  backend().add_row_vector(bias_device, yv);
  const HostMatrix got = pool().download(yv);
  expect_near(expected, got);
  expect_padding_kept(y, got);

  for (const float beta : {0.0f, 0.5f}) {
    float* grad_device = pool().raw(grad);
    backend().sum_rows(pool().upload(x), beta, grad_device);
    std::vector<float> want(37);
    for (std::int64_t c = 0; c < 37; ++c) {
      double sum = beta * static_cast<double>(grad[static_cast<std::size_t>(c)]);
      for (std::int64_t r = 0; r < 7; ++r) sum += x(r, c);
      want[static_cast<std::size_t>(c)] = static_cast<float>(sum);
    }
    expect_near(want, pool().download(grad_device, 37));
  }
}

TEST_F(CudaMath, SumRowsOverManyRows) {
  HostMatrix dy(1000, 70, 1);
  dy.randomize(rng_);
  float* grad = pool().raw(std::vector<float>(70, 1.0f));
  backend().sum_rows(pool().upload(dy), 1.0f, grad);
  std::vector<float> want(70);
  for (std::int64_t c = 0; c < 70; ++c) {
    double sum = 1.0;
    for (std::int64_t r = 0; r < 1000; ++r) sum += dy(r, c);
    want[static_cast<std::size_t>(c)] = static_cast<float>(sum);
  }
  expect_near(want, pool().download(grad, 70), 1e-4f);
}

TEST_F(CudaMath, Gelu) {
  HostMatrix x(5, 33, 3);
  HostMatrix dy(5, 33, 0);
  x.randomize(rng_, -4.0f, 4.0f);
  dy.randomize(rng_);
  HostMatrix y(5, 33, 1);
  HostMatrix dx(5, 33, 2);
  HostMatrix want_y = y;
  HostMatrix want_dx = dx;
  const double k = std::sqrt(2.0 / std::acos(-1.0));
  for (std::int64_t r = 0; r < 5; ++r) {
    for (std::int64_t c = 0; c < 33; ++c) {
      const double v = x(r, c);
      const double t = std::tanh(k * (v + 0.044715 * v * v * v));
      want_y(r, c) = static_cast<float>(0.5 * v * (1 + t));
      const double dt = (1 - t * t) * k * (1 + 3 * 0.044715 * v * v);
      want_dx(r, c) = static_cast<float>(dy(r, c) * (0.5 * (1 + t) + 0.5 * v * dt));
    }
  }
  const MatrixView xv = pool().upload(x);
  const MatrixView yv = pool().upload(y);
  const MatrixView dxv = pool().upload(dx);
  backend().gelu_forward(xv, yv);
  backend().gelu_backward(xv, pool().upload(dy), dxv);
  expect_near(want_y, pool().download(yv), 1e-5f);
  expect_near(want_dx, pool().download(dxv), 1e-5f);
}

TEST_F(CudaMath, LayerNormForwardAndBackward) {
  const std::int64_t rows = 6;
  const std::int64_t cols = 300;  // more columns than threads per row
  HostMatrix x(rows, cols, 4);
  HostMatrix dy(rows, cols, 1);
  x.randomize(rng_, -2.0f, 3.0f);
  dy.randomize(rng_);
  std::vector<float> gamma(cols);
  std::vector<float> beta(cols);
  std::vector<float> dgamma(cols);
  std::vector<float> dbeta(cols);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (auto* v : {&gamma, &beta, &dgamma, &dbeta}) {
    for (float& e : *v) e = dist(rng_);
  }
  const float eps = 1e-5f;

  HostMatrix want_y(rows, cols);
  HostMatrix want_dx(rows, cols);
  std::vector<float> want_mean(rows);
  std::vector<float> want_rstd(rows);
  std::vector<float> want_dgamma = dgamma;
  std::vector<float> want_dbeta = dbeta;
  for (std::int64_t r = 0; r < rows; ++r) {
    double mu = 0;
    for (std::int64_t c = 0; c < cols; ++c) mu += x(r, c);
    mu /= cols;
    double var = 0;
    for (std::int64_t c = 0; c < cols; ++c) var += (x(r, c) - mu) * (x(r, c) - mu);
    const double rs = 1.0 / std::sqrt(var / cols + eps);
    want_mean[static_cast<std::size_t>(r)] = static_cast<float>(mu);
    want_rstd[static_cast<std::size_t>(r)] = static_cast<float>(rs);
    double sum_g = 0;
    double sum_gx = 0;
    for (std::int64_t c = 0; c < cols; ++c) {
      const auto i = static_cast<std::size_t>(c);
      const double xhat = (x(r, c) - mu) * rs;
      want_y(r, c) = static_cast<float>(xhat * gamma[i] + beta[i]);
      const double g = static_cast<double>(dy(r, c)) * gamma[i];
      sum_g += g;
      sum_gx += g * xhat;
      want_dgamma[i] += static_cast<float>(dy(r, c) * xhat);
      want_dbeta[i] += dy(r, c);
    }
    for (std::int64_t c = 0; c < cols; ++c) {
      const double xhat = (x(r, c) - mu) * rs;
      const double g = static_cast<double>(dy(r, c)) * gamma[static_cast<std::size_t>(c)];
      want_dx(r, c) = static_cast<float>(rs * (g - sum_g / cols - xhat * sum_gx / cols));
    }
  }

  const MatrixView xv = pool().upload(x);
  const MatrixView yv = pool().upload(HostMatrix(rows, cols, 2));
  float* gamma_d = pool().raw(gamma);
  float* beta_d = pool().raw(beta);
  float* mean_d = pool().raw(std::vector<float>(rows));
  float* rstd_d = pool().raw(std::vector<float>(rows));
  backend().layer_norm_forward(xv, gamma_d, beta_d, eps, yv, mean_d, rstd_d);
  expect_near(want_y, pool().download(yv), 1e-4f);
  expect_near(want_mean, pool().download(mean_d, rows), 1e-5f);
  expect_near(want_rstd, pool().download(rstd_d, rows), 1e-4f);

  float* dgamma_d = pool().raw(dgamma);
  float* dbeta_d = pool().raw(dbeta);
  // dx written over dy (the interpreter may reuse the buffer).
  const MatrixView dyv = pool().upload(dy);
  backend().layer_norm_backward(dyv, xv, gamma_d, mean_d, rstd_d, dyv, dgamma_d, dbeta_d);
  expect_near(want_dx, pool().download(dyv), 1e-4f);
  expect_near(want_dgamma, pool().download(dgamma_d, cols), 1e-4f);
  expect_near(want_dbeta, pool().download(dbeta_d, cols), 1e-4f);
}

HostMatrix reference_softmax(const HostMatrix& x, float scale, bool causal) {
  HostMatrix y(x.rows, x.cols);
  for (std::int64_t r = 0; r < x.rows; ++r) {
    const std::int64_t keep = causal ? std::min(r + 1 + std::max<std::int64_t>(0, x.cols - x.rows), x.cols) : x.cols;
    double top = -1e300;
    for (std::int64_t c = 0; c < keep; ++c) top = std::max(top, static_cast<double>(scale) * x(r, c));
    double sum = 0;
    for (std::int64_t c = 0; c < keep; ++c) sum += std::exp(scale * static_cast<double>(x(r, c)) - top);
    for (std::int64_t c = 0; c < x.cols; ++c) {
      y(r, c) = c < keep ? static_cast<float>(std::exp(scale * static_cast<double>(x(r, c)) - top) / sum) : 0.0f;
    }
  }
  return y;
}

TEST_F(CudaMath, SoftmaxForwardInPlaceWithAndWithoutMask) {
  for (const bool causal : {false, true}) {
    HostMatrix x(9, 9, 3);
    x.randomize(rng_, -3.0f, 3.0f);
    const HostMatrix want = reference_softmax(x, 0.35f, causal);
    const MatrixView xv = pool().upload(x);
    backend().softmax_forward(xv, 0.35f, causal, xv);  // y aliases x
    const HostMatrix got = pool().download(xv);
    expect_near(want, got, 1e-5f);
    expect_padding_kept(x, got);
  }
  // Rows longer than a block's threads.
  HostMatrix wide(3, 700, 0);
  wide.randomize(rng_, -5.0f, 5.0f);
  const MatrixView wv = pool().upload(wide);
  const MatrixView out = pool().upload(HostMatrix(3, 700));
  backend().softmax_forward(wv, 1.0f, false, out);
  expect_near(reference_softmax(wide, 1.0f, false), pool().download(out), 1e-5f);
}

TEST_F(CudaMath, SoftmaxBackwardInPlace) {
  HostMatrix x(7, 7, 1);
  x.randomize(rng_);
  const HostMatrix y = reference_softmax(x, 1.0f, true);
  HostMatrix dy(7, 7, 2);
  dy.randomize(rng_);
  HostMatrix want(7, 7);
  for (std::int64_t r = 0; r < 7; ++r) {
    double dot = 0;
    for (std::int64_t c = 0; c < 7; ++c) dot += static_cast<double>(dy(r, c)) * y(r, c);
    for (std::int64_t c = 0; c < 7; ++c) want(r, c) = static_cast<float>(0.125 * y(r, c) * (dy(r, c) - dot));
  }
  const MatrixView dyv = pool().upload(dy);
  backend().softmax_backward(pool().upload(y), dyv, 0.125f, dyv);  // dx aliases dy
  expect_near(want, pool().download(dyv), 1e-5f);
}

/// log of each row's sum of exp(scale * x) over the columns the causal rule keeps, in double.
std::vector<float> reference_lse(const HostMatrix& x, float scale, bool causal) {
  std::vector<float> lse(static_cast<std::size_t>(x.rows));
  for (std::int64_t r = 0; r < x.rows; ++r) {
    const std::int64_t keep = causal ? std::min(r + 1 + std::max<std::int64_t>(0, x.cols - x.rows), x.cols) : x.cols;
    double sum = 0;
    for (std::int64_t c = 0; c < keep; ++c) sum += std::exp(scale * static_cast<double>(x(r, c)));
    lse[static_cast<std::size_t>(r)] = static_cast<float>(std::log(sum));
  }
  return lse;
}

HostMatrix columns_of(const HostMatrix& m, std::int64_t first, std::int64_t count) {
  HostMatrix out(m.rows, count);
  for (std::int64_t r = 0; r < m.rows; ++r) {
    for (std::int64_t c = 0; c < count; ++c) out(r, c) = m(r, first + c);
  }
  return out;
}

TEST_F(CudaMath, SoftmaxWithLogSumExpAndRebuiltFromIt) {
  for (const bool causal : {false, true}) {
    HostMatrix x(6, 9, 2);  // more keys than queries: the causal mask aligns to the last key
    x.randomize(rng_, -3.0f, 3.0f);
    const MatrixView xv = pool().upload(x);
    const MatrixView yv = pool().upload(HostMatrix(6, 9, 1));
    float* lse = pool().raw(std::vector<float>(6, 0.0f));
    backend().softmax_forward_lse(xv, 0.35f, causal, yv, lse);
    expect_near(reference_softmax(x, 0.35f, causal), pool().download(yv), 1e-5f);
    expect_near(reference_lse(x, 0.35f, causal), pool().download(lse, 6), 1e-5f);
    backend().softmax_from_lse(xv, 0.35f, causal, lse, xv);  // y aliases x
    const HostMatrix rebuilt = pool().download(xv);
    expect_near(reference_softmax(x, 0.35f, causal), rebuilt, 1e-5f);
    expect_padding_kept(x, rebuilt);
  }
  HostMatrix wide(3, 700, 0);  // rows longer than a block's threads
  wide.randomize(rng_, -5.0f, 5.0f);
  const MatrixView wv = pool().upload(wide);
  float* lse = pool().raw(std::vector<float>(3, 0.0f));
  backend().softmax_forward_lse(wv, 1.0f, false, wv, lse);
  expect_near(reference_softmax(wide, 1.0f, false), pool().download(wv), 1e-5f);
  expect_near(reference_lse(wide, 1.0f, false), pool().download(lse, 3), 1e-5f);
}

TEST_F(CudaMath, MergingTwoKeyBlocksGivesTheWholeRowsAttention) {
  const std::int64_t queries = 5, keys = 10, width = 4, split = 6;
  HostMatrix scores(queries, keys);
  scores.randomize(rng_, -3.0f, 3.0f);
  HostMatrix values(keys, width);
  values.randomize(rng_);
  const auto attention = [&](std::int64_t first, std::int64_t count) {
    const HostMatrix block = columns_of(scores, first, count);
    HostMatrix block_values(count, width);
    for (std::int64_t k = 0; k < count; ++k) {
      for (std::int64_t c = 0; c < width; ++c) block_values(k, c) = values(first + k, c);
    }
    return reference_gemm(Transpose::No, Transpose::No, 1.0f, reference_softmax(block, 1.0f, false), block_values, 0.0f,
                          HostMatrix(queries, width));
  };
  HostMatrix out(queries, width, 3);
  out.randomize(rng_);  // an lse of -infinity: whatever is there is replaced by the block
  const MatrixView outv = pool().upload(out);
  float* lse = pool().raw(std::vector<float>(queries, -std::numeric_limits<float>::infinity()));
  const HostMatrix first = attention(0, split);
  const HostMatrix second = attention(split, keys - split);
  backend().merge_attention(outv, lse, pool().upload(first), pool().raw(reference_lse(columns_of(scores, 0, split), 1.0f, false)));
  expect_near(first, columns_of(pool().download(outv), 0, width), 1e-5f);
  backend().merge_attention(outv, lse, pool().upload(second),
                            pool().raw(reference_lse(columns_of(scores, split, keys - split), 1.0f, false)));
  const HostMatrix merged = pool().download(outv);
  expect_near(attention(0, keys), columns_of(merged, 0, width), 1e-5f);
  expect_near(reference_lse(scores, 1.0f, false), pool().download(lse, queries), 1e-5f);
  expect_padding_kept(out, merged);
}

TEST_F(CudaMath, RowDotAndSoftmaxBackwardWithGivenRowSums) {
  HostMatrix a(7, 300, 2);  // rows longer than a block's threads
  a.randomize(rng_);
  HostMatrix b(7, 300, 1);
  b.randomize(rng_);
  std::vector<float> want_dots(7);
  for (std::int64_t r = 0; r < 7; ++r) {
    double dot = 0;
    for (std::int64_t c = 0; c < 300; ++c) dot += static_cast<double>(a(r, c)) * b(r, c);
    want_dots[static_cast<std::size_t>(r)] = static_cast<float>(dot);
  }
  float* dots = pool().raw(std::vector<float>(7, 0.0f));
  backend().row_dot(pool().upload(a), pool().upload(b), dots);
  expect_near(want_dots, pool().download(dots, 7), 1e-4f);

  HostMatrix y(7, 5, 1);
  y.randomize(rng_, 0.0f, 1.0f);
  HostMatrix dy(7, 5, 2);
  dy.randomize(rng_);
  std::vector<float> sums(7);
  for (float& v : sums) v = std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng_);
  HostMatrix want(7, 5);
  for (std::int64_t r = 0; r < 7; ++r) {
    for (std::int64_t c = 0; c < 5; ++c) want(r, c) = 0.125f * y(r, c) * (dy(r, c) - sums[static_cast<std::size_t>(r)]);
  }
  const MatrixView dyv = pool().upload(dy);
  backend().softmax_backward_rows(pool().upload(y), dyv, 0.125f, pool().raw(sums), dyv);  // dx aliases dy
  const HostMatrix got = pool().download(dyv);
  expect_near(want, got, 1e-5f);
  expect_padding_kept(dy, got);
}

TEST_F(CudaMath, EmbeddingForwardAccumulatesAndBackwardScatters) {
  HostMatrix table(10, 6, 2);
  table.randomize(rng_);
  HostMatrix out(5, 6, 1);
  out.randomize(rng_);
  const std::vector<std::int32_t> tokens = {3, 0, 9, 3, 3};
  HostMatrix want = out;
  for (std::int64_t r = 0; r < 5; ++r) {
    for (std::int64_t c = 0; c < 6; ++c) want(r, c) += table(tokens[static_cast<std::size_t>(r)], c);
  }
  const MatrixView tv = pool().upload(table);
  const MatrixView ov = pool().upload(out);
  backend().embedding_forward(tv, tokens, ov);
  expect_near(want, pool().download(ov));

  HostMatrix dtable(10, 6, 3);
  dtable.randomize(rng_);
  HostMatrix want_dtable = dtable;
  for (std::int64_t r = 0; r < 5; ++r) {
    for (std::int64_t c = 0; c < 6; ++c) want_dtable(tokens[static_cast<std::size_t>(r)], c) += out(r, c);
  }
  const MatrixView dtv = pool().upload(dtable);
  backend().embedding_backward(pool().upload(out), tokens, dtv);
  const HostMatrix got = pool().download(dtv);
  expect_near(want_dtable, got);
  expect_padding_kept(dtable, got);

  const std::vector<std::int32_t> bad = {0, 10, 1, 2, 3};
  EXPECT_THROW(backend().embedding_forward(tv, bad, ov), BackendError);
}

TEST_F(CudaMath, CrossEntropyLossAndGradient) {
  const std::int64_t rows = 6;
  const std::int64_t cols = 11;
  HostMatrix logits(rows, cols, 2);
  logits.randomize(rng_, -4.0f, 4.0f);
  const std::vector<std::int32_t> labels = {0, 10, 5, 5, 2, 7};
  const float scale = 0.25f;
  double want_loss = 0;
  HostMatrix want(rows, cols);
  for (std::int64_t r = 0; r < rows; ++r) {
    double top = -1e300;
    for (std::int64_t c = 0; c < cols; ++c) top = std::max(top, static_cast<double>(logits(r, c)));
    double sum = 0;
    for (std::int64_t c = 0; c < cols; ++c) sum += std::exp(logits(r, c) - top);
    const double log_sum = std::log(sum) + top;
    const auto label = labels[static_cast<std::size_t>(r)];
    want_loss += log_sum - logits(r, label);
    for (std::int64_t c = 0; c < cols; ++c) {
      const double p = std::exp(logits(r, c) - log_sum);
      want(r, c) = static_cast<float>(scale * (p - (c == label ? 1.0 : 0.0)) / rows);
    }
  }
  want_loss /= rows;
  const MatrixView lv = pool().upload(logits);
  const MatrixView dv = pool().upload(HostMatrix(rows, cols, 1));
  EXPECT_NEAR(backend().cross_entropy(lv, labels, scale, dv), want_loss, 1e-5 * std::max(1.0, want_loss));
  expect_near(want, pool().download(dv), 1e-5f);
  // The gradient may overwrite the logits.
  EXPECT_NEAR(backend().cross_entropy(lv, labels, scale, lv), want_loss, 1e-5 * std::max(1.0, want_loss));
  expect_near(want, pool().download(lv), 1e-5f);

  const std::vector<std::int32_t> bad = {0, 11, 5, 5, 2, 7};
  EXPECT_THROW((void)backend().cross_entropy(lv, bad, scale, dv), BackendError);
}

TEST_F(CudaMath, SgdAndAdam) {
  const std::size_t n = 1000;
  std::vector<float> param(n);
  std::vector<float> grad(n);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (float& v : param) v = dist(rng_);
  for (float& v : grad) v = dist(rng_);

  float* p = pool().raw(param);
  const float* g = pool().raw(grad);
  backend().sgd_step(p, g, n, 0.1f);
  std::vector<float> want = param;
  for (std::size_t i = 0; i < n; ++i) want[i] -= 0.1f * grad[i];
  expect_near(want, pool().download(p, n), 1e-6f);

  float* m = pool().raw(std::vector<float>(n));
  float* v = pool().raw(std::vector<float>(n));
  std::vector<double> hm(n);
  std::vector<double> hv(n);
  AdamHyper hyper;
  hyper.learning_rate = 0.01f;
  for (int step = 1; step <= 3; ++step) {
    hyper.step = step;
    backend().adam_step(p, g, m, v, n, hyper);
    const double c1 = 1 - std::pow(0.9, step);
    const double c2 = 1 - std::pow(0.999, step);
    for (std::size_t i = 0; i < n; ++i) {
      hm[i] = 0.9 * hm[i] + 0.1 * grad[i];
      hv[i] = 0.999 * hv[i] + 0.001 * grad[i] * grad[i];
      want[i] = static_cast<float>(want[i] - 0.01 * (hm[i] / c1) / (std::sqrt(hv[i] / c2) + 1e-8));
    }
  }
  expect_near(want, pool().download(p, n), 1e-5f);
  std::vector<float> want_m(hm.begin(), hm.end());
  expect_near(want_m, pool().download(m, n), 1e-5f);
}

TEST_F(CudaMath, MarksAreOrderedSteadyClockTimes) {
  backend().reset_marks();
  const auto before =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  EXPECT_EQ(backend().record_mark(), 0);
  HostMatrix a(256, 256);
  a.randomize(rng_);
  const MatrixView av = pool().upload(a);
  const MatrixView cv = pool().upload(HostMatrix(256, 256));
  backend().gemm(Transpose::No, Transpose::No, 1.0f, av, av, 0.0f, cv);
  EXPECT_EQ(backend().record_mark(), 1);
  EXPECT_EQ(backend().record_mark(), 2);
  backend().synchronize();
  const auto after =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
  const std::vector<std::int64_t> times = backend().mark_times_ns();
  ASSERT_EQ(times.size(), 3u);
  EXPECT_GE(times[0], before);
  EXPECT_LE(times[0], times[1]);
  EXPECT_LE(times[1], times[2]);
  EXPECT_LE(times[2], after + 1'000'000);  // event resolution and anchoring slack
  backend().reset_marks();
  EXPECT_TRUE(backend().mark_times_ns().empty());
}

}  // namespace
}  // namespace mpsim::executor

int main(int argc, char** argv) {
  // The backend bootstraps NCCL over MPI; a single process runs as a world of one.
  // Listing the tests (CTest's discovery) needs no MPI; it also runs in the sanitizer build, where
  // MPI's own allocations would read as leaks.
  ::testing::InitGoogleTest(&argc, argv);
  if (::testing::GTEST_FLAG(list_tests)) return RUN_ALL_TESTS();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  const int result = RUN_ALL_TESTS();
  MPI_Finalize();
  return result;
}
