#pragma once
/// The mixture-of-experts router's per-token arithmetic and the bookkeeping of the token exchange,
/// on the host: pure functions of their arguments, so tests pin them without a backend.
///
/// Routing rule: softmax over all experts, then the top_k largest probabilities, used as the
/// combine weights as they are (no renormalisation over the k). This is Megatron-Core's
/// `moe_router_pre_softmax` path (Switch Transformer for k = 1, DeepSeek-V2's rule). Megatron-Core's
/// default instead takes the top k logits and normalises their softmax; with k = 1 every weight is
/// then 1 and the router gets no gradient. Here the router learns through the combine weights alone
/// (no auxiliary load-balancing loss, no capacity limit: no token is dropped). Ties go to the lower
/// expert index, so routing is deterministic.
#include <cstdint>
#include <span>
#include <vector>

namespace mpsim::executor {

struct Routing {
  std::int64_t tokens = 0;
  std::int64_t experts = 0;
  std::int64_t top_k = 0;
  std::vector<float> probs;          ///< tokens x experts: the softmax of the logits
  std::vector<std::int32_t> expert;  ///< tokens x top_k: the chosen experts, most probable first
  std::vector<float> weight;         ///< tokens x top_k: their probabilities, the combine weights
};

/// Routes `tokens` rows of `experts` logits (row-major). Preconditions: 1 <= top_k <= experts,
/// logits.size() == tokens x experts. O(tokens x experts x top_k).
[[nodiscard]] Routing route_tokens(std::span<const float> logits, std::int64_t tokens, std::int64_t experts,
                                   std::int64_t top_k);

/// d loss / d logits (tokens x experts) from d loss / d weight (tokens x top_k): the softmax's
/// Jacobian, dlogit_j = p_j (g_j - sum_i g_i p_i), with g nonzero only at the chosen experts.
[[nodiscard]] std::vector<float> router_logit_grad(const Routing& routing, std::span<const float> dweight);

/// How one rank's token copies leave for the experts' ranks. With `ranks` expert ranks, rank j owns
/// experts [j x E / ranks, (j + 1) x E / ranks), so ordering the copies by expert orders them by
/// destination rank, then by that rank's local expert.
struct Dispatch {
  std::vector<std::int32_t> copy_token;     ///< per copy, in send order (expert, token, slot): its token
  std::vector<std::int32_t> copy_slot;      ///< per copy: token x top_k + slot, where its weight is
  std::vector<std::int64_t> expert_counts;  ///< copies per expert (E values)
};
[[nodiscard]] Dispatch plan_dispatch(const Routing& routing);

/// The receiving side. counts[s x local + e] copies from source rank s for local expert e arrive
/// back to back, source-major; the experts want them expert-major (one block per expert).
struct Arrival {
  std::vector<std::int32_t> expert_order;   ///< expert-major row i is arrival row expert_order[i]
  std::vector<std::int32_t> arrival_order;  ///< arrival row j is expert-major row arrival_order[j]
  std::vector<std::int64_t> expert_rows;    ///< rows per local expert
  std::vector<std::int64_t> rank_rows;      ///< rows from each source rank
};
/// Preconditions: counts.size() == ranks x local_experts, counts >= 0.
[[nodiscard]] Arrival plan_arrival(std::span<const std::int64_t> counts, int ranks, std::int64_t local_experts);

}  // namespace mpsim::executor
