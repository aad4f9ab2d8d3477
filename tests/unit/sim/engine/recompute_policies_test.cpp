// Full recomputation's choice of layers (Megatron-LM's recompute_method uniform / block with
// recompute_num_layers, TorchTitan's selective_ac_option N) and TorchTitan's per-op checkpointing in the
// simulated peak and the step's recomputed FLOPs, against sums worked out by hand from one block's
// stash.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/simulator.h"
#include "sim/schedule/passes.h"
#include "sim/schedule/report_builder.h"

namespace mpsim::engine {
namespace {

constexpr int kBlocks = 4;

/// 4 GPT blocks and a small vocabulary, on one GPU: the blocks' backward moments decide the peak.
model::Model gpt() {
  return testing::model_yaml(
      "model: { name: g, family: gpt, layers: 4, hidden: 256, heads: 4, seq_len: 1024, vocab: 64 }\n");
}

const topology::Cluster& node() {
  static const topology::Cluster n = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  return n;
}

constexpr const char* kPlan = "parallelism: { data: 8 }\nbatch: { global: 8, micro: 1 }\n";

trace::Report report_of(const model::Model& m, const std::string& recompute) {
  return simulate(node(), m, testing::plan_yaml(kPlan + recompute, node(), m)).report;
}

/// The activations the peak holds (the peak less the model states and the reserve).
std::int64_t activations_at_peak(const trace::Report& r) {
  const trace::DeviceReport& gpu = r.devices.front();
  return gpu.peak_memory_bytes - gpu.memory.weights - gpu.memory.gradients - gpu.memory.optimizer - gpu.memory.reserved;
}

/// One block's stash: its input (what a checkpoint keeps) and all of it (FlashAttention's rule).
struct BlockStash {
  std::int64_t input = 0;
  std::int64_t whole = 0;
  std::int64_t embedding = 0;
};
BlockStash block_stash(const model::Model& m) {
  const model::Layer& block = m.layers.at(1);
  EXPECT_EQ(block.kind, model::LayerKind::Transformer);
  return {model::stashed_activation_bytes(block, 1, 1, false, model::Recompute::Full).count(),
          model::stashed_activation_bytes(block, 1, 1, false, model::stash_recompute(model::Recompute::None, true)).count(),
          model::stashed_activation_bytes(m.layers.front(), 1, 1, false, model::Recompute::Full).count()};
}

TEST(RecomputePolicies, UniformGroupsKeepEachGroupsInputAndRebuildAWholeGroup) {
  const model::Model m = gpt();
  const BlockStash s = block_stash(m);
  // Groups {1, 2} and {3, 4}: the last group's backward holds the embedding's stash, the first group's
  // input and both of its own blocks rebuilt whole (its own input among them).
  EXPECT_EQ(activations_at_peak(report_of(m, "recompute: full\nrecompute_num_layers: 2\n")),
            s.embedding + s.input + 2 * s.whole);
  // One group of all four: the embedding's stash and four blocks rebuilt.
  EXPECT_EQ(activations_at_peak(report_of(m, "recompute: full\nrecompute_num_layers: 4\n")), s.embedding + 4 * s.whole);
  // Groups of 3 leave a last group of 1, {4}, whose backward is through (and its input freed) before
  // {1, 2, 3} is rebuilt.
  EXPECT_EQ(activations_at_peak(report_of(m, "recompute: full\nrecompute_method: uniform\nrecompute_num_layers: 3\n")),
            s.embedding + 3 * s.whole);
}

TEST(RecomputePolicies, BlockKeepsTheFirstLayersInputsAndTheOthersWhole) {
  const model::Model m = gpt();
  const BlockStash s = block_stash(m);
  // Blocks 1 and 2 checkpointed: the same moments as without recomputation, with their stashes
  // shrunk to their inputs (the head's backward, all stashes held, is the peak of both).
  const std::int64_t none = activations_at_peak(report_of(m, "recompute: none\n"));
  EXPECT_EQ(activations_at_peak(report_of(m, "recompute: full\nrecompute_method: block\nrecompute_num_layers: 2\n")),
            none - 2 * (s.whole - s.input));
  // All four: full recomputation of every block alone.
  EXPECT_EQ(activations_at_peak(report_of(m, "recompute: full\nrecompute_method: block\nrecompute_num_layers: 4\n")),
            activations_at_peak(report_of(m, "recompute: full\n")));
}

// Megatron-LM's --distribute-saved-activations (DeepSpeed's partition_activations): with tensor 2 and
// no sequence parallelism each checkpoint keeps half its input, and the replay first gathers it whole.
// Per-block groups: the last block's backward holds the embedding's stash, the other three blocks'
// inputs and its own block rebuilt whole (its gathered input among it), so the peak falls by three
// half inputs; each block's backward gathers its input once over the tensor ranks.
TEST(RecomputePolicies, DistributedCheckpointsKeepASliceOfTheirInputAndGatherItBeforeTheReplay) {
  const model::Model m = gpt();
  const std::string tensor2 = "parallelism: { tensor: 2, data: 4 }\nbatch: { global: 8, micro: 1 }\nrecompute: full\n";
  const plan::Plan whole = testing::plan_yaml(tensor2, node(), m);
  const plan::Plan distributed = testing::plan_yaml(tensor2 + "distribute_saved_activations: true\n", node(), m);
  const model::Layer& block = m.layers.at(1);
  const std::int64_t input = model::stashed_activation_bytes(block, 1, 2, false, model::Recompute::Full).count();
  ASSERT_EQ(input % 2, 0);
  const trace::Report kept = simulate(node(), m, whole).report;
  const trace::Report split = simulate(node(), m, distributed).report;
  EXPECT_EQ(activations_at_peak(kept) - activations_at_peak(split), 3 * input / 2);
  const auto gathers = [&](const plan::Plan& p) {
    std::int64_t bytes = 0;
    const auto collectives = schedule::chunk_layer_collectives(m, p);
    for (const schedule::LayerCollective& c : collectives.front().front().backward) {
      if (c.kind == schedule::OpKind::AllGather && c.placement == schedule::LayerCommPlacement::Blocking) {
        EXPECT_EQ(c.group, plan::AxisSet(plan::Axis::Tensor));
        bytes += c.bytes.count() * c.count;
      }
    }
    return bytes;
  };
  EXPECT_EQ(gathers(whole), 0);
  EXPECT_EQ(gathers(distributed), kBlocks * input);
  EXPECT_GT(split.step_time_s, kept.step_time_s);
}

TEST(RecomputePolicies, EveryNthBlockCountsFromOneOverTheRank) {
  const model::Model m = gpt();
  const BlockStash s = block_stash(m);
  // TorchTitan's selective_ac_option 2: blocks 2 and 4 checkpointed. Block 4's backward holds blocks 1
  // and 3 whole, block 2's input, and block 4 rebuilt.
  EXPECT_EQ(activations_at_peak(report_of(m, "recompute: selective\nselective_ac_option: 2\n")),
            s.embedding + 3 * s.whole + s.input);
}

TEST(RecomputePolicies, TheStepReplaysTheCheckpointedBlocksForwards) {
  const model::Model m = gpt();
  const auto recomputed = [&](const std::string& recompute) {
    const schedule::StepFlops f = schedule::step_flops(m, testing::plan_yaml(kPlan + recompute, node(), m));
    return Flops(f.executed - f.model).count();
  };
  const double block_forward = m.layers.at(1).forward_flops.count() * 8;  // global batch 8
  EXPECT_DOUBLE_EQ(recomputed("recompute: full\n"), kBlocks * block_forward);
  EXPECT_DOUBLE_EQ(recomputed("recompute: full\nrecompute_num_layers: 2\n"), kBlocks * block_forward);
  EXPECT_DOUBLE_EQ(recomputed("recompute: full\nrecompute_method: block\nrecompute_num_layers: 1\n"), block_forward);
  EXPECT_DOUBLE_EQ(recomputed("recompute: selective\nselective_ac_option: 2\n"), 2 * block_forward);
  EXPECT_DOUBLE_EQ(recomputed("recompute: selective\nselective_ac_option: 3\n"), block_forward);
}

ChunkCost chunk_of(const model::Model& m, const std::string& recompute) {
  const plan::Plan p = testing::plan_yaml(kPlan + recompute, node(), m);
  return build_cost_model(node(), m, p, plan::Layout(p)).ranks.front().chunks.front();
}

TEST(RecomputePolicies, TheInputGradientPassReplaysOnlyTheCheckpointedBlocks) {
  const model::Model m = gpt();
  const ChunkCost none = chunk_of(m, "recompute: none\n");
  const ChunkCost full = chunk_of(m, "recompute: full\n");
  // Uniform groups replay every block, as full recomputation of each alone does.
  EXPECT_EQ(chunk_of(m, "recompute: full\nrecompute_num_layers: 2\n").backward_input, full.backward_input);
  EXPECT_EQ(chunk_of(m, "recompute: full\nrecompute_method: block\nrecompute_num_layers: 4\n").backward_input,
            full.backward_input);
  // Two blocks of four, however chosen, replay the same.
  const ChunkCost block = chunk_of(m, "recompute: full\nrecompute_method: block\nrecompute_num_layers: 2\n");
  const ChunkCost every = chunk_of(m, "recompute: selective\nselective_ac_option: 2\n");
  EXPECT_EQ(block.backward_input, every.backward_input);
  EXPECT_GT(block.backward_input, none.backward_input);
  EXPECT_LT(block.backward_input, full.backward_input);
  EXPECT_EQ(block.forward, none.forward);
  EXPECT_EQ(block.backward_weight, none.backward_weight);
}

TEST(RecomputePolicies, PerOpCheckpointingKeepsWhatItSavesAndReplaysTheRest) {
  const model::Model m = testing::model_yaml(
      "model: { name: l, family: llama, layers: 4, hidden: 256, heads: 4, kv_heads: 2, ffn: 512, seq_len: 1024, "
      "vocab: 64 }\n");
  const ChunkCost none = chunk_of(m, "recompute: none\n");
  const ChunkCost op = chunk_of(m, "recompute: op\n");
  const model::Layer& block = m.layers.at(1);
  const Bytes whole = model::stashed_activation_bytes(block, 1, 1, false, model::Recompute::Selective);
  const model::OpCheckpoint saved = model::op_checkpoint(block, 1, 1, false, m.dtype_bytes, whole);
  // Each block keeps its saved outputs in place of its whole stash.
  EXPECT_EQ(none.stashed.count() - op.stashed.count(), kBlocks * Bytes(whole - saved.kept).count());
  // The last block's backward rebuilds what it replays beside the embedding's stash and every block's
  // saved outputs, unless the head's backward (every stash and the loss's gradients) holds more; the
  // loss's share is what it adds to the stash without recomputation, where the head's moment is the peak.
  const std::int64_t embedding =
      model::stashed_activation_bytes(m.layers.front(), 1, 1, false, model::Recompute::Selective).count();
  const std::int64_t last_block = embedding + kBlocks * saved.kept.count() + saved.rebuilt.count();
  const std::int64_t head = op.stashed.count() + Bytes(none.backward_working - none.stashed).count();
  EXPECT_EQ(op.backward_working.count(), std::max(last_block, head));
  EXPECT_GT(last_block, head);
  EXPECT_GT(op.backward_input, none.backward_input);
  EXPECT_EQ(op.forward, none.forward);
  // The replayed matmuls, per sample, are the step's extra FLOPs.
  const plan::Plan p = testing::plan_yaml(std::string(kPlan) + "recompute: op\n", node(), m);
  const schedule::StepFlops f = schedule::step_flops(m, p);
  EXPECT_DOUBLE_EQ(Flops(f.executed - f.model).count(), kBlocks * saved.matmul_flops.count() * 8);
}

}  // namespace
}  // namespace mpsim::engine
