#include "sim/engine/dispatcher_buffers.h"

#include <algorithm>
#include <array>
#include <iterator>
#include <vector>

#include "sim/engine/compute_contention.h"
#include "sim/engine/cost_model.h"

namespace mpsim::engine {
namespace {

constexpr std::int64_t kBf16Bytes = 2;  // the tokens HybridEP and DeepEP move (Megatron dispatches bf16)
/// HybridEP's scaling factors: one fp32 per 128 hidden elements (allocated whatever the token dtype).
constexpr std::int64_t kScalingBlock = 128;

/// HybridEP's NVLink buffers: every token of the group routed here, shared by dispatch and combine,
/// with the probabilities over `per_domain` GPUs' experts.
std::int64_t hybrid_ep_nvlink_bytes(const DispatcherBufferShape& s, std::int64_t per_domain) {
  const std::int64_t local_experts = s.experts / std::max(1, s.group_ranks);
  const std::int64_t worst = s.tokens_per_rank * s.group_ranks;
  return worst * (s.hidden * kBf16Bytes + local_experts * per_domain * kFp32Bytes + s.hidden / kScalingBlock * kFp32Bytes);
}

Bytes hybrid_ep_bytes(const DispatcherBufferShape& s) {
  const std::int64_t domains = std::max(1, s.group_ranks / std::max(1, s.ranks_per_domain));
  const std::int64_t per_domain = std::max(1, std::min(s.ranks_per_domain, s.group_ranks));
  const std::int64_t local_experts = s.experts / std::max(1, s.group_ranks);
  const std::int64_t token = s.hidden * kBf16Bytes;
  const std::int64_t scales = s.hidden / kScalingBlock * kFp32Bytes;
  std::int64_t bytes = hybrid_ep_nvlink_bytes(s, per_domain);
  if (domains > 1) {
    const std::int64_t t = s.tokens_per_rank;
    const std::int64_t others = domains - 1;
    const std::int64_t domain_probs = local_experts * per_domain * kFp32Bytes;
    // Dispatch: the rank's own tokens (probabilities over the whole group) and the other domains'.
    bytes += t * (token + local_experts * s.group_ranks * kFp32Bytes + scales);
    bytes += t * others * (token + domain_probs + scales);
    // Combine: the intra-domain reduction's and the inter-domain group's tokens and probabilities.
    bytes += 2 * t * others * (token + domain_probs);
  }
  return Bytes::bytes(bytes);
}

/// DeepEP's recommended configs by group size (deep_ep/buffers/legacy.py): the NVLink queue's token
/// slots per channel and peer, the larger of dispatch's and combine's (equal at every size), and the
/// RDMA queue's, rounded up to a multiple of the send chunk as Config does (the larger of the two).
struct DeepEpSlots {
  int group;
  std::int64_t nvl;
  std::int64_t rdma;
};
constexpr std::array<DeepEpSlots, 12> kDeepEpSlots{{{2, 256, 132},
                                                    {4, 256, 132},
                                                    {8, 256, 132},
                                                    {16, 288, 140},
                                                    {24, 288, 128},
                                                    {32, 288, 128},
                                                    {48, 288, 128},
                                                    {64, 288, 128},
                                                    {96, 480, 132},
                                                    {128, 560, 132},
                                                    {144, 720, 132},
                                                    {160, 720, 132}}};
constexpr std::int64_t kDeepEpNvlPeers = 8;
constexpr std::int64_t kDeepEpMaxTopK = 128;
constexpr std::int64_t kDeepEpMaxScales = 128;
constexpr std::int64_t kDeepEpSourceMetaBytes = 8;  // SourceMeta: two ints
constexpr std::int64_t kDeepEpTopkIndexBytes = 8;   // int64 top-k indices
constexpr std::int64_t kInt4Bytes = 16;

Bytes deep_ep_bytes(const DispatcherBufferShape& s) {
  // A group size the table lacks takes the next listed one (the largest past 160).
  const auto* slots = std::find_if(kDeepEpSlots.begin(), kDeepEpSlots.end(),
                                   [&](const DeepEpSlots& e) { return e.group >= s.group_ranks; });
  if (slots == kDeepEpSlots.end()) slots = std::prev(kDeepEpSlots.end());
  const std::int64_t channels = std::max(1, s.sms / 2);
  const std::int64_t nvl_peers = std::min<std::int64_t>(s.group_ranks, kDeepEpNvlPeers);
  const std::int64_t rdma_peers = std::max<std::int64_t>(1, s.group_ranks / kDeepEpNvlPeers);
  const std::int64_t hidden_bytes = s.hidden * kBf16Bytes;
  const std::int64_t slot = hidden_bytes + kDeepEpSourceMetaBytes + kDeepEpMaxTopK * kDeepEpTopkIndexBytes +
                            kDeepEpMaxTopK * kFp32Bytes + kDeepEpMaxScales * kFp32Bytes;
  const auto aligned = [](std::int64_t b) { return (b + 127) / 128 * 128; };
  const std::int64_t nvl = channels * nvl_peers * (2 * rdma_peers + 3) * 4 + channels * nvl_peers * slots->nvl * slot;
  std::int64_t bytes = aligned(nvl);
  if (s.group_ranks > kDeepEpNvlPeers) {
    const std::int64_t rdma = channels * rdma_peers * (kDeepEpNvlPeers * 2 + 2) * 2 * 4 +
                              channels * rdma_peers * slots->rdma * (slot + kInt4Bytes) * 2;
    bytes += aligned(rdma);
  }
  return Bytes::bytes(bytes);
}

}  // namespace

Bytes dispatcher_buffer_floor(const DispatcherBufferShape& shape) noexcept {
  if (shape.dispatcher != plan::MoeDispatcher::HybridEp || shape.group_ranks < 2 || shape.tokens_per_rank <= 0 ||
      shape.hidden <= 0) {
    return dispatcher_buffer_bytes(shape);
  }
  return Bytes::bytes(hybrid_ep_nvlink_bytes(shape, 1));
}

Bytes dispatcher_buffer_bytes(const DispatcherBufferShape& shape) noexcept {
  if (shape.group_ranks < 2 || shape.tokens_per_rank <= 0 || shape.hidden <= 0) return Bytes{};
  switch (shape.dispatcher) {
    case plan::MoeDispatcher::HybridEp: return hybrid_ep_bytes(shape);
    case plan::MoeDispatcher::DeepEp: return deep_ep_bytes(shape);
    case plan::MoeDispatcher::AllToAll: break;
  }
  return Bytes{};
}

DispatcherBufferShape dispatcher_buffer_shape(const model::Model& model, const plan::PlanSettings& settings,
                                              int group_ranks, int ranks_per_domain) {
  DispatcherBufferShape out;
  if (!plan::deduplicates_tokens(settings.dispatcher) || !model.shape || !model.shape->moe || group_ranks < 2) return out;
  const int split =
      settings.degrees[plan::Axis::Context] * (settings.sequence_parallel ? settings.degrees[plan::Axis::Tensor] : 1);
  out.dispatcher = settings.dispatcher;
  out.tokens_per_rank = model.shape->seq_len * settings.micro_batch / std::max(1, split);
  out.hidden = model.shape->hidden;
  out.group_ranks = group_ranks;
  out.ranks_per_domain = ranks_per_domain;
  out.experts = model.shape->moe->experts;
  out.sms = dispatcher_sms(settings.dispatcher, settings.flex_dispatcher_sms);
  return out;
}

DispatcherBufferShape dispatcher_buffer_shape(const topology::Cluster& cluster, const model::Model& model,
                                              const plan::Plan& plan, const plan::Layout& layout, int rank) {
  const std::vector<int> group = layout.group(rank, plan::Axis::Expert | plan::Axis::ExpertTensor);
  const auto node_of = [&](int r) { return cluster.device(cluster.gpus().at(static_cast<std::size_t>(r))).node; };
  const auto on_node = std::count_if(group.begin(), group.end(), [&](int r) { return node_of(r) == node_of(rank); });
  return dispatcher_buffer_shape(model, plan, static_cast<int>(group.size()), static_cast<int>(on_node));
}

}  // namespace mpsim::engine
