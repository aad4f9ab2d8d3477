// The profiler's measuring code against a backend with a synthetic clock (one rank): it must report
// exactly the rates the clock was made to show. Plus the GEMM shapes of a model and the size ladder.
#include "executor/profile/profiler.h"

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <gtest/gtest.h>

namespace mpsim::executor::profile {
namespace {

class OneRankGroup : public Group {
 public:
  [[nodiscard]] int size() const noexcept override { return 1; }
  [[nodiscard]] int rank() const noexcept override { return 0; }
};

/// One rank whose clock advances by what each call would cost on a machine with a known GEMM rate
/// (a function of the shape) and memory bandwidth. Everything else is free.
class SyntheticBackend : public Backend {
 public:
  double memory_bandwidth = 20e9;
  /// 10 GFLOP/s for m < 512, 40 GFLOP/s from there on.
  static double gemm_rate(std::int64_t m) { return m < 512 ? 10e9 : 40e9; }

  [[nodiscard]] std::string name() const override { return "synthetic"; }
  [[nodiscard]] int world_rank() const noexcept override { return 0; }
  [[nodiscard]] int world_size() const noexcept override { return 1; }
  [[nodiscard]] std::int64_t max_tag() const override { return 32767; }
  [[nodiscard]] float* allocate(std::size_t count) override {
    buffers_.push_back(std::make_unique<float[]>(count));
    return buffers_.back().get();
  }
  void release(float*) noexcept override {}
  void upload(std::span<const float>, float*) override {}
  void download(const float*, std::span<float>) override {}
  void copy(MatrixView, MatrixView) override {}
  void fill(MatrixView, float) override {}
  void gemm(Transpose ta, Transpose, float, MatrixView a, MatrixView, float, MatrixView c) override {
    const std::int64_t m = c.rows;
    const std::int64_t k = ta == Transpose::No ? a.cols : a.rows;
    clock_ns_ += 2.0 * static_cast<double>(m * c.cols * k) / gemm_rate(m) * 1e9;
  }
  void axpy(float, MatrixView x, MatrixView) override {
    clock_ns_ += 12.0 * static_cast<double>(x.rows * x.cols) / memory_bandwidth * 1e9;
  }
  void add_row_vector(const float*, MatrixView) override {}
  void sum_rows(MatrixView, float, float*) override {}
  void gelu_forward(MatrixView, MatrixView) override {}
  void gelu_backward(MatrixView, MatrixView, MatrixView) override {}
  void layer_norm_forward(MatrixView, const float*, const float*, float, MatrixView, float*, float*) override {}
  void layer_norm_backward(MatrixView, MatrixView, const float*, const float*, const float*, MatrixView, float*,
                           float*) override {}
  void softmax_forward(MatrixView, float, bool, MatrixView) override {}
  void softmax_backward(MatrixView, MatrixView, float, MatrixView) override {}
  void softmax_forward_lse(MatrixView, float, bool, MatrixView, float*) override {}
  void softmax_from_lse(MatrixView, float, bool, const float*, MatrixView) override {}
  void merge_attention(MatrixView, float*, MatrixView, const float*) override {}
  void row_dot(MatrixView, MatrixView, float*) override {}
  void softmax_backward_rows(MatrixView, MatrixView, float, const float*, MatrixView) override {}
  void embedding_forward(MatrixView, std::span<const std::int32_t>, MatrixView) override {}
  void embedding_backward(MatrixView, std::span<const std::int32_t>, MatrixView) override {}
  double cross_entropy(MatrixView, std::span<const std::int32_t>, float, MatrixView) override { return 0; }
  void sgd_step(float*, const float*, std::size_t, float) override {}
  void adam_step(float*, const float*, float*, float*, std::size_t, const AdamHyper&) override {}
  [[nodiscard]] std::unique_ptr<Group> make_group(std::span<const int>) override {
    return std::make_unique<OneRankGroup>();
  }
  [[nodiscard]] std::unique_ptr<SendHandle> send(const float*, std::size_t, int, int) override {
    throw BackendError("no peers");
  }
  void recv(float*, std::size_t, int, int) override { throw BackendError("no peers"); }
  void host_send(std::span<const float>, int, int) override { throw BackendError("no peers"); }
  void host_recv(std::span<float>, int, int) override { throw BackendError("no peers"); }
  void all_reduce_sum(Group&, float*, std::size_t) override {}
  void reduce_scatter_sum(Group&, float*, std::size_t) override {}
  void all_gather(Group&, float*, std::size_t) override {}
  void all_to_all(Group&, const float*, std::span<const std::size_t>, float*, std::span<const std::size_t>) override {}
  void all_to_all_counts(Group&, std::span<const std::int64_t>, std::span<std::int64_t>) override {}
  void barrier() override {}
  [[nodiscard]] int record_mark() override {
    marks_.push_back(std::llround(clock_ns_));
    return static_cast<int>(marks_.size()) - 1;
  }
  void synchronize() override {}
  [[nodiscard]] std::vector<std::int64_t> mark_times_ns() override { return marks_; }
  void reset_marks() override { marks_.clear(); }

 private:
  double clock_ns_ = 0;
  std::vector<std::int64_t> marks_;
  std::vector<std::unique_ptr<float[]>> buffers_;
};

TEST(ProfileMachine, ReportsTheRatesOfTheSyntheticClock) {
  SyntheticBackend backend;
  ProfileOptions options;
  // 256^3 (10 GFLOP/s, 33.5 MFLOP) and 512^3 (40 GFLOP/s, 268 MFLOP), weighted by their FLOPs.
  options.gemm_shapes = {{256, 256, 256, Transpose::No, Transpose::No, "small", 1},
                         {512, 512, 512, Transpose::No, Transpose::Yes, "large", 8}};
  options.axpy_floats = 1 << 20;
  const ProfileResult r = profile_machine(backend, options);
  EXPECT_EQ(r.backend, "synthetic");
  EXPECT_EQ(r.ranks, 1);
  ASSERT_EQ(r.gemms.size(), 2u);
  EXPECT_NEAR(r.gemms[0].flops_per_s, 10e9, 10e9 * 1e-6);
  EXPECT_NEAR(r.gemms[1].flops_per_s, 40e9, 40e9 * 1e-6);
  // Weighted harmonic mean: (1 + 8) / (1/10 + 8/40) GFLOP/s = 9 / 0.3 = 30 GFLOP/s.
  EXPECT_NEAR(r.gemm_flops_per_s, 30e9, 30e9 * 1e-6);
  EXPECT_NEAR(r.memory_bandwidth, 20e9, 20e9 * 1e-6);
  EXPECT_TRUE(r.links.empty());      // one rank: nothing to ping
  EXPECT_TRUE(r.allreduce.empty());
  EXPECT_EQ(r.link.beta_bytes_per_s, 0);
}

TEST(WeightedHarmonicRate, SkipsUnmeasuredShapes) {
  std::vector<GemmMeasurement> g(3);
  g[0].shape.weight = 1;
  g[0].flops_per_s = 10;
  g[1].shape.weight = 3;
  g[1].flops_per_s = 30;
  g[2].shape.weight = 5;  // not measured
  EXPECT_DOUBLE_EQ(weighted_harmonic_rate(g), 4.0 / (1.0 / 10 + 3.0 / 30));  // 20
  EXPECT_EQ(weighted_harmonic_rate({}), 0);
}

TEST(MessageSizes, PowersOfFourUpToTheLargest) {
  EXPECT_EQ(message_sizes(4, 64LL << 20),
            (std::vector<std::int64_t>{4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216,
                                       67108864}));
  EXPECT_EQ(message_sizes(4, 100), (std::vector<std::int64_t>{4, 16, 64, 100}));  // the largest itself last
  EXPECT_EQ(message_sizes(1, 6), (std::vector<std::int64_t>{4}));                   // whole floats only
}

TEST(FittedSamples, FromTheProtocolSwitchUp) {
  const std::vector<TransferSample> all = {{4, 1e-6}, {1024, 2e-6}, {4096, 50e-6}, {16384, 55e-6}, {65536, 70e-6}};
  const std::vector<TransferSample> large = fitted_samples(all, 4096);
  ASSERT_EQ(large.size(), 3u);
  EXPECT_EQ(large.front().bytes, 4096);
  // Fewer than two large enough: every sample.
  EXPECT_EQ(fitted_samples(all, 65536).size(), all.size());
}

model::Model tiny_gpt() {
  model::Model m;
  model::TransformerShape t;
  t.layers = 2;
  t.hidden = 64;
  t.heads = 4;
  t.kv_heads = 4;
  t.head_dim = 16;
  t.ffn = 256;
  t.seq_len = 32;
  t.vocab = 100;
  m.shape = t;
  return m;
}

// Medians swamped by preemptions (every size about 5 ms: no bandwidth in them) fall back to the fastest
// round trips, which follow 10 us + bytes / 10 GB/s exactly; medians that fit are kept.
TEST(FitLink, FallsBackToTheFastestRoundTripsWhenTheMediansGiveNoFit) {
  LinkMeasurement link;
  std::vector<TransferSample> fastest;
  for (std::int64_t bytes = 4096; bytes <= (16LL << 20); bytes *= 4) {
    link.samples.push_back({bytes, 5e-3 - static_cast<double>(bytes) * 1e-12});
    fastest.push_back({bytes, 10e-6 + static_cast<double>(bytes) / 10e9});
  }
  fit_link(link, fastest, 4096);
  EXPECT_TRUE(link.fit_on_fastest);
  EXPECT_NEAR(link.fit.alpha_s, 10e-6, 1e-12);
  EXPECT_NEAR(link.fit.beta_bytes_per_s, 10e9, 1e3);
  EXPECT_EQ(link.fit_min_bytes, 4096);
  link.samples = fastest;
  fit_link(link, {}, 4096);
  EXPECT_FALSE(link.fit_on_fastest);
  EXPECT_NEAR(link.fit.alpha_s, 10e-6, 1e-12);
}

TEST(GemmShapesForModel, EveryProductOfAStepWeightedByItsFlops) {
  const std::vector<GemmShape> shapes = gemm_shapes_for_model(tiny_gpt(), 1, "cpu");
  // 5 linear layers (qkv, attention-out, mlp-up, mlp-down, logits) x 3 products + 2 attention products.
  ASSERT_EQ(shapes.size(), 17u);
  EXPECT_EQ(shapes[0].label, "qkv");
  EXPECT_EQ(shapes[0].m, 32);
  EXPECT_EQ(shapes[0].n, 192);
  EXPECT_EQ(shapes[0].k, 64);
  EXPECT_EQ(shapes[1].label, "qkv dX");
  EXPECT_EQ(shapes[1].tb, Transpose::Yes);
  EXPECT_EQ(shapes[2].label, "qkv dW");
  EXPECT_EQ(shapes[2].ta, Transpose::Yes);
  EXPECT_EQ(shapes[2].m, 64);
  EXPECT_EQ(shapes[2].k, 32);
  // Total: per layer 3 x 2T(3h^2 + h^2 + 4h^2 + 4h^2) for the linears; logits 3 x 2ThV once;
  // attention 3 x heads x (2 s^2 d + 2 s^2 d) per layer.
  const double T = 32, h = 64, V = 100, s = 32, d = 16, heads = 4, layers = 2;
  const double expected = layers * 3 * 2 * T * 12 * h * h + 3 * 2 * T * h * V + layers * 3 * heads * 4 * s * s * d;
  double total = 0;
  for (const auto& g : shapes) total += g.weight;
  EXPECT_DOUBLE_EQ(total, expected);
}

TEST(GemmShapesForModel, MicroBatchScalesTheTokens) {
  const std::vector<GemmShape> shapes = gemm_shapes_for_model(tiny_gpt(), 4, "cpu");
  EXPECT_EQ(shapes[0].m, 128);
  EXPECT_EQ(shapes[2].k, 128);
}

TEST(GemmShapesForModel, ModelWithoutHyperparametersGetsTheDefaults) {
  model::Model listed;
  listed.layers.resize(3);
  const auto shapes = gemm_shapes_for_model(listed, 1, "cpu");
  EXPECT_EQ(shapes.size(), default_gemm_shapes("cpu").size());
  EXPECT_GT(default_gemm_shapes("cuda").front().m, default_gemm_shapes("cpu").front().m);
}

}  // namespace
}  // namespace mpsim::executor::profile
