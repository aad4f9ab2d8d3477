// The flex dispatchers' own buffers (sim/engine/dispatcher_buffers.h), against their sizes worked out
// by hand from the backends' allocation rules, and in the simulated peak.
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/dispatcher_buffers.h"
#include "sim/engine/simulator.h"

namespace mpsim::engine {
namespace {

DispatcherBufferShape shape(plan::MoeDispatcher d, std::int64_t tokens, std::int64_t hidden, int group, int domain,
                            std::int64_t experts, int sms) {
  return {d, tokens, hidden, group, domain, experts, sms};
}

TEST(DispatcherBuffers, HybridEpHoldsTheWholeGroupsTokensForOneRank) {
  // DeepSeek-V3 on one NVL72 rack, EP 64: 4096 tokens a rank, hidden 7168, 256 experts (4 a rank).
  // Worst case 4096 x 64 = 262144 tokens, each 7168 bf16 (14336 B), probabilities over the domain's
  // 256 experts (1024 B) and 56 fp32 scales (224 B).
  const auto one_rack = shape(plan::MoeDispatcher::HybridEp, 4096, 7168, 64, 64, 256, 16);
  EXPECT_EQ(dispatcher_buffer_bytes(one_rack).count(), 262144LL * (14336 + 1024 + 224));  // 3.80 GiB
  // Twice the tokens a rank (micro batch 2), twice the buffers.
  auto doubled = one_rack;
  doubled.tokens_per_rank = 8192;
  EXPECT_EQ(dispatcher_buffer_bytes(doubled).count(), 2 * dispatcher_buffer_bytes(one_rack).count());
}

TEST(DispatcherBuffers, HybridEpOverTwoDomainsAddsItsRdmaStaging) {
  // Qwen3-30B-A3B, EP 16 over two 8-GPU nodes: 4096 tokens, hidden 2048 (4096 B), 128 experts, 8 a
  // rank. NVLink: 65536 tokens x (4096 + 8 x 8 x 4 + 16 x 4) = 65536 x 4416. Dispatch: the own tokens
  // with probabilities over all 128 experts (4096 x (4096 + 512 + 64)) and the other node's
  // (4096 x 4416); combine: two of the other node's tokens and probabilities (2 x 4096 x 4352).
  const auto two_nodes = shape(plan::MoeDispatcher::HybridEp, 4096, 2048, 16, 8, 128, 32);
  EXPECT_EQ(dispatcher_buffer_bytes(two_nodes).count(),
            65536LL * 4416 + 4096LL * 4672 + 4096LL * 4416 + 2LL * 4096 * 4352);  // 345.5 MiB
}

TEST(DispatcherBuffers, DeepEpQueuesDependOnTheGroupNotOnTheTokens) {
  // 20 SMs: 10 channels. A token slot: 14336 B of hidden state, 8 of metadata, 128 int64 indices,
  // 128 fp32 weights and 128 fp32 scales = 16392 B.
  // EP 8: 8 NVLink peers of 256 slots, no RDMA; (2 x 1 + 3) ints of counters per channel and peer.
  const auto eight = shape(plan::MoeDispatcher::DeepEp, 4096, 7168, 8, 8, 256, 20);
  const std::int64_t nvl8 = 10LL * 8 * 5 * 4 + 10LL * 8 * 256 * 16392;
  EXPECT_EQ(dispatcher_buffer_bytes(eight).count(), (nvl8 + 127) / 128 * 128);
  auto more_tokens = eight;
  more_tokens.tokens_per_rank = 16384;
  EXPECT_EQ(dispatcher_buffer_bytes(more_tokens), dispatcher_buffer_bytes(eight));
  // EP 64: 8 NVLink peers of 288 slots and 8 RDMA peers of 128, each RDMA slot twice (send and
  // receive) and 16 B more.
  const auto sixty_four = shape(plan::MoeDispatcher::DeepEp, 4096, 7168, 64, 8, 256, 20);
  const std::int64_t nvl64 = 10LL * 8 * (2 * 8 + 3) * 4 + 10LL * 8 * 288 * 16392;
  const std::int64_t rdma64 = 10LL * 8 * 18 * 2 * 4 + 10LL * 8 * 128 * (16392 + 16) * 2;
  EXPECT_EQ(dispatcher_buffer_bytes(sixty_four).count(), (nvl64 + 127) / 128 * 128 + (rdma64 + 127) / 128 * 128);
  // Fewer SMs, fewer channels: 10 SMs hold half the queues.
  auto fewer = sixty_four;
  fewer.sms = 10;
  EXPECT_NEAR(static_cast<double>(dispatcher_buffer_bytes(fewer).count()),
              static_cast<double>(dispatcher_buffer_bytes(sixty_four).count()) / 2, 256.0);
}

// The planner bounds the buffers before it knows where the group lands: the floor holds under every
// placement, and is the exact figure for DeepEP.
TEST(DispatcherBuffers, TheFloorHoldsUnderEveryPlacement) {
  for (const int domain : {1, 2, 4, 8, 16}) {
    const auto hybrid = shape(plan::MoeDispatcher::HybridEp, 4096, 2048, 16, domain, 128, 32);
    EXPECT_LE(dispatcher_buffer_floor(hybrid), dispatcher_buffer_bytes(hybrid)) << domain;
    const auto deep = shape(plan::MoeDispatcher::DeepEp, 4096, 2048, 16, domain, 128, 20);
    EXPECT_EQ(dispatcher_buffer_floor(deep), dispatcher_buffer_bytes(deep)) << domain;
  }
  // One GPU's experts' probabilities, no staging: 65536 tokens x (4096 + 8 x 4 + 64).
  EXPECT_EQ(dispatcher_buffer_floor(shape(plan::MoeDispatcher::HybridEp, 4096, 2048, 16, 8, 128, 32)).count(),
            65536LL * (4096 + 32 + 64));
}

TEST(DispatcherBuffers, TheAllToAllAndGroupsOfOneHoldNone) {
  EXPECT_EQ(dispatcher_buffer_bytes(shape(plan::MoeDispatcher::AllToAll, 4096, 7168, 64, 64, 256, 16)), Bytes{});
  EXPECT_EQ(dispatcher_buffer_bytes(shape(plan::MoeDispatcher::HybridEp, 4096, 7168, 1, 1, 256, 16)), Bytes{});
}

// In a simulation the buffers are static memory beside the NCCL communicators: a HybridEP plan's
// every GPU peaks higher than the all-to-all plan's by exactly them. One node of 8 H100s, EP 8: a
// microbatch of 2 x 64 tokens, hidden 128 (256 B), 8 experts (1 a rank), one scale.
TEST(DispatcherBuffers, AreStaticMemoryInTheSimulatedPeak) {
  const topology::Cluster node = testing::h100_node(8);
  const model::Model model = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 128, heads: 4, ffn: 256, seq_len: 64, vocab: 512,\n"
      "         moe: { experts: 8, top_k: 2, expert_ffn: 64 } }\n");
  const std::string base = "parallelism: { data: 8, expert: 8 }\nbatch: { global: 16, micro: 2 }\n";
  const plan::Plan hybrid = testing::plan_yaml(
      base + "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep\n", node, model);
  const plan::Plan alltoall = testing::plan_yaml(base, node, model);
  const DispatcherBufferShape s = dispatcher_buffer_shape(node, model, hybrid, plan::Layout(hybrid), 0);
  EXPECT_EQ(s.tokens_per_rank, 128);
  EXPECT_EQ(s.group_ranks, 8);
  EXPECT_EQ(s.ranks_per_domain, 8);
  EXPECT_EQ(dispatcher_buffer_bytes(s).count(), 128LL * 8 * (256 + 1 * 8 * 4 + 1 * 4));
  const auto with_buffers = simulate(node, model, hybrid).report;
  const auto without = simulate(node, model, alltoall).report;
  ASSERT_EQ(with_buffers.devices.size(), without.devices.size());
  for (std::size_t g = 0; g < without.devices.size(); ++g) {
    EXPECT_EQ(with_buffers.devices[g].peak_memory_bytes - without.devices[g].peak_memory_bytes,
              dispatcher_buffer_bytes(s).count());
  }
  EXPECT_EQ(dispatcher_buffer_shape(node, model, alltoall, plan::Layout(alltoall), 0).group_ranks, 1);
}

}  // namespace
}  // namespace mpsim::engine
