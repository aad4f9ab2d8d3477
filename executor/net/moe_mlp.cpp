#include "executor/net/moe_mlp.h"

#include <numeric>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "executor/net/linear.h"

namespace mpsim::executor {
namespace {

/// out[i] = table[rows[i]]; `out` is freshly allocated (zero), which the gather adds to.
void gather_rows(Backend& be, MatrixView table, std::span<const std::int32_t> rows, MatrixView out) {
  if (!rows.empty()) be.embedding_forward(table, rows, out);
}

}  // namespace

MoeMlp::MoeMlp(std::vector<Param>& params, const MoeDims& moe, std::int64_t hidden, int expert_size, int expert_rank)
    : moe_(moe), hidden_(hidden) {
  if (expert_size < 1 || moe.experts % expert_size != 0) {
    throw std::invalid_argument(
        fmt::format("expert parallelism {} does not divide the model's {} experts", expert_size, moe.experts));
  }
  auto add = [&](std::string name, std::int64_t rows, std::int64_t cols, Split split, Param::Init init,
                 bool expert = false) {
    params.push_back(
        {.name = std::move(name), .rows = rows, .cols = cols, .split = split, .init = init, .expert = expert});
    return params.size() - 1;
  };
  const std::int64_t h = hidden;
  ln_gamma_ = add("mlp.ln.gamma", 1, h, Split::None, Param::Init::Gamma);
  ln_beta_ = add("mlp.ln.beta", 1, h, Split::None, Param::Init::Beta);
  router_w_ = add("moe.router.weight", h, moe.experts, Split::None, Param::Init::Weight);
  if (moe.router_bias) router_b_ = add("moe.router.bias", 1, moe.experts, Split::None, Param::Init::Bias);
  if (moe.shared_ffn > 0) {
    const std::int64_t f = moe.shared_ffn;
    shared_ = Mlp{add("moe.shared.fc1.weight", h, f, Split::Columns, Param::Init::Weight),
                  add("moe.shared.fc1.bias", 1, f, Split::Columns, Param::Init::Bias),
                  add("moe.shared.fc2.weight", f, h, Split::Rows, Param::Init::Weight),
                  add("moe.shared.fc2.bias", 1, h, Split::None, Param::Init::Bias)};
  }
  // Experts are named by their global index, so their initial values do not depend on the split.
  const std::int64_t local = moe.experts / expert_size;
  for (std::int64_t e = expert_rank * local; e < (expert_rank + 1) * local; ++e) {
    const std::string prefix = fmt::format("moe.expert{}.", e);
    const std::int64_t f = moe.expert_ffn;
    // Split over the expert-tensor group (set_local_shape): fc1 by columns, fc2 by rows.
    experts_.push_back(Mlp{add(prefix + "fc1.weight", h, f, Split::Columns, Param::Init::Weight, true),
                           add(prefix + "fc1.bias", 1, f, Split::Columns, Param::Init::Bias, true),
                           add(prefix + "fc2.weight", f, h, Split::Rows, Param::Init::Weight, true),
                           add(prefix + "fc2.bias", 1, h, Split::None, Param::Init::Bias, true)});
  }
}

void MoeMlp::plan_segments(const LayerContext& ctx, MoeStash& s) const {
  const std::vector<std::int64_t>& mine = s.arrival.expert_rows;
  const auto local = mine.size();
  const int members = ctx.expert_tensor != nullptr ? ctx.expert_tensor_size : 1;
  std::vector<std::int64_t> rows = mine;  // [member][local expert]
  if (members > 1) {
    std::vector<std::int64_t> send;
    for (int m = 0; m < members; ++m) send.insert(send.end(), mine.begin(), mine.end());
    rows.assign(send.size(), 0);
    ctx.backend->all_to_all_counts(*ctx.expert_tensor, send, rows);
  }
  const int me = members > 1 ? ctx.expert_tensor_rank : 0;
  s.segments.clear();
  s.member_floats.assign(static_cast<std::size_t>(members), 0);
  std::int64_t first = 0;
  for (int m = 0; m < members; ++m) {
    if (m == me) s.own_first = first;
    for (std::size_t e = 0; e < local; ++e) {
      const std::int64_t n = rows[static_cast<std::size_t>(m) * local + e];
      s.segments.push_back({first, n, e, m == me});
      s.member_floats[static_cast<std::size_t>(m)] += static_cast<std::size_t>(n * hidden_);
      first += n;
    }
  }
  s.own_rows = std::accumulate(mine.begin(), mine.end(), std::int64_t{0});
}

Buffer MoeMlp::gather_members(const LayerContext& ctx, Buffer own, const MoeStash& s) const {
  if (ctx.expert_tensor == nullptr || ctx.expert_tensor_size <= 1) return own;
  const int members = ctx.expert_tensor_size;
  const std::int64_t rows = s.own_rows;
  Buffer send = ctx.buffer(rows * members, hidden_);
  for (int m = 0; m < members && rows > 0; ++m) ctx.backend->copy(own.view(), send.view().row_range(m * rows, rows));
  const std::vector<std::size_t> send_floats(static_cast<std::size_t>(members), static_cast<std::size_t>(rows * hidden_));
  const std::size_t total = std::accumulate(s.member_floats.begin(), s.member_floats.end(), std::size_t{0});
  Buffer gathered = ctx.buffer(static_cast<std::int64_t>(total) / hidden_, hidden_);
  ctx.backend->all_to_all(*ctx.expert_tensor, send.data(), send_floats, gathered.data(), s.member_floats);
  return gathered;
}

Buffer MoeMlp::sum_own_rows(const LayerContext& ctx, Buffer partial, const MoeStash& s) const {
  if (ctx.expert_tensor == nullptr || ctx.expert_tensor_size <= 1) return partial;
  const MatrixView all = partial.view();
  ctx.backend->all_reduce_sum(*ctx.expert_tensor, all.data, static_cast<std::size_t>(all.rows * all.cols));
  Buffer own = ctx.buffer(s.own_rows, hidden_);
  if (s.own_rows > 0) ctx.backend->copy(all.row_range(s.own_first, s.own_rows), own.view());
  return own;
}

namespace {
MatrixView segment_rows(const Buffer& b, const ExpertSegment& seg) { return b.view().row_range(seg.first, seg.rows); }
}  // namespace

Buffer MoeMlp::exchange(const LayerContext& ctx, Buffer rows, const MoeStash& s, bool dispatch) const {
  if (ctx.expert == nullptr || ctx.expert_size <= 1) return rows;
  const std::vector<std::size_t>& out = dispatch ? s.send_floats : s.recv_floats;
  const std::vector<std::size_t>& in = dispatch ? s.recv_floats : s.send_floats;
  const std::size_t floats = std::accumulate(in.begin(), in.end(), std::size_t{0});
  Buffer arrived = ctx.buffer(static_cast<std::int64_t>(floats) / hidden_, hidden_);
  ctx.backend->all_to_all(*ctx.expert, rows.data(), out, arrived.data(), in);
  return arrived;
}

void MoeMlp::forward(const LayerContext& ctx, const std::vector<Param>& p, MatrixView x, MoeStash& s) const {
  Backend& be = *ctx.backend;
  const std::int64_t tokens = x.rows;
  const std::int64_t h = hidden_;
  const std::int64_t experts = moe_.experts;
  s.x = x;
  s.normed = ctx.buffer(tokens, h);
  s.mean = ctx.buffer(tokens, 1);
  s.rstd = ctx.buffer(tokens, 1);
  be.layer_norm_forward(x, p[ln_gamma_].data, p[ln_beta_].data, ctx.layer_norm_epsilon, s.normed.view(), s.mean.data(),
                        s.rstd.data());
  s.first = tokens * ctx.tensor_rank / ctx.tensor_size;
  s.count = tokens * (ctx.tensor_rank + 1) / ctx.tensor_size - s.first;
  const MatrixView mine = s.normed.view().row_range(s.first, s.count);

  // Route this rank's tokens.
  std::vector<float> logits(static_cast<std::size_t>(s.count * experts));
  if (s.count > 0) {
    Buffer device_logits = ctx.buffer(s.count, experts);
    linear(ctx, mine, p[router_w_], router_b_ ? &p[*router_b_] : nullptr, device_logits.view());
    be.download(device_logits.data(), logits);
  }
  s.routing = route_tokens(logits, s.count, experts, moe_.top_k);
  s.dispatch = plan_dispatch(s.routing);

  // Counts first: each expert rank learns how many copies of each source's tokens its experts get.
  const bool parallel = ctx.expert != nullptr && ctx.expert_size > 1;
  const int ranks = parallel ? ctx.expert_size : 1;
  const std::int64_t local = experts / ranks;
  std::vector<std::int64_t> arriving = s.dispatch.expert_counts;
  if (parallel) be.all_to_all_counts(*ctx.expert, s.dispatch.expert_counts, arriving);
  s.arrival = plan_arrival(arriving, ranks, local);
  s.send_floats.assign(static_cast<std::size_t>(ranks), 0);
  s.recv_floats.assign(static_cast<std::size_t>(ranks), 0);
  for (std::size_t j = 0; j < static_cast<std::size_t>(ranks); ++j) {
    for (std::size_t e = 0; e < static_cast<std::size_t>(local); ++e) {
      s.send_floats[j] +=
          static_cast<std::size_t>(s.dispatch.expert_counts[j * static_cast<std::size_t>(local) + e] * h);
    }
    s.recv_floats[j] = static_cast<std::size_t>(s.arrival.rank_rows[j] * h);
  }

  // Dispatch, the experts, combine.
  const auto copies = static_cast<std::int64_t>(s.dispatch.copy_token.size());
  const auto arrived = static_cast<std::int64_t>(s.arrival.expert_order.size());
  Buffer sent = ctx.buffer(copies, h);
  gather_rows(be, mine, s.dispatch.copy_token, sent.view());
  Buffer landed = exchange(ctx, std::move(sent), s, true);
  Buffer own_in = ctx.buffer(arrived, h);
  gather_rows(be, landed.view(), s.arrival.expert_order, own_in.view());
  landed.reset();
  plan_segments(ctx, s);
  s.expert_in = gather_members(ctx, std::move(own_in), s);
  const std::int64_t gathered = s.expert_in.view().rows;
  const bool sliced = ctx.expert_tensor != nullptr && ctx.expert_tensor_size > 1;
  const std::int64_t width = experts_.empty() ? 0 : p[experts_.front().fc1_w].local_cols;  // this rank's slice
  s.expert_pre = ctx.buffer(gathered, width);
  s.expert_act = ctx.buffer(gathered, width);
  Buffer partial_out = ctx.buffer(gathered, h);
  for (const ExpertSegment& seg : s.segments) {
    if (seg.rows == 0) continue;
    const Mlp& m = experts_[seg.expert];
    linear(ctx, segment_rows(s.expert_in, seg), p[m.fc1_w], &p[m.fc1_b], segment_rows(s.expert_pre, seg));
    be.gelu_forward(segment_rows(s.expert_pre, seg), segment_rows(s.expert_act, seg));
    // Sliced, fc2 makes a partial sum: its bias goes on once, after the sum.
    linear(ctx, segment_rows(s.expert_act, seg), p[m.fc2_w], sliced ? nullptr : &p[m.fc2_b],
           segment_rows(partial_out, seg));
  }
  Buffer expert_out = sum_own_rows(ctx, std::move(partial_out), s);
  if (sliced) {
    for (const ExpertSegment& seg : s.segments) {
      if (!seg.own || seg.rows == 0) continue;
      be.add_row_vector(p[experts_[seg.expert].fc2_b].data,
                        expert_out.view().row_range(seg.first - s.own_first, seg.rows));
    }
  }
  Buffer leaving = ctx.buffer(arrived, h);
  gather_rows(be, expert_out.view(), s.arrival.arrival_order, leaving.view());
  expert_out.reset();
  const Buffer returned = exchange(ctx, std::move(leaving), s, false);
  s.returned.assign(static_cast<std::size_t>(copies * h), 0.0f);
  if (copies > 0) be.download(returned.data(), s.returned);
  // Each token's copies are added in expert order, whatever the split: the sum is deterministic.
  std::vector<float> combined(static_cast<std::size_t>(s.count * h), 0.0f);
  for (std::size_t c = 0; c < static_cast<std::size_t>(copies); ++c) {
    const float w = s.routing.weight[static_cast<std::size_t>(s.dispatch.copy_slot[c])];
    const float* row = s.returned.data() + c * static_cast<std::size_t>(h);
    float* to = combined.data() + static_cast<std::size_t>(s.dispatch.copy_token[c] * h);
    for (std::int64_t j = 0; j < h; ++j) to[j] += w * row[j];
  }

  // out = x + shared(normed) + routed, one tensor all-reduce for both row-split parts.
  s.out = ctx.buffer(tokens, h);
  if (shared_) {
    const std::int64_t width = p[shared_->fc1_w].local_cols;
    s.shared_pre = ctx.buffer(tokens, width);
    s.shared_act = ctx.buffer(tokens, width);
    linear(ctx, s.normed.view(), p[shared_->fc1_w], &p[shared_->fc1_b], s.shared_pre.view());
    be.gelu_forward(s.shared_pre.view(), s.shared_act.view());
    linear(ctx, s.shared_act.view(), p[shared_->fc2_w], nullptr, s.out.view());
  }
  if (s.count > 0) {
    Buffer routed = ctx.buffer(s.count, h);
    be.upload(combined, routed.data());
    be.axpy(1.0f, routed.view(), s.out.view().row_range(s.first, s.count));
  }
  ctx.tensor_all_reduce(s.out.view());
  if (shared_) be.add_row_vector(p[shared_->fc2_b].data, s.out.view());
  be.axpy(1.0f, x, s.out.view());
}

void MoeMlp::backward_input(const LayerContext& ctx, std::vector<Param>& p, MoeStash& s, MatrixView dy,
                            Buffer& dx) const {
  Backend& be = *ctx.backend;
  const std::int64_t tokens = dy.rows;
  const std::int64_t h = hidden_;
  const std::int64_t k = moe_.top_k;
  s.dy = dy;
  Buffer dnormed = ctx.buffer(tokens, h);

  // The combine's gradient on the host: each copy's output gradient is its weight times the
  // token's, and each weight's gradient is the token's gradient dotted with the copy's output.
  std::vector<float> dy_mine(static_cast<std::size_t>(s.count * h));
  if (s.count > 0) be.download(dy.row_range(s.first, s.count).data, dy_mine);  // dy is a whole buffer (ld == cols)
  const auto copies = static_cast<std::int64_t>(s.dispatch.copy_token.size());
  const auto arrived = static_cast<std::int64_t>(s.arrival.expert_order.size());
  std::vector<float> dcopies(static_cast<std::size_t>(copies * h));
  std::vector<float> dweight(static_cast<std::size_t>(s.count * k), 0.0f);
  for (std::size_t c = 0; c < static_cast<std::size_t>(copies); ++c) {
    const auto slot = static_cast<std::size_t>(s.dispatch.copy_slot[c]);
    const float w = s.routing.weight[slot];
    const float* g = dy_mine.data() + static_cast<std::size_t>(s.dispatch.copy_token[c] * h);
    const float* out = s.returned.data() + c * static_cast<std::size_t>(h);
    float* d = dcopies.data() + c * static_cast<std::size_t>(h);
    double dot = 0;
    for (std::int64_t j = 0; j < h; ++j) {
      d[j] = w * g[j];
      dot += static_cast<double>(g[j]) * out[j];
    }
    dweight[slot] = static_cast<float>(dot);
  }

  // The experts' backward, on the ranks that hold them.
  Buffer sent = ctx.buffer(copies, h);
  if (copies > 0) be.upload(dcopies, sent.data());
  Buffer landed = exchange(ctx, std::move(sent), s, true);
  Buffer own_dout = ctx.buffer(arrived, h);
  gather_rows(be, landed.view(), s.arrival.expert_order, own_dout.view());
  landed.reset();
  s.expert_dout = gather_members(ctx, std::move(own_dout), s);
  const std::int64_t gathered = s.expert_dout.view().rows;
  const std::int64_t width = s.expert_pre.view().cols;
  s.expert_dpre = ctx.buffer(gathered, width);
  Buffer dact = ctx.buffer(gathered, width);
  Buffer din = ctx.buffer(gathered, h);
  for (const ExpertSegment& seg : s.segments) {
    if (seg.rows == 0) continue;
    const Mlp& m = experts_[seg.expert];
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, segment_rows(s.expert_dout, seg), p[m.fc2_w].value(), 0.0f,
            segment_rows(dact, seg));
    be.gelu_backward(segment_rows(s.expert_pre, seg), segment_rows(dact, seg), segment_rows(s.expert_dpre, seg));
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, segment_rows(s.expert_dpre, seg), p[m.fc1_w].value(), 0.0f,
            segment_rows(din, seg));
  }
  dact.reset();
  // Each member's slice gives a part of every row's input gradient: summed, this rank keeps its own.
  const Buffer own_din = sum_own_rows(ctx, std::move(din), s);
  Buffer leaving = ctx.buffer(arrived, h);
  gather_rows(be, own_din.view(), s.arrival.arrival_order, leaving.view());
  const Buffer returned = exchange(ctx, std::move(leaving), s, false);
  if (copies > 0)
    be.embedding_backward(returned.view(), s.dispatch.copy_token, dnormed.view().row_range(s.first, s.count));

  // The router's logits, through the combine weights.
  s.dlogits = ctx.buffer(tokens, moe_.experts);
  if (s.count > 0) {
    const std::vector<float> dlogits = router_logit_grad(s.routing, dweight);
    be.upload(dlogits, s.dlogits.data() + s.first * moe_.experts);
  }

  if (shared_) {
    const std::int64_t width = p[shared_->fc1_w].local_cols;
    Buffer dshared = ctx.buffer(tokens, width);
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, dy, p[shared_->fc2_w].value(), 0.0f, dshared.view());
    s.shared_dpre = ctx.buffer(tokens, width);
    be.gelu_backward(s.shared_pre.view(), dshared.view(), s.shared_dpre.view());
    be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.shared_dpre.view(), p[shared_->fc1_w].value(), 1.0f, dnormed.view());
  }
  // Every tensor rank's token rows (and the shared experts' column-parallel parts) summed; the
  // router's logit gradients too, so its replicated weights see every token.
  ctx.tensor_all_reduce(dnormed.view());
  ctx.tensor_all_reduce(s.dlogits.view());
  be.gemm(Transpose::No, Transpose::Yes, 1.0f, s.dlogits.view(), p[router_w_].value(), 1.0f, dnormed.view());
  dx = ctx.buffer(tokens, h);
  be.layer_norm_backward(dnormed.view(), s.x, p[ln_gamma_].data, s.mean.data(), s.rstd.data(), dx.view(),
                         p[ln_gamma_].grad, p[ln_beta_].grad);
  be.axpy(1.0f, dy, dx.view());
}

void MoeMlp::backward_weight(const LayerContext& ctx, std::vector<Param>& p, MoeStash& s) const {
  linear_weight_grad(ctx, s.normed.view(), s.dlogits.view(), p[router_w_], router_b_ ? &p[*router_b_] : nullptr);
  // Over the group's gathered rows: each member's slice sees every token of its experts, and fc2's
  // whole bias the same gradient on every member.
  for (const ExpertSegment& seg : s.segments) {
    if (seg.rows == 0) continue;
    const Mlp& m = experts_[seg.expert];
    linear_weight_grad(ctx, segment_rows(s.expert_act, seg), segment_rows(s.expert_dout, seg), p[m.fc2_w], &p[m.fc2_b]);
    linear_weight_grad(ctx, segment_rows(s.expert_in, seg), segment_rows(s.expert_dpre, seg), p[m.fc1_w], &p[m.fc1_b]);
  }
  if (shared_) {
    linear_weight_grad(ctx, s.shared_act.view(), s.dy, p[shared_->fc2_w], &p[shared_->fc2_b]);
    linear_weight_grad(ctx, s.normed.view(), s.shared_dpre.view(), p[shared_->fc1_w], &p[shared_->fc1_b]);
  }
  s = MoeStash{};
}

}  // namespace mpsim::executor
