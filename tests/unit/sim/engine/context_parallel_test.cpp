// Context parallelism against closed forms: each of the context ranks runs 1/context of every
// layer's tokens (its queries against all keys), exchanges the whole sequence's keys and values over
// the context group beside the attention, and reduces gradients over data x context.
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/cost_model.h"
#include "sim/schedule/passes.h"

namespace mpsim::engine {
namespace {

using schedule::OpKind;

constexpr std::int64_t kCpHidden = 256, kCpSeq = 1024, kHeads = 8, kKvHeads = 2, kHeadDim = 32;

model::Model gqa_model() {
  return testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 256, heads: 8, kv_heads: 2, ffn: 512, seq_len: 1024, vocab: 512 }\n");
}

topology::Cluster cp_eight_h100() { return testing::h100_node(8); }

TEST(ContextParallel, EachRankRunsItsShareOfTheTokensAgainstEveryKey) {
  const model::Model model = gqa_model();
  const model::Layer& block = model.layers.at(1);
  const model::Layer share = model::context_share(block, 4);
  EXPECT_DOUBLE_EQ(share.forward_flops.count(), block.forward_flops.count() / 4);
  EXPECT_EQ(share.gemms.front().tokens, kCpSeq / 4);
  ASSERT_EQ(share.attention.size(), 1u);
  EXPECT_EQ(share.attention.front().q_tokens, kCpSeq / 4);
  EXPECT_EQ(share.attention.front().kv_tokens, kCpSeq);
  EXPECT_EQ(share.stashed.tp_sharded.count(), block.stashed.tp_sharded.count() / 4);
  EXPECT_EQ(share.output_bytes.count(), block.output_bytes.count() / 4);
  EXPECT_EQ(share.parameters, block.parameters);
}

TEST(ContextParallel, KeysAndValuesGoRoundTheContextGroupBesideTheAttention) {
  const model::Model model = gqa_model();
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { data: 2, context: 4 }\nbatch: { global: 2 }\nzero: 1\n", cp_eight_h100(), model);
  const CostModel costs = build_cost_model(cp_eight_h100(), model, p, plan::Layout(p));
  const schedule::Program program = build_program(model, p, costs, EngineOptions{});
  // Per block and microbatch: the whole sequence's K and V (2 heads x 32 each) in 16 bits, gathered
  // before the forward; gathered again and their gradients reduce-scattered in the backward.
  const std::int64_t keys_values = kCpSeq * kKvHeads * 2 * kHeadDim * 2;
  std::int64_t gathered = 0, scattered = 0;
  for (const schedule::Op& op : program.streams.front()) {
    if (!(op.group == plan::Axis::Context)) continue;
    EXPECT_EQ(op.bytes.count(), keys_values);
    EXPECT_EQ(op.stream, schedule::CommStream::Overlapped);
    (op.kind == OpKind::AllGather ? gathered : scattered) += op.count;
  }
  EXPECT_EQ(gathered, 2 * 2);  // 2 blocks x (forward + backward)
  EXPECT_EQ(scattered, 2);
  // Gradients are reduced over data x context: 8 replicas of the same weights.
  std::int64_t reduced = 0, parameters = 0;
  for (const auto& layer : model.layers) parameters += layer.parameters;
  for (const schedule::Op& op : program.streams.front()) {
    if (op.kind == OpKind::ReduceScatter && op.group == (plan::Axis::Data | plan::Axis::Context)) {
      reduced += op.bytes.count();
    }
  }
  EXPECT_EQ(reduced, 4 * parameters);
  // ZeRO 1 shards the optimizer over those 8.
  EXPECT_EQ(costs.ranks.front().static_memory.optimizer.count(), (12 * parameters + 7) / 8);
  // And the step simulates over the real links.
  EXPECT_GT(simulate(cp_eight_h100(), model, p).report.step_time_s, 0.0);
  (void)kCpHidden;
  (void)kHeads;
}

/// The context-group collectives of stage 0's stream: (kind, bytes x count, placement) summed.
struct ContextTraffic {
  std::int64_t gathered = 0, scattered = 0, exchanged = 0;
  bool blocking = true;
};
ContextTraffic context_traffic(const std::string& comm, int context = 4) {
  const model::Model model = gqa_model();
  const plan::Plan p = testing::plan_yaml(fmt::format("parallelism: {{ data: {}, context: {} }}\nbatch: {{ global: {} }}\n"
                                                      "zero: 1\ncp_comm_type: {}\n",
                                                      8 / context, context, 8 / context, comm),
                                          cp_eight_h100(), model);
  const CostModel costs = build_cost_model(cp_eight_h100(), model, p, plan::Layout(p));
  const schedule::Program program = build_program(model, p, costs, EngineOptions{});
  ContextTraffic t;
  for (const schedule::Op& op : program.streams.front()) {
    if (!(op.group == plan::Axis::Context)) continue;
    const std::int64_t bytes = op.bytes.count() * op.count;
    (op.kind == OpKind::AllGather ? t.gathered : op.kind == OpKind::ReduceScatter ? t.scattered : t.exchanged) += bytes;
    t.blocking = t.blocking && op.stream == schedule::CommStream::Blocking;
  }
  EXPECT_GT(simulate(cp_eight_h100(), model, p).report.step_time_s, 0.0);
  return t;
}

TEST(ContextParallel, AllGatherAndUlyssesVariants) {
  const std::int64_t keys_values = kCpSeq * kKvHeads * 2 * kHeadDim * 2;
  // all_gather: the ring's bytes, gathered before the attention instead of beside it.
  const ContextTraffic gather = context_traffic("all_gather");
  EXPECT_EQ(gather.gathered, 2 * 2 * keys_values);
  EXPECT_EQ(gather.scattered, 2 * keys_values);
  EXPECT_TRUE(gather.blocking);
  EXPECT_FALSE(context_traffic("p2p").blocking);
  // a2a (Ulysses) over context 2: per block, the rank's half of the tokens with Q (8 heads), K and V
  // (2 heads each) of 32, then its output (8 heads of 32), forward and again in the backward; 16-bit.
  const ContextTraffic ulysses = context_traffic("a2a", 2);
  const std::int64_t tokens = kCpSeq / 2;
  const std::int64_t inputs = tokens * (kHeads * kHeadDim + kKvHeads * 2 * kHeadDim) * 2;
  const std::int64_t output = tokens * kHeads * kHeadDim * 2;
  EXPECT_EQ(ulysses.exchanged, 2 * 2 * (inputs + output));
  EXPECT_EQ(ulysses.gathered + ulysses.scattered, 0);
  EXPECT_TRUE(ulysses.blocking);
  // Ulysses splits heads: context 4 does not divide the 2 key/value heads.
  const model::Model model = gqa_model();
  EXPECT_THROW((void)testing::plan_yaml("parallelism: { data: 2, context: 4 }\nbatch: { global: 2 }\ncp_comm_type: a2a\n",
                                        cp_eight_h100(), model),
               InputError);
}

TEST(ContextParallel, SplittingTheSequenceShortensTheComputeOfAStep) {
  // Llama-3 8B's blocks at 8k tokens: large enough that kernel launches do not dominate.
  const model::Model model = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 4096, heads: 32, kv_heads: 8, ffn: 14336, seq_len: 8192,\n"
      "         vocab: 128256 }\n");
  const auto step = [&](const std::string& parallelism) {
    const plan::Plan p = testing::plan_yaml(parallelism + "batch: { global: 8 }\n", cp_eight_h100(), model);
    const CostModel costs = build_cost_model(cp_eight_h100(), model, p, plan::Layout(p));
    return costs.ranks.front().chunks.front().forward;
  };
  // The same 8 GPUs as 8 data replicas or as 2 x 4 context ranks: a context rank's forward of a
  // microbatch is less than half of a whole one (its GEMMs and attention a quarter each).
  const TimeNs whole = step("parallelism: { data: 8 }\n");
  const TimeNs quarter = step("parallelism: { data: 2, context: 4 }\n");
  EXPECT_LT(quarter * 2, whole);
}

}  // namespace
}  // namespace mpsim::engine
