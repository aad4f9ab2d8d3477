#include "executor/net/layers.h"

#include <cmath>
#include <optional>
#include <stdexcept>

#include "executor/net/linear.h"
#include "executor/net/moe_mlp.h"

namespace mpsim::executor {

void LayerContext::tensor_all_reduce(MatrixView m) const {
  if (tensor == nullptr || tensor_size <= 1) return;
  // Activations are whole buffers (ld == cols), so the matrix is one contiguous range.
  backend->all_reduce_sum(*tensor, m.data, static_cast<std::size_t>(m.rows * m.cols));
}

Param& Layer::add_param(std::string name, std::int64_t rows, std::int64_t cols, Split split, Param::Init init) {
  params_.push_back({.name = std::move(name), .rows = rows, .cols = cols, .split = split, .init = init});
  return params_.back();
}

void set_local_shape(Param& p, int size) {
  p.local_rows = p.split == Split::Rows ? p.rows / size : p.rows;
  p.local_cols = p.split == Split::Columns ? p.cols / size : p.cols;
}

namespace {

// --- the MLP half (shared by transformer blocks and Generic blocks) --------------------------------

struct MlpParams {
  std::size_t ln_gamma, ln_beta, fc1_w, fc1_b, fc2_w, fc2_b;  // indices into params_
};

struct MlpStash {
  MatrixView x;  // the input (owned by whoever made it)
  Buffer normed, mean, rstd, pre, act, out;
  MatrixView dy;  // gradient of the output, kept for the weight half
  Buffer dpre, dnormed;
};

MlpParams add_mlp(std::vector<Param>& params, std::int64_t hidden, std::int64_t inner,
                  const std::string& prefix) {
  auto add = [&](const std::string& n, std::int64_t r, std::int64_t c, Split s, Param::Init i) {
    Param p;
    p.name = prefix + n;
    p.rows = r;
    p.cols = c;
    p.split = s;
    p.init = i;
    params.push_back(std::move(p));
    return params.size() - 1;
  };
  MlpParams m{};
  m.ln_gamma = add("ln.gamma", 1, hidden, Split::None, Param::Init::Gamma);
  m.ln_beta = add("ln.beta", 1, hidden, Split::None, Param::Init::Beta);
  m.fc1_w = add("fc1.weight", hidden, inner, Split::Columns, Param::Init::Weight);
  m.fc1_b = add("fc1.bias", 1, inner, Split::Columns, Param::Init::Bias);
  m.fc2_w = add("fc2.weight", inner, hidden, Split::Rows, Param::Init::Weight);
  m.fc2_b = add("fc2.bias", 1, hidden, Split::None, Param::Init::Bias);
  return m;
}

void mlp_forward(const LayerContext& ctx, const std::vector<Param>& p, const MlpParams& m, MatrixView x, MlpStash& s) {
  Backend& be = *ctx.backend;
  const std::int64_t rows = x.rows;
  const std::int64_t inner = p[m.fc1_w].local_cols;
  s.x = x;
  s.normed = ctx.buffer(rows, x.cols);
  s.mean = ctx.buffer(rows, 1);
  s.rstd = ctx.buffer(rows, 1);
  be.layer_norm_forward(x, p[m.ln_gamma].data, p[m.ln_beta].data, ctx.layer_norm_epsilon, s.normed.view(),
                        s.mean.data(), s.rstd.data());
  s.pre = ctx.buffer(rows, inner);
  linear(ctx, s.normed.view(), p[m.fc1_w], &p[m.fc1_b], s.pre.view());
  s.act = ctx.buffer(rows, inner);
  be.gelu_forward(s.pre.view(), s.act.view());
  s.out = ctx.buffer(rows, x.cols);
  linear(ctx, s.act.view(), p[m.fc2_w], nullptr, s.out.view());
  ctx.tensor_all_reduce(s.out.view());  // row-parallel fc2
  be.add_row_vector(p[m.fc2_b].data, s.out.view());
  be.axpy(1.0f, x, s.out.view());  // residual
}

/// dx = dy + LN'(fc1'(gelu'(fc2'(dy)))), all-reduced over the tensor group before the norm.
void mlp_backward_input(const LayerContext& ctx, std::vector<Param>& p, const MlpParams& m, MlpStash& s, MatrixView dy,
                        Buffer& dx) {
  Backend& be = *ctx.backend;
  const std::int64_t rows = dy.rows;
  s.dy = dy;
  Buffer dact = ctx.buffer(rows, s.act.view().cols);
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, dy, p[m.fc2_w].value(), 0.0f, dact.view());
  s.dpre = ctx.buffer(rows, s.pre.view().cols);
  be.gelu_backward(s.pre.view(), dact.view(), s.dpre.view());
  dact.reset();
  s.pre.reset();  // as autograd frees a node's saved tensors once it has run: the weight half reads dpre
  s.dnormed = ctx.buffer(rows, dy.cols);
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dpre.view(), p[m.fc1_w].value(), 0.0f, s.dnormed.view());
  ctx.tensor_all_reduce(s.dnormed.view());  // conjugate of the column-parallel fc1
  dx = ctx.buffer(rows, dy.cols);
  be.layer_norm_backward(s.dnormed.view(), s.x, p[m.ln_gamma].data, s.mean.data(), s.rstd.data(), dx.view(),
                         p[m.ln_gamma].grad, p[m.ln_beta].grad);
  s.dnormed.reset();
  s.mean.reset();
  s.rstd.reset();
  be.axpy(1.0f, dy, dx.view());
}

/// Both halves in autograd's order: fc2's gradients, then its input (act) goes; GELU's, then its
/// input (pre) and output gradient go; fc1's, then the norm's. Holds at most the stash less act plus
/// dact and dpre, where the input half alone holds act too.
void mlp_backward(const LayerContext& ctx, std::vector<Param>& p, const MlpParams& m, MlpStash& s, MatrixView dy,
                  Buffer& dx) {
  Backend& be = *ctx.backend;
  const std::int64_t rows = dy.rows;
  Buffer dact = ctx.buffer(rows, s.act.view().cols);
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, dy, p[m.fc2_w].value(), 0.0f, dact.view());
  linear_weight_grad(ctx, s.act.view(), dy, p[m.fc2_w], &p[m.fc2_b]);
  s.act.reset();
  s.dpre = ctx.buffer(rows, s.pre.view().cols);
  be.gelu_backward(s.pre.view(), dact.view(), s.dpre.view());
  dact.reset();
  s.pre.reset();
  linear_weight_grad(ctx, s.normed.view(), s.dpre.view(), p[m.fc1_w], &p[m.fc1_b]);
  s.dnormed = ctx.buffer(rows, dy.cols);
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dpre.view(), p[m.fc1_w].value(), 0.0f, s.dnormed.view());
  s.dpre.reset();
  s.normed.reset();
  ctx.tensor_all_reduce(s.dnormed.view());  // conjugate of the column-parallel fc1
  dx = ctx.buffer(rows, dy.cols);
  be.layer_norm_backward(s.dnormed.view(), s.x, p[m.ln_gamma].data, s.mean.data(), s.rstd.data(), dx.view(),
                         p[m.ln_gamma].grad, p[m.ln_beta].grad);
  be.axpy(1.0f, dy, dx.view());
  s = MlpStash{};
}

void mlp_backward_weight(const LayerContext& ctx, std::vector<Param>& p, const MlpParams& m, MlpStash& s) {
  linear_weight_grad(ctx, s.act.view(), s.dy, p[m.fc2_w], &p[m.fc2_b]);
  linear_weight_grad(ctx, s.normed.view(), s.dpre.view(), p[m.fc1_w], &p[m.fc1_b]);
  s = MlpStash{};
}

// --- layers ---------------------------------------------------------------------------------

/// Embedding with the output gradient kept per microbatch.
struct EmbeddingStash final : Stash {
  MatrixView dy;
};

class EmbeddingLayer final : public Layer {
 public:
  EmbeddingLayer(int model_index, const NetDims& d) {
    model_index_ = model_index;
    add_param("tokens", d.vocab, d.hidden, Split::None, Param::Init::Table);
    add_param("positions", d.positions, d.hidden, Split::None, Param::Init::Table);
  }
  std::unique_ptr<Stash> forward(const LayerContext& ctx, const Batch& b, MatrixView) override {
    auto s = std::make_unique<EmbeddingStash>();
    s->output = ctx.buffer(b.rows, params_[0].cols);
    ctx.backend->embedding_forward(params_[0].value(), b.tokens, s->output.view());
    ctx.backend->embedding_forward(params_[1].value(), b.positions, s->output.view());
    return s;
  }
  void backward_input(const LayerContext&, const Batch&, Stash& s, MatrixView dy) override {
    static_cast<EmbeddingStash&>(s).dy = dy;
  }
  void backward_weight(const LayerContext& ctx, const Batch& b, Stash& s) override {
    const MatrixView dy = static_cast<EmbeddingStash&>(s).dy;
    ctx.backend->embedding_backward(dy, b.tokens, params_[0].gradient());
    ctx.backend->embedding_backward(dy, b.positions, params_[1].gradient());
  }
};

// --- blockwise attention (context parallelism's ring and Ulysses) ----------------------------------

/// Working space of one (query block, key block) pair, sized for the largest pair.
struct PairScratch {
  Buffer scores, dscores, part, part_lse;
  PairScratch(const LayerContext& ctx, std::int64_t queries, std::int64_t keys, std::int64_t width, bool backward) {
    scores = ctx.buffer(queries, keys);
    if (backward) {
      dscores = ctx.buffer(queries, keys);
    } else {
      part = ctx.buffer(queries, width);
      part_lse = ctx.buffer(queries, 1);
    }
  }
};

/// out, lse: the attention of queries q over the keys seen so far, merged with that over (k, v) by
/// their log-sum-exps, so the key blocks may come in any order. `causal`: a diagonal block.
void attend_pair(Backend& be, float scale, MatrixView q, MatrixView k, MatrixView v, bool causal, MatrixView out,
                 float* lse, const PairScratch& scratch) {
  const MatrixView scores = scratch.scores.view().row_range(0, q.rows).columns(0, k.rows);
  const MatrixView part = scratch.part.view().row_range(0, q.rows).columns(0, v.cols);
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, q, k, 0.0f, scores);
  be.softmax_forward_lse(scores, scale, causal, scores, scratch.part_lse.data());
  be.gemm(Transpose::No, Transpose::No, 1.0f, scores, v, 0.0f, part);
  be.merge_attention(out, lse, part, scratch.part_lse.data());
}

/// dq, dk, dv += attend_pair's gradients given the output's gradient dout, the rows' final lse and
/// row_sum = rowsum(dout * out) (the softmax backward's row sum over every key block).
void attend_pair_backward(Backend& be, float scale, MatrixView q, MatrixView k, MatrixView v, bool causal,
                          const float* lse, const float* row_sum, MatrixView dout, MatrixView dq, MatrixView dk,
                          MatrixView dv, const PairScratch& scratch) {
  const MatrixView probs = scratch.scores.view().row_range(0, q.rows).columns(0, k.rows);
  const MatrixView dprobs = scratch.dscores.view().row_range(0, q.rows).columns(0, k.rows);
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, q, k, 0.0f, probs);
  be.softmax_from_lse(probs, scale, causal, lse, probs);
  be.gemm(Transpose::Yes, Transpose::No, 1.0f, probs, dout, 1.0f, dv);
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, dout, v, 0.0f, dprobs);
  be.softmax_backward_rows(probs, dprobs, scale, row_sum, dprobs);
  be.gemm(Transpose::No, Transpose::No, 1.0f, dprobs, k, 1.0f, dq);
  be.gemm(Transpose::Yes, Transpose::No, 1.0f, dprobs, q, 1.0f, dk);
}

/// Sends `m` to the next context rank and returns what the previous one sent (the same shape).
Buffer ring_shift(const LayerContext& ctx, const Buffer& m) {
  Buffer incoming = ctx.buffer(m.view().rows, m.view().cols);
  const auto sending = ctx.backend->send(m.data(), m.count(), ctx.context_next, ctx.context_tag);
  ctx.backend->recv(incoming.data(), incoming.count(), ctx.context_previous, ctx.context_tag);
  sending->wait();
  return incoming;
}

struct BlockStash final : Stash {
  // attention half
  MatrixView x;
  Buffer normed, mean, rstd, q, k, v, probs, context;
  Buffer k_full, v_full;  // context parallelism: every rank's keys and values, in sequence order
  Buffer lse;             // ring and Ulysses: log-sum-exp of each head's attention rows
  Buffer q_seq, k_seq, v_seq, context_seq;  // Ulysses: this rank's heads over whole sequences
  MatrixView dy1;  // gradient of the attention half's output (= of y1)
  Buffer dq, dk, dv, dcontext;
  // MLP half (dense or mixture of experts); its output is Stash::output
  Buffer y1;
  Buffer dy1_buffer;
  MlpStash mlp;
  MoeStash moe;
};

class TransformerBlock final : public Layer {
 public:
  /// expert_size == 0: the dense MLP; otherwise the MoE MLP of expert rank `expert_rank`.
  TransformerBlock(int model_index, const NetDims& d, int tensor_size, int expert_size, int expert_rank) : dims_(d) {
    model_index_ = model_index;
    const std::int64_t h = d.hidden;
    const std::int64_t aw = d.heads * d.head_dim;
    add_param("attn.ln.gamma", 1, h, Split::None, Param::Init::Gamma);
    add_param("attn.ln.beta", 1, h, Split::None, Param::Init::Beta);
    add_param("attn.q.weight", h, aw, Split::Columns, Param::Init::Weight);
    add_param("attn.q.bias", 1, aw, Split::Columns, Param::Init::Bias);
    add_param("attn.k.weight", h, aw, Split::Columns, Param::Init::Weight);
    add_param("attn.k.bias", 1, aw, Split::Columns, Param::Init::Bias);
    add_param("attn.v.weight", h, aw, Split::Columns, Param::Init::Weight);
    add_param("attn.v.bias", 1, aw, Split::Columns, Param::Init::Bias);
    add_param("attn.proj.weight", aw, h, Split::Rows, Param::Init::Weight);
    add_param("attn.proj.bias", 1, h, Split::None, Param::Init::Bias);
    if (expert_size > 0) {
      moe_.emplace(params_, d.moe, h, expert_size, expert_rank);
    } else {
      mlp_ = add_mlp(params_, h, d.ffn, "mlp.");
    }
    local_heads_ = d.heads / tensor_size;
  }

  std::unique_ptr<Stash> forward(const LayerContext& ctx, const Batch& b, MatrixView x) override {
    Backend& be = *ctx.backend;
    auto s = std::make_unique<BlockStash>();
    const std::int64_t rows = x.rows;
    const std::int64_t aw = local_heads_ * dims_.head_dim;
    s->x = x;
    s->normed = ctx.buffer(rows, x.cols);
    s->mean = ctx.buffer(rows, 1);
    s->rstd = ctx.buffer(rows, 1);
    be.layer_norm_forward(x, params_[0].data, params_[1].data, ctx.layer_norm_epsilon, s->normed.view(), s->mean.data(),
                          s->rstd.data());
    s->q = ctx.buffer(rows, aw);
    s->k = ctx.buffer(rows, aw);
    s->v = ctx.buffer(rows, aw);
    linear(ctx, s->normed.view(), params_[2], &params_[3], s->q.view());
    linear(ctx, s->normed.view(), params_[4], &params_[5], s->k.view());
    linear(ctx, s->normed.view(), params_[6], &params_[7], s->v.view());
    s->context = ctx.buffer(rows, aw);
    if (exchanges(ctx, ContextExchange::Ring)) {
      ring_attention_forward(ctx, b, *s);
    } else if (exchanges(ctx, ContextExchange::AllToAll)) {
      ulysses_attention_forward(ctx, b, *s);
    } else {
      gathered_attention_forward(ctx, b, *s);
    }
    s->y1 = ctx.buffer(rows, x.cols);
    linear(ctx, s->context.view(), params_[8], nullptr, s->y1.view());
    ctx.tensor_all_reduce(s->y1.view());  // row-parallel projection
    be.add_row_vector(params_[9].data, s->y1.view());
    be.axpy(1.0f, x, s->y1.view());
    if (moe_) {
      moe_->forward(ctx, params_, s->y1.view(), s->moe);
      s->output = std::move(s->moe.out);
    } else {
      mlp_forward(ctx, params_, mlp_, s->y1.view(), s->mlp);
      s->output = std::move(s->mlp.out);
    }
    return s;
  }

  void backward(const LayerContext& ctx, const Batch& b, Stash& stash, MatrixView dy) override {
    if (moe_) {
      Layer::backward(ctx, b, stash, dy);
      return;
    }
    auto& s = static_cast<BlockStash&>(stash);
    mlp_backward(ctx, params_, mlp_, s.mlp, dy, s.dy1_buffer);
    s.y1.reset();
    attention_backward_input(ctx, b, s);
    attention_backward_weight(ctx, s);
  }

  void backward_input(const LayerContext& ctx, const Batch& b, Stash& stash, MatrixView dy) override {
    auto& s = static_cast<BlockStash&>(stash);
    if (moe_) {
      moe_->backward_input(ctx, params_, s.moe, dy, s.dy1_buffer);
    } else {
      mlp_backward_input(ctx, params_, mlp_, s.mlp, dy, s.dy1_buffer);
      s.y1.reset();  // the dense MLP's norm has read its input
    }
    attention_backward_input(ctx, b, s);
  }

  /// The attention half's input gradient, from dy1 (s.dy1_buffer).
  void attention_backward_input(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    Backend& be = *ctx.backend;
    const MatrixView dy = s.dy1_buffer.view();
    s.dy1 = s.dy1_buffer.view();
    const std::int64_t rows = dy.rows;
    const std::int64_t aw = local_heads_ * dims_.head_dim;
    s.dcontext = ctx.buffer(rows, aw);
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dy1, params_[8].value(), 0.0f, s.dcontext.view());
    if (exchanges(ctx, ContextExchange::Ring)) {
      ring_attention_backward(ctx, b, s);
    } else if (exchanges(ctx, ContextExchange::AllToAll)) {
      ulysses_attention_backward(ctx, b, s);
    } else {
      gathered_attention_backward(ctx, b, s);
    }
    // What only the attention's own backward read goes now; the weight half reads context, normed and
    // the gradients.
    for (Buffer* read : {&s.q, &s.k, &s.v, &s.probs, &s.context_seq, &s.k_full, &s.v_full, &s.lse, &s.q_seq, &s.k_seq,
                         &s.v_seq, &s.dcontext}) {
      read->reset();
    }
    Buffer dnormed = ctx.buffer(rows, dy.cols);
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dq.view(), params_[2].value(), 0.0f, dnormed.view());
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dk.view(), params_[4].value(), 1.0f, dnormed.view());
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dv.view(), params_[6].value(), 1.0f, dnormed.view());
    ctx.tensor_all_reduce(dnormed.view());  // conjugate of the column-parallel Q, K, V
    s.input_grad = ctx.buffer(rows, dy.cols);
    be.layer_norm_backward(dnormed.view(), s.x, params_[0].data, s.mean.data(), s.rstd.data(), s.input_grad.view(),
                           params_[0].grad, params_[1].grad);
    s.mean.reset();
    s.rstd.reset();
    be.axpy(1.0f, s.dy1, s.input_grad.view());
  }

  void backward_weight(const LayerContext& ctx, const Batch&, Stash& stash) override {
    auto& s = static_cast<BlockStash&>(stash);
    if (moe_) {
      moe_->backward_weight(ctx, params_, s.moe);
    } else {
      mlp_backward_weight(ctx, params_, mlp_, s.mlp);
    }
    attention_backward_weight(ctx, s);
  }

  void attention_backward_weight(const LayerContext& ctx, BlockStash& s) {
    linear_weight_grad(ctx, s.context.view(), s.dy1, params_[8], &params_[9]);
    linear_weight_grad(ctx, s.normed.view(), s.dq.view(), params_[2], &params_[3]);
    linear_weight_grad(ctx, s.normed.view(), s.dk.view(), params_[4], &params_[5]);
    linear_weight_grad(ctx, s.normed.view(), s.dv.view(), params_[6], &params_[7]);
  }

 private:
  /// A block of queries attention treats at once: one sample's, one head's, and under context
  /// parallelism one of the rank's two sequence chunks (Megatron's causal load balancing: rank r of C
  /// holds chunks r and 2C - 1 - r of 2C), which sees the keys up to its own end.
  struct Part {
    std::int64_t sample = 0;
    std::int64_t head = 0;
    std::int64_t first_row = 0;   ///< of the sample's local rows
    std::int64_t rows = 0;
    std::int64_t keys = 0;        ///< positions 0 .. keys - 1 of the sequence
    std::int64_t index = 0;       ///< of the part among the sample's local ones
  };
  [[nodiscard]] std::int64_t local_seq(const LayerContext& ctx) const { return dims_.seq / ctx.context_size; }
  template <class F>
  void for_each_part(const LayerContext& ctx, const Batch& b, F f) const {
    const std::int64_t c = ctx.context_size;
    const std::int64_t parts = c > 1 ? 2 : 1;
    const std::int64_t chunk = local_seq(ctx) / parts;
    for (std::int64_t sample = 0; sample < b.samples; ++sample) {
      for (std::int64_t head = 0; head < local_heads_; ++head) {
        for (std::int64_t i = 0; i < parts; ++i) {
          const std::int64_t global_chunk = c == 1 ? 0 : (i == 0 ? ctx.context_rank : 2 * c - 1 - ctx.context_rank);
          f(Part{sample, head, i * chunk, chunk, (global_chunk + 1) * chunk, i});
        }
      }
    }
  }
  /// The part's rows of a local (rows x heads * head_dim) matrix: its queries, context, gradients.
  [[nodiscard]] MatrixView queries(const LayerContext& ctx, MatrixView m, const Part& p) const {
    return m.row_range(p.sample * local_seq(ctx) + p.first_row, p.rows).columns(p.head * dims_.head_dim, dims_.head_dim);
  }
  /// The keys (or values, or their gradients) the part sees, in a matrix of whole sequences.
  [[nodiscard]] MatrixView keys(const LayerContext&, MatrixView m, const Part& p) const {
    return m.row_range(p.sample * dims_.seq, p.keys).columns(p.head * dims_.head_dim, dims_.head_dim);
  }
  [[nodiscard]] MatrixView keys_of(const BlockStash& s) const { return s.k_full.empty() ? s.k.view() : s.k_full.view(); }
  [[nodiscard]] MatrixView values_of(const BlockStash& s) const { return s.v_full.empty() ? s.v.view() : s.v_full.view(); }
  [[nodiscard]] MatrixView probs_of(const LayerContext& ctx, const BlockStash& s, const Part& p) const {
    return s.probs.view()
        .row_range((p.sample * local_heads_ + p.head) * local_seq(ctx) + p.first_row, p.rows)
        .columns(0, p.keys);
  }
  /// probs = causal softmax(q k^T / sqrt(head_dim)) per part (the mask aligned to the part's last key).
  void scores(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    const float scale = 1.0f / std::sqrt(static_cast<float>(dims_.head_dim));
    for_each_part(ctx, b, [&](const Part& part) {
      const MatrixView p = probs_of(ctx, s, part);
      ctx.backend->gemm(Transpose::No, Transpose::Yes, 1.0f, queries(ctx, s.q.view(), part),
                        keys(ctx, keys_of(s), part), 0.0f, p);
      ctx.backend->softmax_forward(p, scale, true, p);
    });
  }
  /// Every chunk of every context rank's local rows: f(its first row when the ranks' local rows are
  /// stacked rank after rank, its first row in sequence order). Rank j holds chunks j and 2C - 1 - j.
  template <class F>
  void for_each_chunk(const LayerContext& ctx, const Batch& b, F f) const {
    const std::int64_t c = ctx.context_size;
    const std::int64_t chunk = dims_.seq / (2 * c);
    const std::int64_t rows = b.samples * local_seq(ctx);
    for (std::int64_t j = 0; j < c; ++j) {
      for (std::int64_t sample = 0; sample < b.samples; ++sample) {
        for (std::int64_t i = 0; i < 2; ++i) {
          f(j * rows + sample * local_seq(ctx) + i * chunk, sample * dims_.seq + (i == 0 ? j : 2 * c - 1 - j) * chunk);
        }
      }
    }
  }
  /// Context parallelism: every rank's local rows of `local`, gathered over the context group and
  /// put in sequence order (samples x seq rows).
  [[nodiscard]] Buffer gather_sequence(const LayerContext& ctx, const Batch& b, MatrixView local) const {
    const std::int64_t c = ctx.context_size;
    const std::int64_t rows = local.rows;
    Buffer gathered = ctx.buffer(c * rows, local.cols);
    ctx.backend->copy(local, gathered.view().row_range(ctx.context_rank * rows, rows));
    ctx.backend->all_gather(*ctx.context, gathered.data(), static_cast<std::size_t>(c * rows * local.cols));
    return in_sequence_order(ctx, b, gathered.view());
  }
  /// Rows held rank by rank (rank j's local rows, its two chunks, block j) put in sequence order.
  [[nodiscard]] Buffer in_sequence_order(const LayerContext& ctx, const Batch& b, MatrixView by_rank) const {
    const std::int64_t chunk = dims_.seq / (2 * ctx.context_size);
    Buffer ordered = ctx.buffer(b.samples * dims_.seq, by_rank.cols);
    for_each_chunk(ctx, b, [&](std::int64_t by_rank_row, std::int64_t sequence_row) {
      ctx.backend->copy(by_rank.row_range(by_rank_row, chunk), ordered.view().row_range(sequence_row, chunk));
    });
    return ordered;
  }
  /// The inverse: gradients of whole sequences, summed over the context group, each rank keeping
  /// its local rows.
  [[nodiscard]] Buffer scatter_sequence(const LayerContext& ctx, const Batch& b, MatrixView whole) const {
    const std::int64_t c = ctx.context_size;
    const std::int64_t rows = b.samples * local_seq(ctx);
    const std::int64_t chunk = dims_.seq / (2 * c);
    Buffer by_rank = ctx.buffer(c * rows, whole.cols);
    for_each_chunk(ctx, b, [&](std::int64_t by_rank_row, std::int64_t sequence_row) {
      ctx.backend->copy(whole.row_range(sequence_row, chunk), by_rank.view().row_range(by_rank_row, chunk));
    });
    ctx.backend->reduce_scatter_sum(*ctx.context, by_rank.data(), static_cast<std::size_t>(c * rows * whole.cols));
    Buffer mine = ctx.buffer(rows, whole.cols);
    ctx.backend->copy(by_rank.view().row_range(ctx.context_rank * rows, rows), mine.view());
    return mine;
  }

  [[nodiscard]] static bool exchanges(const LayerContext& ctx, ContextExchange e) {
    return ctx.context_size > 1 && ctx.context_exchange == e;
  }
  [[nodiscard]] float attention_scale() const { return 1.0f / std::sqrt(static_cast<float>(dims_.head_dim)); }

  // --- all_gather (and no context parallelism): every key in hand, probabilities kept or rebuilt ---

  void gathered_attention_forward(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    if (ctx.context_size > 1) {
      s.k_full = gather_sequence(ctx, b, s.k.view());
      s.v_full = gather_sequence(ctx, b, s.v.view());
    }
    if (ctx.fused_attention) {
      // FlashAttention: one query block's scores at a time, never kept.
      Buffer block = ctx.buffer(local_seq(ctx), dims_.seq);
      for_each_part(ctx, b, [&](const Part& part) {
        const MatrixView p = part_scores(ctx, s, part, block);
        ctx.backend->gemm(Transpose::No, Transpose::No, 1.0f, p, keys(ctx, values_of(s), part), 0.0f,
                          queries(ctx, s.context.view(), part));
      });
      return;
    }
    s.probs = ctx.buffer(b.samples * local_heads_ * local_seq(ctx), dims_.seq);
    scores(ctx, b, s);
    for_each_part(ctx, b, [&](const Part& part) {
      ctx.backend->gemm(Transpose::No, Transpose::No, 1.0f, probs_of(ctx, s, part), keys(ctx, values_of(s), part), 0.0f,
                        queries(ctx, s.context.view(), part));
    });
    if (!ctx.keep_attention_scores) s.probs.reset();
  }
  /// The part's attention probabilities computed into `block` (at least rows x keys): the fused
  /// kernel's recomputation of one query block's scores.
  [[nodiscard]] MatrixView part_scores(const LayerContext& ctx, const BlockStash& s, const Part& part,
                                       const Buffer& block) const {
    const MatrixView p = block.view().row_range(0, part.rows).columns(0, part.keys);
    ctx.backend->gemm(Transpose::No, Transpose::Yes, 1.0f, queries(ctx, s.q.view(), part), keys(ctx, keys_of(s), part),
                      0.0f, p);
    ctx.backend->softmax_forward(p, attention_scale(), true, p);
    return p;
  }

  void gathered_attention_backward(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    Backend& be = *ctx.backend;
    const std::int64_t rows = s.q.view().rows;
    const std::int64_t aw = s.q.view().cols;
    Buffer block;  // FlashAttention: the part's probabilities, recomputed
    if (ctx.fused_attention) {
      block = ctx.buffer(local_seq(ctx), dims_.seq);
    } else if (s.probs.empty()) {  // selective recomputation: rebuild the attention probabilities
      s.probs = ctx.buffer(b.samples * local_heads_ * local_seq(ctx), dims_.seq);
      scores(ctx, b, s);
    }
    s.dq = ctx.buffer(rows, aw);
    // The keys' and values' gradients, of every rank's keys under context parallelism (accumulated
    // over the query parts, then summed back to their ranks).
    const bool split = ctx.context_size > 1;
    Buffer dk = ctx.buffer(split ? b.samples * dims_.seq : rows, aw);
    Buffer dv = ctx.buffer(split ? b.samples * dims_.seq : rows, aw);
    Buffer dprobs = ctx.buffer(dims_.seq, dims_.seq);
    const float scale = attention_scale();
    for_each_part(ctx, b, [&](const Part& part) {
      const MatrixView p = ctx.fused_attention ? part_scores(ctx, s, part, block) : probs_of(ctx, s, part);
      const MatrixView dp = dprobs.view().row_range(0, p.rows).columns(0, p.cols);
      const MatrixView dctx = queries(ctx, s.dcontext.view(), part);
      be.gemm(Transpose::No, Transpose::Yes, 1.0f, dctx, keys(ctx, values_of(s), part), 0.0f, dp);
      be.gemm(Transpose::Yes, Transpose::No, 1.0f, p, dctx, 1.0f, keys(ctx, dv.view(), part));
      be.softmax_backward(p, dp, scale, dp);
      be.gemm(Transpose::No, Transpose::No, 1.0f, dp, keys(ctx, keys_of(s), part), 0.0f, queries(ctx, s.dq.view(), part));
      be.gemm(Transpose::Yes, Transpose::No, 1.0f, dp, queries(ctx, s.q.view(), part), 1.0f, keys(ctx, dk.view(), part));
    });
    dprobs.reset();
    s.dk = split ? scatter_sequence(ctx, b, dk.view()) : std::move(dk);
    s.dv = split ? scatter_sequence(ctx, b, dv.view()) : std::move(dv);
    if (!ctx.keep_attention_scores) s.probs.reset();
  }

  // --- ring (p2p): key/value chunks travel, queries stay --------------------------------------------

  /// One pair of the ring: a local query chunk and a chunk of the keys and values in hand, both
  /// of one sample and head. Causal load balancing gives rank j chunks j and 2C - 1 - j of 2C; a
  /// query chunk sees earlier key chunks whole, its own under the causal mask, later ones not at all.
  struct RingPair {
    std::int64_t head = 0;
    std::int64_t query_row = 0;  ///< first row among the local rows
    std::int64_t key_row = 0;    ///< first row among the rows in hand (the owner's local rows)
    bool diagonal = false;
  };
  template <class F>
  void for_each_ring_pair(const LayerContext& ctx, const Batch& b, int owner, F f) const {
    const std::int64_t c = ctx.context_size;
    const std::int64_t chunk = local_seq(ctx) / 2;
    const auto global_chunk = [&](std::int64_t rank, std::int64_t i) { return i == 0 ? rank : 2 * c - 1 - rank; };
    for (std::int64_t sample = 0; sample < b.samples; ++sample) {
      for (std::int64_t head = 0; head < local_heads_; ++head) {
        for (std::int64_t i = 0; i < 2; ++i) {
          for (std::int64_t j = 0; j < 2; ++j) {
            const std::int64_t query_chunk = global_chunk(ctx.context_rank, i);
            const std::int64_t key_chunk = global_chunk(owner, j);
            if (key_chunk > query_chunk) continue;
            const std::int64_t first = sample * local_seq(ctx);
            f(RingPair{head, first + i * chunk, first + j * chunk, key_chunk == query_chunk});
          }
        }
      }
    }
  }
  /// Keys (columns [0, aw)) and values (columns [aw, 2 aw)) side by side: one message per ring step.
  [[nodiscard]] Buffer keys_and_values(const LayerContext& ctx, const BlockStash& s) const {
    const MatrixView k = s.k.view();
    Buffer kv = ctx.buffer(k.rows, 2 * k.cols);
    ctx.backend->copy(k, kv.view().columns(0, k.cols));
    ctx.backend->copy(s.v.view(), kv.view().columns(k.cols, k.cols));
    return kv;
  }
  /// The context rank whose keys and values are in hand at ring step `step`.
  [[nodiscard]] static int ring_owner(const LayerContext& ctx, int step) {
    return (ctx.context_rank - step + ctx.context_size) % ctx.context_size;
  }

  /// Step t attends the local queries to rank r - t's keys and values while sending them on to
  /// rank r + 1 (C - 1 exchanges); the partial outputs are merged by log-sum-exp.
  void ring_attention_forward(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    Backend& be = *ctx.backend;
    const std::int64_t rows = s.q.view().rows;
    const std::int64_t aw = s.q.view().cols;
    const std::int64_t hd = dims_.head_dim;
    const std::int64_t chunk = local_seq(ctx) / 2;
    s.lse = ctx.buffer(local_heads_, rows);
    be.fill(s.lse.view(), -INFINITY);  // no keys yet: the first merge takes the block as it is
    const PairScratch scratch(ctx, chunk, chunk, hd, false);
    Buffer kv = keys_and_values(ctx, s);
    for (int step = 0; step < ctx.context_size; ++step) {
      const bool last = step + 1 == ctx.context_size;
      Buffer incoming;
      std::unique_ptr<SendHandle> sending;
      if (!last) {  // the next chunk travels while this one is attended to
        incoming = ctx.buffer(rows, 2 * aw);
        sending = be.send(kv.data(), kv.count(), ctx.context_next, ctx.context_tag);
      }
      for_each_ring_pair(ctx, b, ring_owner(ctx, step), [&](const RingPair& p) {
        const MatrixView held = kv.view().row_range(p.key_row, chunk);
        attend_pair(be, attention_scale(), s.q.view().row_range(p.query_row, chunk).columns(p.head * hd, hd),
                    held.columns(p.head * hd, hd), held.columns(aw + p.head * hd, hd), p.diagonal,
                    s.context.view().row_range(p.query_row, chunk).columns(p.head * hd, hd),
                    s.lse.data() + p.head * rows + p.query_row, scratch);
      });
      if (!last) {
        be.recv(incoming.data(), incoming.count(), ctx.context_previous, ctx.context_tag);
        sending->wait();
        kv = std::move(incoming);
      }
    }
  }

  /// The forward's ring again, the probabilities rebuilt per pair from the saved log-sum-exp; the
  /// keys' and values' gradients travel with them and take one more step home.
  void ring_attention_backward(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    Backend& be = *ctx.backend;
    const std::int64_t rows = s.q.view().rows;
    const std::int64_t aw = s.q.view().cols;
    const std::int64_t hd = dims_.head_dim;
    const std::int64_t chunk = local_seq(ctx) / 2;
    Buffer row_sums = ctx.buffer(local_heads_, rows);
    for (std::int64_t head = 0; head < local_heads_; ++head) {
      be.row_dot(s.dcontext.view().columns(head * hd, hd), s.context.view().columns(head * hd, hd),
                 row_sums.data() + head * rows);
    }
    const PairScratch scratch(ctx, chunk, chunk, hd, true);
    s.dq = ctx.buffer(rows, aw);
    Buffer kv = keys_and_values(ctx, s);
    Buffer dkv = ctx.buffer(rows, 2 * aw);  // the gradients of the keys and values in hand
    for (int step = 0; step < ctx.context_size; ++step) {
      const bool last = step + 1 == ctx.context_size;
      Buffer incoming;
      std::unique_ptr<SendHandle> sending;
      if (!last) {
        incoming = ctx.buffer(rows, 2 * aw);
        sending = be.send(kv.data(), kv.count(), ctx.context_next, ctx.context_tag);
      }
      for_each_ring_pair(ctx, b, ring_owner(ctx, step), [&](const RingPair& p) {
        const MatrixView held = kv.view().row_range(p.key_row, chunk);
        const MatrixView dheld = dkv.view().row_range(p.key_row, chunk);
        const auto head_of = [&](MatrixView m) { return m.row_range(p.query_row, chunk).columns(p.head * hd, hd); };
        attend_pair_backward(be, attention_scale(), head_of(s.q.view()), held.columns(p.head * hd, hd),
                             held.columns(aw + p.head * hd, hd), p.diagonal, s.lse.data() + p.head * rows + p.query_row,
                             row_sums.data() + p.head * rows + p.query_row, head_of(s.dcontext.view()),
                             head_of(s.dq.view()), dheld.columns(p.head * hd, hd), dheld.columns(aw + p.head * hd, hd),
                             scratch);
      });
      if (!last) {
        be.recv(incoming.data(), incoming.count(), ctx.context_previous, ctx.context_tag);
        sending->wait();
        kv = std::move(incoming);
      }
      dkv = ring_shift(ctx, dkv);  // after the last step this brings each rank its own
    }
    s.dk = ctx.buffer(rows, aw);
    s.dv = ctx.buffer(rows, aw);
    be.copy(dkv.view().columns(0, aw), s.dk.view());
    be.copy(dkv.view().columns(aw, aw), s.dv.view());
    s.lse.reset();
  }

  // --- Ulysses (a2a): sequence chunks traded for heads ------------------------------------------------

  /// Local rows of every head -> whole sequences (samples x seq rows, in order) of this rank's
  /// local_heads / C heads, by one all-to-all over the context group.
  [[nodiscard]] Buffer heads_to_sequence(const LayerContext& ctx, const Batch& b, MatrixView local) const {
    const std::int64_t c = ctx.context_size;
    const std::int64_t rows = local.rows;
    const std::int64_t width = local.cols / c;
    Buffer outgoing = ctx.buffer(c * rows, width);  // block j: the heads of rank j
    for (std::int64_t j = 0; j < c; ++j) {
      ctx.backend->copy(local.columns(j * width, width), outgoing.view().row_range(j * rows, rows));
    }
    Buffer incoming = ctx.buffer(c * rows, width);  // block j: rank j's rows of this rank's heads
    const std::vector<std::size_t> counts(static_cast<std::size_t>(c), static_cast<std::size_t>(rows * width));
    ctx.backend->all_to_all(*ctx.context, outgoing.data(), counts, incoming.data(), counts);
    return in_sequence_order(ctx, b, incoming.view());
  }
  /// The inverse: whole sequences of this rank's heads -> its local rows of every head.
  [[nodiscard]] Buffer sequence_to_heads(const LayerContext& ctx, const Batch& b, MatrixView whole) const {
    const std::int64_t c = ctx.context_size;
    const std::int64_t rows = b.samples * local_seq(ctx);
    const std::int64_t width = whole.cols;
    const std::int64_t chunk = dims_.seq / (2 * c);
    Buffer outgoing = ctx.buffer(c * rows, width);  // block j: rank j's rows
    for_each_chunk(ctx, b, [&](std::int64_t by_rank_row, std::int64_t sequence_row) {
      ctx.backend->copy(whole.row_range(sequence_row, chunk), outgoing.view().row_range(by_rank_row, chunk));
    });
    Buffer incoming = ctx.buffer(c * rows, width);  // block j: the heads of rank j
    const std::vector<std::size_t> counts(static_cast<std::size_t>(c), static_cast<std::size_t>(rows * width));
    ctx.backend->all_to_all(*ctx.context, outgoing.data(), counts, incoming.data(), counts);
    Buffer local = ctx.buffer(rows, c * width);
    for (std::int64_t j = 0; j < c; ++j) {
      ctx.backend->copy(incoming.view().row_range(j * rows, rows), local.view().columns(j * width, width));
    }
    return local;
  }
  /// Causal attention of each of this rank's heads over whole sequences (rows samples x seq).
  template <class F>
  void for_each_sequence_head(const LayerContext& ctx, const Batch& b, F f) const {
    for (std::int64_t sample = 0; sample < b.samples; ++sample) {
      for (std::int64_t head = 0; head < local_heads_ / ctx.context_size; ++head) f(sample, head);
    }
  }

  void ulysses_attention_forward(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    Backend& be = *ctx.backend;
    const std::int64_t hd = dims_.head_dim;
    const std::int64_t seq = dims_.seq;
    const std::int64_t total = b.samples * seq;
    s.q_seq = heads_to_sequence(ctx, b, s.q.view());
    s.k_seq = heads_to_sequence(ctx, b, s.k.view());
    s.v_seq = heads_to_sequence(ctx, b, s.v.view());
    const MatrixView q = s.q_seq.view(), k = s.k_seq.view(), v = s.v_seq.view();
    s.context_seq = ctx.buffer(total, q.cols);
    s.lse = ctx.buffer(local_heads_ / ctx.context_size, total);
    be.fill(s.lse.view(), -INFINITY);
    const PairScratch scratch(ctx, seq, seq, hd, false);
    for_each_sequence_head(ctx, b, [&](std::int64_t sample, std::int64_t head) {
      const auto block = [&](MatrixView m) { return m.row_range(sample * seq, seq).columns(head * hd, hd); };
      attend_pair(be, attention_scale(), block(q), block(k), block(v), true,
                  block(s.context_seq.view()), s.lse.data() + head * total + sample * seq, scratch);
    });
    s.context = sequence_to_heads(ctx, b, s.context_seq.view());
  }

  void ulysses_attention_backward(const LayerContext& ctx, const Batch& b, BlockStash& s) const {
    Backend& be = *ctx.backend;
    const std::int64_t hd = dims_.head_dim;
    const std::int64_t seq = dims_.seq;
    const std::int64_t total = b.samples * seq;
    const MatrixView q = s.q_seq.view(), k = s.k_seq.view(), v = s.v_seq.view();
    const Buffer dout = heads_to_sequence(ctx, b, s.dcontext.view());
    const std::int64_t width = q.cols;
    Buffer row_sums = ctx.buffer(width / hd, total);
    for (std::int64_t head = 0; head < width / hd; ++head) {
      be.row_dot(dout.view().columns(head * hd, hd), s.context_seq.view().columns(head * hd, hd),
                 row_sums.data() + head * total);
    }
    Buffer dq = ctx.buffer(total, width);
    Buffer dk = ctx.buffer(total, width);
    Buffer dv = ctx.buffer(total, width);
    const PairScratch scratch(ctx, seq, seq, hd, true);
    for_each_sequence_head(ctx, b, [&](std::int64_t sample, std::int64_t head) {
      const auto block = [&](MatrixView m) { return m.row_range(sample * seq, seq).columns(head * hd, hd); };
      const std::int64_t at = head * total + sample * seq;
      attend_pair_backward(be, attention_scale(), block(q), block(k), block(v), true,
                           s.lse.data() + at, row_sums.data() + at, block(dout.view()), block(dq.view()),
                           block(dk.view()), block(dv.view()), scratch);
    });
    s.dq = sequence_to_heads(ctx, b, dq.view());
    s.dk = sequence_to_heads(ctx, b, dk.view());
    s.dv = sequence_to_heads(ctx, b, dv.view());
    for (Buffer* kept : {&s.lse, &s.q_seq, &s.k_seq, &s.v_seq, &s.context_seq}) kept->reset();
  }

  NetDims dims_;
  MlpParams mlp_{};
  std::optional<MoeMlp> moe_;
  std::int64_t local_heads_ = 1;
};

struct MlpBlockStash final : Stash {
  MlpStash mlp;
};

class MlpBlock final : public Layer {
 public:
  MlpBlock(int model_index, const NetDims& d) {
    model_index_ = model_index;
    mlp_ = add_mlp(params_, d.hidden, d.generic_ffn, "");
  }
  std::unique_ptr<Stash> forward(const LayerContext& ctx, const Batch&, MatrixView x) override {
    auto s = std::make_unique<MlpBlockStash>();
    mlp_forward(ctx, params_, mlp_, x, s->mlp);
    s->output = std::move(s->mlp.out);
    return s;
  }
  void backward_input(const LayerContext& ctx, const Batch&, Stash& stash, MatrixView dy) override {
    auto& s = static_cast<MlpBlockStash&>(stash);
    mlp_backward_input(ctx, params_, mlp_, s.mlp, dy, s.input_grad);
  }
  void backward_weight(const LayerContext& ctx, const Batch&, Stash& stash) override {
    mlp_backward_weight(ctx, params_, mlp_, static_cast<MlpBlockStash&>(stash).mlp);
  }

 private:
  MlpParams mlp_{};
};

struct HeadStash final : Stash {
  MatrixView x;
  Buffer normed, mean, rstd, dlogits;
};

class OutputHead final : public Layer {
 public:
  OutputHead(int model_index, const NetDims& d) {
    model_index_ = model_index;
    add_param("ln.gamma", 1, d.hidden, Split::None, Param::Init::Gamma);
    add_param("ln.beta", 1, d.hidden, Split::None, Param::Init::Beta);
    add_param("logits.weight", d.hidden, d.vocab, Split::None, Param::Init::Weight);
  }
  std::unique_ptr<Stash> forward(const LayerContext& ctx, const Batch& b, MatrixView x) override {
    Backend& be = *ctx.backend;
    auto s = std::make_unique<HeadStash>();
    s->x = x;
    s->normed = ctx.buffer(x.rows, x.cols);
    s->mean = ctx.buffer(x.rows, 1);
    s->rstd = ctx.buffer(x.rows, 1);
    be.layer_norm_forward(x, params_[0].data, params_[1].data, ctx.layer_norm_epsilon, s->normed.view(), s->mean.data(),
                          s->rstd.data());
    // The gradient is written over the logits, as Megatron-Core's cross-entropy does: one buffer.
    s->dlogits = ctx.buffer(x.rows, params_[2].cols);
    linear(ctx, s->normed.view(), params_[2], nullptr, s->dlogits.view());
    s->loss = be.cross_entropy(s->dlogits.view(), b.labels, b.loss_scale, s->dlogits.view());
    s->has_loss = true;
    return s;
  }
  void backward_input(const LayerContext& ctx, const Batch&, Stash& stash, MatrixView) override {
    Backend& be = *ctx.backend;
    auto& s = static_cast<HeadStash&>(stash);
    Buffer dnormed = ctx.buffer(s.x.rows, s.x.cols);
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dlogits.view(), params_[2].value(), 0.0f, dnormed.view());
    s.input_grad = ctx.buffer(s.x.rows, s.x.cols);
    be.layer_norm_backward(dnormed.view(), s.x, params_[0].data, s.mean.data(), s.rstd.data(), s.input_grad.view(),
                           params_[0].grad, params_[1].grad);
  }
  void release_after_input(Stash& stash) override {
    auto& s = static_cast<HeadStash&>(stash);
    s.mean.reset();
    s.rstd.reset();
  }
  void backward_weight(const LayerContext& ctx, const Batch&, Stash& stash) override {
    auto& s = static_cast<HeadStash&>(stash);
    linear_weight_grad(ctx, s.normed.view(), s.dlogits.view(), params_[2], nullptr);
  }
};

class InputLayer final : public Layer {
 public:
  explicit InputLayer(const NetDims& d) : hidden_(d.hidden) {}
  std::unique_ptr<Stash> forward(const LayerContext& ctx, const Batch& b, MatrixView) override {
    auto s = std::make_unique<Stash>();
    s->output = ctx.buffer(b.rows, hidden_);
    ctx.backend->upload(b.inputs, s->output.data());
    return s;
  }
  void backward_input(const LayerContext&, const Batch&, Stash&, MatrixView) override {}
  void backward_weight(const LayerContext&, const Batch&, Stash&) override {}

 private:
  std::int64_t hidden_;
};

struct SquaredStash final : Stash {
  MatrixView x;
  Buffer dx;
};

class SquaredLoss final : public Layer {
 public:
  std::unique_ptr<Stash> forward(const LayerContext& ctx, const Batch& b, MatrixView x) override {
    auto s = std::make_unique<SquaredStash>();
    s->x = x;
    std::vector<float> host(static_cast<std::size_t>(x.rows * x.cols));
    ctx.backend->download(x.data, host);  // x is a whole buffer (ld == cols)
    double sum = 0;
    for (const float v : host) sum += static_cast<double>(v) * v;
    s->loss = 0.5 * sum / static_cast<double>(x.rows);
    s->has_loss = true;
    (void)b;
    return s;
  }
  void backward_input(const LayerContext& ctx, const Batch& b, Stash& stash, MatrixView) override {
    auto& s = static_cast<SquaredStash&>(stash);
    s.input_grad = ctx.buffer(s.x.rows, s.x.cols);
    ctx.backend->axpy(b.loss_scale / static_cast<float>(s.x.rows), s.x, s.input_grad.view());
  }
  void backward_weight(const LayerContext&, const Batch&, Stash&) override {}
};

}  // namespace

std::unique_ptr<Layer> make_embedding(int model_index, const NetDims& dims) {
  return std::make_unique<EmbeddingLayer>(model_index, dims);
}
std::unique_ptr<Layer> make_transformer_block(int model_index, const NetDims& dims, int tensor_size) {
  return std::make_unique<TransformerBlock>(model_index, dims, tensor_size, 0, 0);
}
std::unique_ptr<Layer> make_moe_transformer_block(int model_index, const NetDims& dims, int tensor_size,
                                                  int expert_size, int expert_rank) {
  return std::make_unique<TransformerBlock>(model_index, dims, tensor_size, expert_size, expert_rank);
}
std::unique_ptr<Layer> make_mlp_block(int model_index, const NetDims& dims, int tensor_size) {
  (void)tensor_size;
  return std::make_unique<MlpBlock>(model_index, dims);
}
std::unique_ptr<Layer> make_output_head(int model_index, const NetDims& dims) {
  return std::make_unique<OutputHead>(model_index, dims);
}
std::unique_ptr<Layer> make_input_layer(const NetDims& dims) { return std::make_unique<InputLayer>(dims); }
std::unique_ptr<Layer> make_squared_loss() { return std::make_unique<SquaredLoss>(); }

}  // namespace mpsim::executor
