// The partition units' costs the planner's bounds sum: here, what DualPipe's F&B pairs charge a pass
// for its MoE blocks' slots, against an all-to-all worked out by hand.
#include <algorithm>

#include <gtest/gtest.h>

#include "planner/unit_costs.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

// Two A100s on a 640 MB/s PCIe switch, expert 2 (tests/unit/sim/engine/expert_parallel_test.cpp's
// closed form): each all-to-all sends half of a rank's 64 x 2 x 128 x 2 bytes of token copies to the
// other rank, 16384 B / 640 MB/s = 25.6 us. A pass of an F&B pair pays, per MoE block, each of its two
// halves' slots beside the partner's all-to-all: max(a2a - half, a2a x 16 / 108), NCCL's 16 SMs of
// an A100's 108 held while the all-to-all runs. Outside pairs, the blocking all-to-alls count whole.
TEST(UnitCosts, PairsChargeEachPassItsSlotsBesideThePartnersAllToAll) {
  const topology::Cluster box = engine::testing::pcie_box(2, "640 MB/s", "0 us");
  const auto model = engine::testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 128, heads: 4, ffn: 256, seq_len: 64, vocab: 512,\n"
      "         moe: { experts: 8, top_k: 2, expert_ffn: 64 } }\n");
  UnitCostKey key;
  key.degrees.set(plan::Axis::Expert, 2);
  const UnitCostModel units(box, model);
  const std::vector<UnitCost> blocking = units.costs(key);
  key.pairs_hide_comm = true;
  const std::vector<UnitCost> paired = units.costs(key);

  // The cost model's chunk of one block, as the probe sees it (data 2 folds the expert degree).
  const plan::Plan plan = engine::testing::plan_yaml("parallelism: { data: 2, expert: 2 }\nbatch: { global: 8, micro: 1 }\n",
                                                     box, model);
  const engine::CostModel costs = engine::build_cost_model(box, model, plan, plan::Layout(plan));
  const engine::ChunkCost& block = costs.chunk(0, 0);
  ASSERT_EQ(block.moe_blocks, 2);
  const TimeNs a2a = TimeNs::ns(25'600);
  const TimeNs slowed = TimeNs::ns((25'600 * 16 + 54) / 108);
  const auto slot = [&](TimeNs half) { return std::max<TimeNs>(a2a > half ? a2a - half : TimeNs{}, slowed); };
  const TimeNs forward_slots = slot(block.moe_attention_forward) + slot(block.moe_mlp_forward);
  const TimeNs backward_slots = slot(block.moe_attention_backward) + slot(block.moe_mlp_backward);
  ASSERT_GT(forward_slots, slowed * 2);  // the forward's halves are shorter than the all-to-all

  ASSERT_EQ(paired.size(), blocking.size());
  int moe_units = 0;
  for (std::size_t u = 0; u < paired.size(); ++u) {
    // A unit is one block (the first with the embedding, the last with the head): its compute, plus
    // its slots in a pair, plus its dispatch and combine of each pass whole outside one.
    const TimeNs compute_forward = blocking[u].forward - a2a * 2;
    const TimeNs compute_backward = blocking[u].backward - a2a * 2;
    EXPECT_EQ(paired[u].forward, compute_forward + forward_slots) << "unit " << u;
    EXPECT_EQ(paired[u].backward, compute_backward + backward_slots) << "unit " << u;
    EXPECT_LT(paired[u].forward, blocking[u].forward);
    ++moe_units;
  }
  EXPECT_EQ(moe_units, 2);
}

}  // namespace
}  // namespace mpsim::planner
