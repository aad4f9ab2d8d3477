// The CPU backend's math against naive loops and finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <utility>
#include <vector>

#include "executor/backend/cpu/cpu_backend.h"
#include "executor/net/init.h"

namespace mpsim::executor {
namespace {

class CpuBackendTest : public ::testing::Test {
 protected:
  std::unique_ptr<Backend> be = make_cpu_backend({});

  /// A rows x cols matrix inside a wider allocation (ld = cols + pad), filled with seeded values.
  struct Strided {
    std::vector<float> storage;
    MatrixView view;
  };
  static Strided strided(std::int64_t rows, std::int64_t cols, std::int64_t pad, std::uint64_t seed) {
    Strided s;
    const std::int64_t ld = cols + pad;
    s.storage.resize(static_cast<std::size_t>(rows * ld));
    for (std::size_t i = 0; i < s.storage.size(); ++i) s.storage[i] = seeded_uniform(seed, 1, 2, i);
    s.view = {s.storage.data(), rows, cols, ld};
    return s;
  }
  static float at(MatrixView m, std::int64_t r, std::int64_t c) { return m.data[r * m.ld + c]; }
};

TEST_F(CpuBackendTest, GemmMatchesNaiveLoopsForEveryTransposeOnStridedViews) {
  const std::int64_t m = 5, n = 4, k = 3;
  for (const bool ta : {false, true}) {
    for (const bool tb : {false, true}) {
      auto a = ta ? strided(k, m, 2, 1) : strided(m, k, 2, 1);
      auto b = tb ? strided(n, k, 1, 2) : strided(k, n, 1, 2);
      auto c = strided(m, n, 3, 3);
      const std::vector<float> before = c.storage;
      be->gemm(ta ? Transpose::Yes : Transpose::No, tb ? Transpose::Yes : Transpose::No, 0.5f, a.view, b.view, 2.0f,
               c.view);
      for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
          double sum = 0;
          for (std::int64_t l = 0; l < k; ++l) {
            sum += static_cast<double>(ta ? at(a.view, l, i) : at(a.view, i, l)) * (tb ? at(b.view, j, l) : at(b.view, l, j));
          }
          const double expected = 0.5 * sum + 2.0 * before[static_cast<std::size_t>(i * c.view.ld + j)];
          EXPECT_NEAR(at(c.view, i, j), expected, 1e-5) << ta << tb << " " << i << "," << j;
        }
        // The padding between rows is untouched.
        for (std::int64_t j = n; j < c.view.ld; ++j) {
          EXPECT_EQ(c.storage[static_cast<std::size_t>(i * c.view.ld + j)], before[static_cast<std::size_t>(i * c.view.ld + j)]);
        }
      }
    }
  }
}

TEST_F(CpuBackendTest, GemmWithZeroBetaIgnoresNaN) {
  std::vector<float> a{1, 2}, b{3, 4}, c{NAN};
  be->gemm(Transpose::No, Transpose::No, 1.0f, {a.data(), 1, 2, 2}, {b.data(), 2, 1, 1}, 0.0f, {c.data(), 1, 1, 1});
  EXPECT_FLOAT_EQ(c[0], 11.0f);
}

TEST_F(CpuBackendTest, RowVectorsAndSums) {
  auto y = strided(3, 4, 1, 4);
  const std::vector<float> before = y.storage;
  const std::vector<float> bias{1, 2, 3, 4};
  be->add_row_vector(bias.data(), y.view);
  for (std::int64_t r = 0; r < 3; ++r) {
    for (std::int64_t c = 0; c < 4; ++c) {
      EXPECT_FLOAT_EQ(at(y.view, r, c), before[static_cast<std::size_t>(r * 5 + c)] + bias[static_cast<std::size_t>(c)]);
    }
  }
  std::vector<float> grad{10, 10, 10, 10};
  be->sum_rows(y.view, 1.0f, grad.data());
  for (std::int64_t c = 0; c < 4; ++c) {
    double sum = 10;
    for (std::int64_t r = 0; r < 3; ++r) sum += at(y.view, r, c);
    EXPECT_NEAR(grad[static_cast<std::size_t>(c)], sum, 1e-5);
  }
}

/// Checks an analytic gradient `analytic` of loss(x) against central differences, element by element.
void expect_gradient(std::vector<float>& x, const std::vector<float>& analytic, const std::function<double()>& loss,
                     double tolerance = 2e-3) {
  ASSERT_EQ(x.size(), analytic.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const float saved = x[i];
    const float eps = 1e-2f;
    x[i] = saved + eps;
    const double up = loss();
    x[i] = saved - eps;
    const double down = loss();
    x[i] = saved;
    const double numeric = (up - down) / (2.0 * eps);
    EXPECT_NEAR(analytic[i], numeric, tolerance * std::max(1.0, std::abs(numeric))) << "element " << i;
  }
}

/// sum(out * weights) in double: a scalar loss whose gradient with respect to `out` is `weights`.
double weighted(const std::vector<float>& out, const std::vector<float>& weights) {
  double s = 0;
  for (std::size_t i = 0; i < out.size(); ++i) s += static_cast<double>(out[i]) * weights[i];
  return s;
}

std::vector<float> seeded(std::size_t n, std::uint64_t seed, float scale = 1.0f) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = scale * seeded_uniform(seed, 7, 8, i);
  return v;
}

TEST_F(CpuBackendTest, GeluBackwardIsTheDerivative) {
  std::vector<float> x = seeded(12, 1, 3.0f);
  const std::vector<float> w = seeded(12, 2);
  std::vector<float> y(12), dx(12);
  const MatrixView xv{x.data(), 3, 4, 4}, yv{y.data(), 3, 4, 4};
  std::vector<float> dy = w;
  be->gelu_backward(xv, {dy.data(), 3, 4, 4}, {dx.data(), 3, 4, 4});
  expect_gradient(x, dx, [&] {
    be->gelu_forward(xv, yv);
    return weighted(y, w);
  });
  be->gelu_forward(xv, yv);
  EXPECT_NEAR(y[0], 0.5 * x[0] * (1 + std::erf(x[0] / std::sqrt(2.0))), 2e-3);  // close to the exact GELU
}

TEST_F(CpuBackendTest, LayerNormForwardNormalisesAndBackwardIsTheGradient) {
  const std::int64_t rows = 3, cols = 6;
  std::vector<float> x = seeded(rows * cols, 3, 2.0f);
  std::vector<float> gamma = seeded(cols, 4), beta = seeded(cols, 5);
  const std::vector<float> w = seeded(rows * cols, 6);
  std::vector<float> y(x.size()), mean(rows), rstd(rows);
  const MatrixView xv{x.data(), rows, cols, cols}, yv{y.data(), rows, cols, cols};
  auto loss = [&] {
    be->layer_norm_forward(xv, gamma.data(), beta.data(), 1e-5f, yv, mean.data(), rstd.data());
    return weighted(y, w);
  };
  loss();
  std::vector<float> dy = w, dx(x.size()), dgamma(cols), dbeta(cols);
  be->layer_norm_backward({dy.data(), rows, cols, cols}, xv, gamma.data(), mean.data(), rstd.data(),
                          {dx.data(), rows, cols, cols}, dgamma.data(), dbeta.data());
  expect_gradient(x, dx, loss);
  expect_gradient(gamma, dgamma, loss);
  expect_gradient(beta, dbeta, loss);
}

TEST_F(CpuBackendTest, CausalSoftmaxWithMoreKeysThanQueriesMasksFromTheRight) {
  // 2 queries, the last two of 5 positions: row 0 sees keys 0..3, row 1 all 5.
  std::vector<float> x(2 * 5, 1.0f), y(x.size());
  be->softmax_forward({x.data(), 2, 5, 5}, 1.0f, true, {y.data(), 2, 5, 5});
  for (std::int64_t c = 0; c < 5; ++c) {
    EXPECT_FLOAT_EQ(y[static_cast<std::size_t>(c)], c < 4 ? 0.25f : 0.0f);
    EXPECT_FLOAT_EQ(y[static_cast<std::size_t>(5 + c)], 0.2f);
  }
}

TEST_F(CpuBackendTest, CausalSoftmaxMasksAndBackwardIsTheGradient) {
  const std::int64_t n = 4;
  const float scale = 0.7f;
  std::vector<float> x = seeded(n * n, 7, 2.0f);
  const std::vector<float> w = seeded(n * n, 8);
  std::vector<float> y(x.size());
  const MatrixView xv{x.data(), n, n, n}, yv{y.data(), n, n, n};
  auto loss = [&] {
    be->softmax_forward(xv, scale, true, yv);
    return weighted(y, w);
  };
  loss();
  for (std::int64_t r = 0; r < n; ++r) {
    double sum = 0;
    for (std::int64_t c = 0; c < n; ++c) {
      sum += y[static_cast<std::size_t>(r * n + c)];
      if (c > r) {
        EXPECT_EQ(y[static_cast<std::size_t>(r * n + c)], 0.0f);
      }
    }
    EXPECT_NEAR(sum, 1.0, 1e-6);
  }
  std::vector<float> dx = w;  // in place, as the layers use it
  be->softmax_backward(yv, {dx.data(), n, n, n}, scale, {dx.data(), n, n, n});
  expect_gradient(x, dx, loss);
}

/// Attention over two key blocks merged by log-sum-exp is attention over the whole row, and the
/// backward from the row's log-sum-exp and row sums is softmax_backward.
TEST_F(CpuBackendTest, BlockwiseSoftmaxMergesToTheWholeRowsAttention) {
  const std::int64_t queries = 3, keys = 6, width = 2, split = 4;
  const float scale = 0.7f;
  auto x = strided(queries, keys, 1, 11);
  auto v = strided(keys, width, 2, 12);
  std::vector<float> y(queries * keys), whole(queries * width), whole_lse(queries);
  const MatrixView yv{y.data(), queries, keys, keys};
  be->softmax_forward_lse(x.view, scale, false, yv, whole_lse.data());
  be->gemm(Transpose::No, Transpose::No, 1.0f, yv, v.view, 0.0f, {whole.data(), queries, width, width});
  std::vector<float> plain(queries * keys);
  be->softmax_forward(x.view, scale, false, {plain.data(), queries, keys, keys});
  for (std::size_t i = 0; i < y.size(); ++i) EXPECT_NEAR(y[i], plain[i], 1e-6f) << i;

  std::vector<float> out(queries * width), lse(queries, -INFINITY);
  const MatrixView out_view{out.data(), queries, width, width};
  for (const auto& [first, count] : {std::pair<std::int64_t, std::int64_t>{split, keys - split}, {0, split}}) {
    std::vector<float> probs(queries * count), part(queries * width), part_lse(queries);
    const MatrixView pv{probs.data(), queries, count, count};
    be->softmax_forward_lse(x.view.columns(first, count), scale, false, pv, part_lse.data());
    be->gemm(Transpose::No, Transpose::No, 1.0f, pv, v.view.row_range(first, count), 0.0f,
             {part.data(), queries, width, width});
    be->merge_attention(out_view, lse.data(), {part.data(), queries, width, width}, part_lse.data());
  }
  for (std::size_t i = 0; i < out.size(); ++i) EXPECT_NEAR(out[i], whole[i], 1e-6f) << i;
  for (std::size_t i = 0; i < lse.size(); ++i) EXPECT_NEAR(lse[i], whole_lse[i], 1e-6f) << i;

  std::vector<float> rebuilt(queries * keys);
  be->softmax_from_lse(x.view, scale, true, lse.data(), {rebuilt.data(), queries, keys, keys});
  for (std::int64_t r = 0; r < queries; ++r) {
    for (std::int64_t c = 0; c < keys; ++c) {
      const std::size_t i = static_cast<std::size_t>(r * keys + c);
      const bool masked = c > r + keys - queries;
      EXPECT_NEAR(rebuilt[i], masked ? 0.0f : y[i], 1e-6f) << r << ", " << c;
    }
  }
  auto dy = strided(queries, keys, 0, 13);
  std::vector<float> sums(queries), want(queries * keys), got(queries * keys);
  be->row_dot(dy.view, yv, sums.data());
  be->softmax_backward(yv, dy.view, scale, {want.data(), queries, keys, keys});
  be->softmax_backward_rows(yv, dy.view, scale, sums.data(), {got.data(), queries, keys, keys});
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6f) << i;
}

TEST_F(CpuBackendTest, CrossEntropyLossAndGradient) {
  const std::int64_t rows = 3, vocab = 5;
  std::vector<float> logits = seeded(rows * vocab, 9, 2.0f);
  const std::vector<std::int32_t> labels{1, 4, 0};
  std::vector<float> d(logits.size());
  const MatrixView lv{logits.data(), rows, vocab, vocab};
  const double loss = be->cross_entropy(lv, labels, 0.5f, {d.data(), rows, vocab, vocab});
  double expected = 0;
  for (std::int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (std::int64_t c = 0; c < vocab; ++c) sum += std::exp(static_cast<double>(logits[static_cast<std::size_t>(r * vocab + c)]));
    expected += std::log(sum) - logits[static_cast<std::size_t>(r * vocab + labels[static_cast<std::size_t>(r)])];
  }
  EXPECT_NEAR(loss, expected / rows, 1e-6);
  std::vector<float> scratch(d.size());
  expect_gradient(logits, d, [&] { return 0.5 * be->cross_entropy(lv, labels, 1.0f, {scratch.data(), rows, vocab, vocab}); });
}

TEST_F(CpuBackendTest, EmbeddingGathersAndScattersRows) {
  std::vector<float> table = seeded(4 * 3, 10);
  const std::vector<std::int32_t> tokens{2, 0, 2};
  std::vector<float> out(9, 1.0f);
  be->embedding_forward({table.data(), 4, 3, 3}, tokens, {out.data(), 3, 3, 3});
  for (int r = 0; r < 3; ++r) {
    for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(out[static_cast<std::size_t>(r * 3 + c)], 1.0f + table[static_cast<std::size_t>(tokens[static_cast<std::size_t>(r)] * 3 + c)]);
  }
  std::vector<float> dtable(12, 0.0f);
  be->embedding_backward({out.data(), 3, 3, 3}, tokens, {dtable.data(), 4, 3, 3});
  for (int c = 0; c < 3; ++c) {
    EXPECT_FLOAT_EQ(dtable[static_cast<std::size_t>(2 * 3 + c)], out[static_cast<std::size_t>(c)] + out[static_cast<std::size_t>(6 + c)]);
    EXPECT_FLOAT_EQ(dtable[static_cast<std::size_t>(1 * 3 + c)], 0.0f);
  }
}

TEST_F(CpuBackendTest, OptimizerSteps) {
  std::vector<float> p{1.0f, -2.0f}, g{0.5f, 0.25f};
  be->sgd_step(p.data(), g.data(), 2, 0.1f);
  EXPECT_FLOAT_EQ(p[0], 0.95f);
  EXPECT_FLOAT_EQ(p[1], -2.025f);
  std::vector<float> m(2, 0.0f), v(2, 0.0f);
  AdamHyper hyper;
  hyper.learning_rate = 0.01f;
  be->adam_step(p.data(), g.data(), m.data(), v.data(), 2, hyper);
  // First Adam step: the bias-corrected update is lr * g / (|g| + eps) = lr * sign(g).
  EXPECT_NEAR(p[0], 0.95f - 0.01f, 1e-6);
  EXPECT_NEAR(p[1], -2.025f - 0.01f, 1e-6);
}

TEST_F(CpuBackendTest, MemoryIsZeroFilledAndCommunicationNeedsMpi) {
  float* d = be->allocate(5);
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d[i], 0.0f);
  be->release(d);
  EXPECT_EQ(be->world_size(), 1);
  EXPECT_THROW((void)be->send(nullptr, 0, 0, 0), BackendError);
  const int first = be->record_mark();
  const int second = be->record_mark();
  const auto times = be->mark_times_ns();
  ASSERT_EQ(times.size(), 2u);
  EXPECT_LE(times[static_cast<std::size_t>(first)], times[static_cast<std::size_t>(second)]);
}

}  // namespace
}  // namespace mpsim::executor
