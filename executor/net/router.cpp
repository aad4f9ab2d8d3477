#include "executor/net/router.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace mpsim::executor {

Routing route_tokens(std::span<const float> logits, std::int64_t tokens, std::int64_t experts, std::int64_t top_k) {
  if (top_k < 1 || top_k > experts || logits.size() != static_cast<std::size_t>(tokens * experts)) {
    throw std::invalid_argument(
        fmt::format("routing {} logits of {} tokens to top {} of {} experts", logits.size(), tokens, top_k, experts));
  }
  Routing r;
  r.tokens = tokens;
  r.experts = experts;
  r.top_k = top_k;
  r.probs.resize(logits.size());
  r.expert.resize(static_cast<std::size_t>(tokens * top_k));
  r.weight.resize(r.expert.size());
  const auto e = static_cast<std::size_t>(experts);
  const auto k = static_cast<std::size_t>(top_k);
  std::vector<std::int32_t> order(e);
  for (std::size_t t = 0; t < static_cast<std::size_t>(tokens); ++t) {
    const float* z = logits.data() + t * e;
    float* p = r.probs.data() + t * e;
    const float largest = *std::max_element(z, z + e);
    double sum = 0;  // in double so the normalisation does not depend on the expert count's rounding
    for (std::size_t j = 0; j < e; ++j) {
      p[j] = std::exp(z[j] - largest);
      sum += p[j];
    }
    for (std::size_t j = 0; j < e; ++j) p[j] = static_cast<float>(p[j] / sum);
    std::iota(order.begin(), order.end(), 0);
    // Stable on the index: equal probabilities keep the lower expert first.
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::int32_t a, std::int32_t b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
    for (std::size_t s = 0; s < k; ++s) {
      r.expert[t * k + s] = order[s];
      r.weight[t * k + s] = p[order[s]];
    }
  }
  return r;
}

std::vector<float> router_logit_grad(const Routing& routing, std::span<const float> dweight) {
  if (dweight.size() != routing.weight.size()) {
    throw std::invalid_argument(
        fmt::format("{} weight gradients for {} weights", dweight.size(), routing.weight.size()));
  }
  const auto e = static_cast<std::size_t>(routing.experts);
  const auto k = static_cast<std::size_t>(routing.top_k);
  std::vector<float> out(routing.probs.size(), 0.0f);
  for (std::size_t t = 0; t < static_cast<std::size_t>(routing.tokens); ++t) {
    const float* p = routing.probs.data() + t * e;
    double inner = 0;  // sum_i g_i p_i over the chosen experts
    for (std::size_t s = 0; s < k; ++s) inner += static_cast<double>(dweight[t * k + s]) * routing.weight[t * k + s];
    float* d = out.data() + t * e;
    for (std::size_t j = 0; j < e; ++j) d[j] = static_cast<float>(-p[j] * inner);
    for (std::size_t s = 0; s < k; ++s) {
      const auto j = static_cast<std::size_t>(routing.expert[t * k + s]);
      d[j] += p[j] * dweight[t * k + s];
    }
  }
  return out;
}

Dispatch plan_dispatch(const Routing& routing) {
  Dispatch d;
  d.expert_counts.assign(static_cast<std::size_t>(routing.experts), 0);
  for (const std::int32_t e : routing.expert) ++d.expert_counts[static_cast<std::size_t>(e)];
  // Counting sort by expert keeps (token, slot) order inside each expert's block.
  std::vector<std::int64_t> next(d.expert_counts.size(), 0);
  std::partial_sum(d.expert_counts.begin(), d.expert_counts.end() - 1, next.begin() + 1);
  d.copy_token.resize(routing.expert.size());
  d.copy_slot.resize(routing.expert.size());
  for (std::size_t c = 0; c < routing.expert.size(); ++c) {
    const auto at = static_cast<std::size_t>(next[static_cast<std::size_t>(routing.expert[c])]++);
    d.copy_token[at] = static_cast<std::int32_t>(c / static_cast<std::size_t>(routing.top_k));
    d.copy_slot[at] = static_cast<std::int32_t>(c);
  }
  return d;
}

Arrival plan_arrival(std::span<const std::int64_t> counts, int ranks, std::int64_t local_experts) {
  const auto r = static_cast<std::size_t>(ranks);
  const auto l = static_cast<std::size_t>(local_experts);
  if (counts.size() != r * l) {
    throw std::invalid_argument(
        fmt::format("{} arrival counts for {} ranks x {} experts", counts.size(), ranks, local_experts));
  }
  Arrival a;
  a.expert_rows.assign(l, 0);
  a.rank_rows.assign(r, 0);
  for (std::size_t s = 0; s < r; ++s) {
    for (std::size_t e = 0; e < l; ++e) {
      a.expert_rows[e] += counts[s * l + e];
      a.rank_rows[s] += counts[s * l + e];
    }
  }
  // Where each (source, expert) block starts in arrival order and in expert-major order.
  std::vector<std::int64_t> arrival_at(r * l, 0), expert_at(r * l, 0);
  std::int64_t row = 0;
  for (std::size_t i = 0; i < r * l; ++i) {
    arrival_at[i] = row;
    row += counts[i];
  }
  row = 0;
  for (std::size_t e = 0; e < l; ++e) {
    for (std::size_t s = 0; s < r; ++s) {
      expert_at[s * l + e] = row;
      row += counts[s * l + e];
    }
  }
  a.expert_order.resize(static_cast<std::size_t>(row));
  a.arrival_order.resize(static_cast<std::size_t>(row));
  for (std::size_t i = 0; i < r * l; ++i) {
    for (std::int64_t n = 0; n < counts[i]; ++n) {
      const auto from = static_cast<std::size_t>(arrival_at[i] + n);
      const auto to = static_cast<std::size_t>(expert_at[i] + n);
      a.expert_order[to] = static_cast<std::int32_t>(from);
      a.arrival_order[from] = static_cast<std::int32_t>(to);
    }
  }
  return a;
}

}  // namespace mpsim::executor
