// The mixture-of-experts MLP's forward pass on the CPU backend (one rank, every expert local):
// a case small enough to work out by hand, and a larger one against a plain per-token reference.
// Its gradients are checked against finite differences in layers_test.cpp.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <string>
#include <vector>

#include "executor/backend/cpu/cpu_backend.h"
#include "executor/net/init.h"
#include "executor/net/moe_mlp.h"
#include "executor/net/network.h"

namespace mpsim::executor {
namespace {

/// The MLP's parameters in host memory, by name.
struct HostParams {
  std::vector<Param> params;
  std::vector<std::vector<float>> values, grads;

  void allocate() {
    values.clear();
    grads.clear();
    values.reserve(params.size());
    grads.reserve(params.size());
    for (Param& p : params) {
      set_local_shape(p, 1);
      values.emplace_back(p.count(), 0.0f);
      grads.emplace_back(p.count(), 0.0f);
      p.data = values.back().data();
      p.grad = grads.back().data();
    }
  }
  std::vector<float>& operator[](const std::string& name) {
    for (std::size_t i = 0; i < params.size(); ++i) {
      if (params[i].name == name) return values[i];
    }
    throw std::out_of_range(name);
  }
};

struct Fixture {
  std::unique_ptr<Backend> backend = make_cpu_backend({});
  MemoryMeter meter;
  LayerContext ctx;
  Fixture() {
    ctx.backend = backend.get();
    ctx.meter = &meter;
  }
  std::vector<float> forward(const MoeMlp& mlp, HostParams& p, std::vector<float>& x, std::int64_t hidden) {
    MoeStash s;
    const auto rows = static_cast<std::int64_t>(x.size()) / hidden;
    mlp.forward(ctx, p.params, {x.data(), rows, hidden, hidden}, s);
    std::vector<float> y(x.size());
    backend->download(s.out.data(), y);
    return y;
  }
};

TEST(MoeMlpTest, OneTokenOneExpertByHand) {
  // hidden 2, two experts of width 1, top 1. x = [1, -1] normalises to [1, -1] (gamma 1, beta 0, up to
  // the epsilon); the router is the identity, so the logits are [1, -1] and expert 0 gets the token
  // with weight 1 / (1 + e^-2) = 0.8807971. Expert 0: fc1 = [1, 0]^T gives 1, gelu(1) = 0.8411920,
  // fc2 = [1, 2] gives [0.8411920, 1.6823840]. Out = x + 0.8807971 x that = [1.7409194, 0.4818389].
  MoeDims moe;
  moe.experts = 2;
  moe.top_k = 1;
  moe.expert_ffn = 1;
  HostParams p;
  const MoeMlp mlp(p.params, moe, 2, 1, 0);
  p.allocate();
  p["mlp.ln.gamma"] = {1, 1};
  p["moe.router.weight"] = {1, 0, 0, 1};
  p["moe.expert0.fc1.weight"] = {1, 0};
  p["moe.expert0.fc2.weight"] = {1, 2};
  p["moe.expert1.fc1.weight"] = {5, 5};  // unused: no token is routed to expert 1
  p["moe.expert1.fc2.weight"] = {5, 5};
  Fixture f;
  std::vector<float> x{1, -1};
  const std::vector<float> y = f.forward(mlp, p, x, 2);
  EXPECT_NEAR(y[0], 1.7409194f, 2e-5f);
  EXPECT_NEAR(y[1], 0.4818389f, 2e-5f);
}

double gelu(double v) {
  return 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
}

/// out = in W + b for one row (W is in x out, row-major).
std::vector<double> affine(const std::vector<double>& in, const std::vector<float>& w, const std::vector<float>& b) {
  std::vector<double> out(b.begin(), b.end());
  for (std::size_t i = 0; i < in.size(); ++i) {
    for (std::size_t j = 0; j < out.size(); ++j) out[j] += in[i] * w[i * out.size() + j];
  }
  return out;
}

TEST(MoeMlpTest, MatchesAPerTokenReference) {
  const std::int64_t h = 6, tokens = 7;
  MoeDims moe;
  moe.experts = 4;
  moe.top_k = 2;
  moe.expert_ffn = 5;
  moe.shared_ffn = 3;
  moe.router_bias = true;
  HostParams p;
  const MoeMlp mlp(p.params, moe, h, 1, 0);
  p.allocate();
  for (std::size_t k = 0; k < p.params.size(); ++k) {
    const Param& q = p.params[k];
    for (std::int64_t r = 0; r < q.rows; ++r) {
      for (std::int64_t c = 0; c < q.cols; ++c)
        p.values[k][static_cast<std::size_t>(r * q.cols + c)] = initial_value(4, 1, q, r, c);
    }
  }
  std::vector<float> x(static_cast<std::size_t>(tokens * h));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = seeded_uniform(9, 2, 3, i);
  Fixture f;
  const std::vector<float> y = f.forward(mlp, p, x, h);

  for (std::int64_t t = 0; t < tokens; ++t) {
    const auto row = x.begin() + t * h;
    const double mean = std::accumulate(row, row + h, 0.0) / static_cast<double>(h);
    double var = 0;
    for (std::int64_t j = 0; j < h; ++j) var += (row[j] - mean) * (row[j] - mean);
    var /= static_cast<double>(h);
    std::vector<double> normed(static_cast<std::size_t>(h));
    for (std::size_t j = 0; j < normed.size(); ++j) {
      normed[j] = (row[static_cast<std::ptrdiff_t>(j)] - mean) / std::sqrt(var + 1e-5) * p["mlp.ln.gamma"][j] +
                  p["mlp.ln.beta"][j];
    }
    const std::vector<double> logits = affine(normed, p["moe.router.weight"], p["moe.router.bias"]);
    const double top = *std::max_element(logits.begin(), logits.end());
    std::vector<double> probs(logits.size());
    for (std::size_t e = 0; e < probs.size(); ++e) probs[e] = std::exp(logits[e] - top);
    const double sum = std::accumulate(probs.begin(), probs.end(), 0.0);
    for (double& v : probs) v /= sum;
    std::vector<std::size_t> order(probs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return probs[a] > probs[b]; });
    std::vector<double> want(row, row + h);
    auto mlp_of = [&](const std::string& prefix) {
      std::vector<double> inner = affine(normed, p[prefix + "fc1.weight"], p[prefix + "fc1.bias"]);
      for (double& v : inner) v = gelu(v);
      return affine(inner, p[prefix + "fc2.weight"], p[prefix + "fc2.bias"]);
    };
    const std::vector<double> shared = mlp_of("moe.shared.");
    for (std::size_t j = 0; j < want.size(); ++j) want[j] += shared[j];
    for (std::int64_t s = 0; s < moe.top_k; ++s) {
      const std::size_t e = order[static_cast<std::size_t>(s)];
      const std::vector<double> out = mlp_of("moe.expert" + std::to_string(e) + ".");
      for (std::size_t j = 0; j < want.size(); ++j) want[j] += probs[e] * out[j];
    }
    for (std::int64_t j = 0; j < h; ++j) {
      EXPECT_NEAR(y[static_cast<std::size_t>(t * h + j)], want[static_cast<std::size_t>(j)], 1e-5) << t << "," << j;
    }
  }
}

TEST(MoeMlpTest, ExpertRanksHoldTheirShareOfTheExperts) {
  MoeDims moe;
  moe.experts = 4;
  moe.top_k = 2;
  moe.expert_ffn = 3;
  std::vector<Param> params;
  const MoeMlp mlp(params, moe, 2, 2, 1);
  std::vector<std::string> experts;
  for (const Param& q : params) {
    if (q.expert) experts.push_back(q.name);
  }
  EXPECT_EQ(experts,
            (std::vector<std::string>{"moe.expert2.fc1.weight", "moe.expert2.fc1.bias", "moe.expert2.fc2.weight",
                                      "moe.expert2.fc2.bias", "moe.expert3.fc1.weight", "moe.expert3.fc1.bias",
                                      "moe.expert3.fc2.weight", "moe.expert3.fc2.bias"}));
  std::vector<Param> more;
  EXPECT_THROW(MoeMlp(more, moe, 2, 3, 0), std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::executor
