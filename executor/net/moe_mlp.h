#pragma once
/// The MLP half of a mixture-of-experts transformer block (Megatron-Core's MoELayer, with the
/// routing rule of executor/net/router.h): out = x + shared(LN(x)) + sum over the token's top_k
/// experts of weight x expert(LN(x)), each expert a GELU MLP of width expert_ffn with biases.
///
/// Parallelism:
/// - Expert parallelism: expert rank j of the expert group holds experts [j x E / ep, (j + 1) x E / ep).
///   A token's copies go to the ranks of their experts with an all-to-all over the expert group
///   (the counts first, in their own all-to-all), come back with a second one, and backward runs
///   the two in reverse. The interpreter's program marks these exchanges (AllToAll ops, in-layer);
///   the layer moves the real counts, whatever the routing.
/// - Tensor parallelism: each tensor rank routes its share of the tokens (rows
///   [r x T / t, (r + 1) x T / t)), as Megatron does under sequence parallelism; the routed output
///   joins the shared experts' row-parallel partial sum in the block's one all-reduce. The router's
///   logit gradients are summed over the tensor group, so its (replicated) weights get the gradient
///   of every token.
/// - Expert-tensor parallelism (expert_tensor > 1): the ranks of an expert-tensor group hold the
///   same experts, each a column slice of fc1 (and its bias) and the matching row slice of fc2. After
///   the dispatch each gathers the group's arrivals (Megatron's all-gather over the expert-tensor
///   group), runs its slice on all of them, and the partial outputs are summed over the group before
///   each rank takes back its own rows (the reduce-scatter); fc2's bias, whole on every rank, is added
///   after the sum. Backward mirrors it: output gradients gathered, input gradients summed.
/// The router, the combine and their gradients run on the host (per token: E probabilities and k
/// weights); the experts' GEMMs, the gathers and scatters of rows and the exchanges on the device.
#include <cstdint>
#include <optional>
#include <vector>

#include "executor/net/buffer.h"
#include "executor/net/layers.h"
#include "executor/net/router.h"

namespace mpsim::executor {

/// Rows of one routed expert in the expert-tensor group's gathered arrivals.
struct ExpertSegment {
  std::int64_t first = 0;
  std::int64_t rows = 0;
  std::size_t expert = 0;  ///< this rank's local expert
  bool own = false;        ///< this rank's own arrivals (not gathered from another member)
};

/// What one microbatch's pass keeps for backward.
struct MoeStash {
  MatrixView x;  // the input (owned by whoever made it)
  Buffer normed, mean, rstd;
  std::int64_t first = 0;  // this tensor rank's token rows [first, first + count)
  std::int64_t count = 0;
  Routing routing;
  Dispatch dispatch;
  Arrival arrival;
  std::vector<std::size_t> send_floats, recv_floats;  // per expert rank
  // The expert-tensor group's arrivals, member by member, each expert-major (this rank's own alone
  // without expert-tensor parallelism); this rank's are rows [own_first, own_first + own_rows).
  std::vector<ExpertSegment> segments;
  std::vector<std::size_t> member_floats;  // per expert-tensor member: its arrivals x hidden
  std::int64_t own_first = 0;
  std::int64_t own_rows = 0;
  Buffer expert_in, expert_pre, expert_act;           // gathered arrivals; pre and act: this rank's slice
  std::vector<float> returned;                        // host: the experts' outputs per copy, in send order
  Buffer shared_pre, shared_act;
  Buffer out;
  // backward_input -> backward_weight
  MatrixView dy;
  Buffer expert_dout, expert_dpre, shared_dpre, dlogits;  // expert_*: gathered, as expert_in
};

class MoeMlp {
 public:
  /// Adds the half's parameters to `params`: layer norm, router, shared experts, then the routed
  /// experts of expert rank `expert_rank` (of `expert_size`). Throws std::invalid_argument when
  /// expert_size does not divide the experts.
  MoeMlp(std::vector<Param>& params, const MoeDims& moe, std::int64_t hidden, int expert_size, int expert_rank);

  /// s.out = x + the MoE MLP of LN(x).
  void forward(const LayerContext& ctx, const std::vector<Param>& p, MatrixView x, MoeStash& s) const;
  /// dx = d(out)/dx applied to dy; layer-norm gradients accumulate here, the rest in backward_weight.
  void backward_input(const LayerContext& ctx, std::vector<Param>& p, MoeStash& s, MatrixView dy, Buffer& dx) const;
  void backward_weight(const LayerContext& ctx, std::vector<Param>& p, MoeStash& s) const;

 private:
  struct Mlp {
    std::size_t fc1_w, fc1_b, fc2_w, fc2_b;  // indices into the layer's params
  };
  /// The segments of the expert-tensor group's arrivals (and s.own_first, s.member_floats), after
  /// exchanging each member's rows per expert; without expert-tensor parallelism this rank's alone.
  void plan_segments(const LayerContext& ctx, MoeStash& s) const;
  /// Every member's `own` rows (own_rows x cols), member by member (`own` itself without
  /// expert-tensor parallelism).
  [[nodiscard]] Buffer gather_members(const LayerContext& ctx, Buffer own, const MoeStash& s) const;
  /// The sum of every member's `partial` (gathered rows x hidden), this rank's own rows of it.
  [[nodiscard]] Buffer sum_own_rows(const LayerContext& ctx, Buffer partial, const MoeStash& s) const;
  /// Moves `rows` (copies x hidden) over the expert group: send order to arrival order when
  /// `dispatch`, back otherwise. Without expert parallelism the rows stay where they are.
  [[nodiscard]] Buffer exchange(const LayerContext& ctx, Buffer rows, const MoeStash& s, bool dispatch) const;

  MoeDims moe_;
  std::int64_t hidden_;
  std::size_t ln_gamma_ = 0, ln_beta_ = 0, router_w_ = 0;
  std::optional<std::size_t> router_b_;
  std::optional<Mlp> shared_;
  std::vector<Mlp> experts_;  // this rank's, in expert order
};

}  // namespace mpsim::executor
