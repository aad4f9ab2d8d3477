// Layer gradients (input and every parameter) against central finite differences of a scalar loss,
// on the CPU backend without tensor or expert parallelism (mixture-of-experts blocks included).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "executor/backend/cpu/cpu_backend.h"
#include "executor/net/init.h"
#include "executor/net/layers.h"
#include "executor/net/network.h"

namespace mpsim::executor {
namespace {

NetDims small_dims() {
  NetDims d;
  d.hidden = 8;
  d.heads = 2;
  d.head_dim = 4;
  d.ffn = 16;
  d.generic_ffn = 32;
  d.seq = 4;
  d.vocab = 11;
  d.positions = 4;
  return d;
}

/// `d` with an MoE MLP of 4 experts of width 8.
NetDims with_moe(NetDims d, std::int64_t top_k, std::int64_t shared_ffn, bool router_bias) {
  d.moe.experts = 4;
  d.moe.top_k = top_k;
  d.moe.expert_ffn = 8;
  d.moe.shared_ffn = shared_ffn;
  d.moe.router_bias = router_bias;
  return d;
}

struct Case {
  const char* name;
  std::function<std::unique_ptr<Layer>(const NetDims&)> make;
  bool takes_input;     // false: the embedding
  bool is_loss;         // true: the output head (loss from labels, no dy)
  bool keep_scores = true;
};

class LayerGradientTest : public ::testing::TestWithParam<Case> {};

TEST_P(LayerGradientTest, BackwardMatchesFiniteDifferences) {
  const Case& c = GetParam();
  const NetDims dims = small_dims();
  auto backend = make_cpu_backend({});
  MemoryMeter meter;
  LayerContext ctx;
  ctx.backend = backend.get();
  ctx.meter = &meter;
  ctx.keep_attention_scores = c.keep_scores;
  std::unique_ptr<Layer> layer = c.make(dims);
  std::vector<std::vector<float>> values, grads;
  for (Param& p : layer->params()) {
    set_local_shape(p, 1);
    values.emplace_back(p.count());
    grads.emplace_back(p.count(), 0.0f);
    for (std::int64_t r = 0; r < p.rows; ++r) {
      for (std::int64_t col = 0; col < p.cols; ++col) {
        values.back()[static_cast<std::size_t>(r * p.cols + col)] = initial_value(3, 1, p, r, col);
      }
    }
    p.data = values.back().data();
    p.grad = grads.back().data();
  }
  Batch batch;
  batch.samples = 2;
  batch.rows = batch.samples * dims.seq;
  batch.loss_scale = 1.0f;
  for (std::int64_t r = 0; r < batch.rows; ++r) {
    batch.tokens.push_back(static_cast<std::int32_t>((r * 7 + 3) % dims.vocab));
    batch.labels.push_back(static_cast<std::int32_t>((r * 5 + 1) % dims.vocab));
    batch.positions.push_back(static_cast<std::int32_t>(r % dims.seq));
  }
  std::vector<float> x(static_cast<std::size_t>(batch.rows * dims.hidden));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = seeded_uniform(5, 1, 1, i);
  std::vector<float> weights(x.size());  // d loss / d output
  for (std::size_t i = 0; i < weights.size(); ++i) weights[i] = seeded_uniform(6, 1, 1, i);
  const MatrixView xv = c.takes_input ? MatrixView{x.data(), batch.rows, dims.hidden, dims.hidden} : MatrixView{};

  auto loss = [&]() -> double {
    auto stash = layer->forward(ctx, batch, xv);
    if (c.is_loss) return stash->loss;
    std::vector<float> y(x.size());
    backend->download(stash->output.data(), y);
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += static_cast<double>(y[i]) * weights[i];
    return s;
  };

  auto stash = layer->forward(ctx, batch, xv);
  const MatrixView dy = c.is_loss ? MatrixView{} : MatrixView{weights.data(), batch.rows, dims.hidden, dims.hidden};
  layer->backward_input(ctx, batch, *stash, dy);
  layer->backward_weight(ctx, batch, *stash);
  std::vector<float> dx;
  if (c.takes_input) {
    dx.resize(x.size());
    backend->download(stash->input_grad.data(), dx);
  }
  stash.reset();

  auto check = [&](std::vector<float>& v, const std::vector<float>& analytic, const std::string& what) {
    for (std::size_t i = 0; i < v.size(); ++i) {
      const float saved = v[i];
      const float eps = 1e-2f;
      v[i] = saved + eps;
      const double up = loss();
      v[i] = saved - eps;
      const double down = loss();
      v[i] = saved;
      const double numeric = (up - down) / (2.0 * eps);
      ASSERT_NEAR(analytic[i], numeric, 3e-3 * std::max(1.0, std::abs(numeric))) << what << "[" << i << "]";
    }
  };
  if (c.takes_input) check(x, dx, "input");
  for (std::size_t k = 0; k < values.size(); ++k) check(values[k], grads[k], layer->params()[k].name);
  EXPECT_GT(meter.peak, 0);
}

INSTANTIATE_TEST_SUITE_P(
    Layers, LayerGradientTest,
    ::testing::Values(Case{"transformer", [](const NetDims& d) { return make_transformer_block(1, d, 1); }, true, false},
                      Case{"transformer_selective", [](const NetDims& d) { return make_transformer_block(1, d, 1); },
                           true, false, false},
                      Case{"moe_transformer",
                           [](const NetDims& d) {
                             return make_moe_transformer_block(1, with_moe(d, 2, 8, true), 1, 1, 0);
                           },
                           true, false},
                      // k = 1 without shared experts: the router learns through the one weight alone.
                      Case{"moe_transformer_top1",
                           [](const NetDims& d) {
                             return make_moe_transformer_block(1, with_moe(d, 1, 0, false), 1, 1, 0);
                           },
                           true, false},
                      Case{"mlp", [](const NetDims& d) { return make_mlp_block(1, d, 1); }, true, false},
                      Case{"embedding", [](const NetDims& d) { return make_embedding(0, d); }, false, false},
                      Case{"output_head", [](const NetDims& d) { return make_output_head(2, d); }, true, true},
                      Case{"squared_loss", [](const NetDims&) { return make_squared_loss(); }, true, true}),
    [](const ::testing::TestParamInfo<Case>& info) { return std::string(info.param.name); });

TEST(NetDimsTest, WidthsComeFromTheShapeOrTheGenericLayers) {
  model::Model m;
  model::TransformerShape s;
  s.hidden = 32;
  s.heads = 4;
  s.head_dim = 8;
  s.ffn = 128;
  s.seq_len = 16;
  s.vocab = 64;
  m.shape = s;
  const NetDims d = net_dims(m, 2);
  EXPECT_EQ(d.hidden, 32);
  EXPECT_EQ(d.ffn, 128);
  EXPECT_EQ(d.generic_ffn, 128);
  EXPECT_EQ(d.positions, 16);
  EXPECT_THROW((void)net_dims(m, 3), std::invalid_argument);

  model::Model listed;
  model::Layer generic;
  generic.kind = model::LayerKind::Generic;
  generic.parameters = 8 * 20 * 20 + 7 * 20;  // exactly an MLP block of width 20
  listed.layers = {generic, generic};
  EXPECT_EQ(net_dims(listed, 1).hidden, 20);
  EXPECT_EQ(net_dims(listed, 1).seq, 1);
}

}  // namespace
}  // namespace mpsim::executor
