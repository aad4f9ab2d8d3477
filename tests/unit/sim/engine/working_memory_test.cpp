// What a pass holds while it runs beyond the stash rule (sim/engine/working_memory.h): the loss's
// transients beside the fp32 logits, and a layer's recomputed activations during its backward, in the
// simulated peak, against sums worked out by hand.
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/simulator.h"
#include "sim/engine/working_memory.h"

namespace mpsim::engine {
namespace {

TEST(WorkingMemory, ThenKeepsTheEarlierStashUnderTheLatersBackward) {
  const WorkingMemory embedding{Bytes::bytes(10), Bytes{}, Bytes::bytes(10)};
  const WorkingMemory block = layer_working_memory(Bytes::bytes(100), {Bytes::bytes(5), Bytes::bytes(300)});
  EXPECT_EQ(block.backward, Bytes::bytes(400));
  const WorkingMemory both = then(embedding, block);
  EXPECT_EQ(both.stashed, Bytes::bytes(110));
  EXPECT_EQ(both.forward, Bytes::bytes(5));
  EXPECT_EQ(both.backward, Bytes::bytes(410));  // the block's backward with the embedding's stash held
  // A head with a large stash but a small working set after the block: its own moment is the larger.
  const WorkingMemory head = layer_working_memory(Bytes::bytes(1000), {Bytes::bytes(7), Bytes::bytes(20)});
  EXPECT_EQ(then(both, head).backward, Bytes::bytes(110 + 1000 + 20));
  EXPECT_EQ(then(both, head).forward, Bytes::bytes(7));
}

TEST(WorkingMemory, TheLossKeepsAndHoldsWhatItsKernelAllocates) {
  // Per logit of a 16-bit model. Megatron-Core's native kernel: the fp32 buffer, with the 16-bit
  // logits (forward) and gradient (backward) beside it; Transformer Engine's: the 16-bit logits alone;
  // PyTorch's: the fp32 log-softmax output, with the 16-bit logits and their fp32 copy, then two fp32
  // gradients.
  const auto expect = [](plan::CrossEntropy loss, std::int64_t dtype_bytes, std::int64_t kept, std::int64_t forward,
                         std::int64_t backward, bool vocabulary_parallel = false) {
    const LossMemory m = loss_memory(loss, dtype_bytes, vocabulary_parallel);
    EXPECT_EQ(m.kept, kept);
    EXPECT_EQ(m.forward, forward);
    EXPECT_EQ(m.backward, backward);
  };
  expect(plan::CrossEntropy::Native, 2, 4, 2, 2);
  expect(plan::CrossEntropy::Te, 2, 2, 0, 0);
  expect(plan::CrossEntropy::Pytorch, 2, 4, 6, 8);
  // An fp32 model (the CPU executor's): `.float()` is the logits themselves, so neither the native
  // kernel's 16-bit copies nor PyTorch's fp32 copy exist.
  expect(plan::CrossEntropy::Native, 4, 4, 0, 0);
  expect(plan::CrossEntropy::Te, 4, 4, 0, 0);
  expect(plan::CrossEntropy::Pytorch, 4, 4, 4, 8);
  // PyTorch's under loss_parallel (logits split by vocabulary): its log-softmax, written out in
  // elementwise ops, holds the shifted logits beside the logits, their fp32 copy and exp or the result
  // (2 + 4 + 4 + 4 = 14 bytes, 10 beside the 4 kept); its backward builds zeros with the target's -1, exp
  // of the log-probabilities and their sum (or their product) beside the kept log-probabilities (12).
  // The other kernels are the same split or not.
  expect(plan::CrossEntropy::Pytorch, 2, 4, 10, 12, true);
  expect(plan::CrossEntropy::Pytorch, 4, 4, 8, 12, true);
  expect(plan::CrossEntropy::Native, 2, 4, 2, 2, true);
  expect(plan::CrossEntropy::Te, 2, 2, 0, 0, true);
}

model::Model gpt(int layers, int seq_len, int vocab) {
  return testing::model_yaml(fmt::format(
      "model: {{ name: g, family: gpt, layers: {}, hidden: 256, heads: 4, seq_len: {}, vocab: {} }}\n", layers,
      seq_len, vocab));
}

std::int64_t peak_of(const topology::Cluster& node, const model::Model& m, const std::string& plan_yaml) {
  return simulate(node, m, testing::plan_yaml(plan_yaml, node, m)).report.peak_memory_bytes;
}

TEST(WorkingMemory, EachLossKernelPeaksByWhatItKeepsAndHoldsPerLogit) {
  // One microbatch of 2 sequences of 512 tokens, vocabulary 32000, no tensor parallelism: the backward's
  // first moment (the whole stash and the loss's gradients) is the peak. Against Megatron-Core's native
  // kernel (4 bytes kept, 2 beside): PyTorch's keeps the same and holds 8, 6 more per logit; Transformer
  // Engine's keeps 2 and holds none, 4 fewer.
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const model::Model m = gpt(2, 512, 32000);
  const std::string plan = "parallelism: { data: 8 }\nbatch: { global: 16, micro: 2 }\n";
  const std::int64_t logits = 2 * 512 * 32000;
  const std::int64_t native = peak_of(node, m, plan);
  EXPECT_EQ(peak_of(node, m, plan + "cross_entropy: pytorch\n") - native, 6 * logits);
  EXPECT_EQ(peak_of(node, m, plan + "cross_entropy_fusion_impl: te\n") - native, -4 * logits);
}

TEST(WorkingMemory, PytorchsLossOverVocabularySplitLogitsHoldsOneMoreFp32Tensor) {
  // The same model and microbatch over tensor 2 (each rank computes half the vocabulary): PyTorch's
  // loss under loss_parallel holds 12 bytes per logit of its rank beside the kept log-probabilities in
  // the backward (the peak), against native's 2: 10 more per logit of the rank's half. Without a tensor
  // split the same plan holds 8, 6 more (the test above).
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const model::Model m = gpt(2, 512, 32000);
  const std::string plan = "parallelism: { tensor: 2, data: 4 }\nbatch: { global: 8, micro: 2 }\n";
  const std::int64_t logits_per_rank = 2 * 512 * 32000 / 2;
  EXPECT_EQ(peak_of(node, m, plan + "cross_entropy: pytorch\n") - peak_of(node, m, plan), 10 * logits_per_rank);
}

TEST(WorkingMemory, TheOptimizerStepHoldsFp32CopiesOfSixteenBitGradients) {
  // A small model on 64 tokens with full recomputation, no ZeRO: the optimizer step, holding an fp32
  // copy of every 16-bit gradient of the GPU beside its weights (2 bytes per parameter), gradients (2)
  // and optimizer state (12), is the peak, 20 bytes per parameter beside the reserved part, above the
  // activations' own moment, which the report gives apart. With fp32 gradients there is no copy: the
  // peak is the static part (18 bytes per parameter) and the same activations.
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const model::Model m = gpt(2, 64, 512);
  const std::string plan = "parallelism: { data: 8 }\nbatch: { global: 8, micro: 1 }\nrecompute: full\nzero: 0\n";
  const std::int64_t parameters = m.parameters();
  const trace::DeviceReport sixteen_bit =
      simulate(node, m, testing::plan_yaml(plan + "grad_reduce_in_fp32: false\n", node, m)).report.devices.front();
  const trace::MemoryBreakdown& b = sixteen_bit.memory;
  EXPECT_EQ(b.weights + b.gradients + b.optimizer, (2 + 2 + 12) * parameters);
  EXPECT_EQ(b.optimizer_step, 4 * parameters);
  EXPECT_GT(b.activations, 0);
  EXPECT_LT(b.activations, b.optimizer_step);
  EXPECT_EQ(sixteen_bit.peak_memory_bytes, b.weights + b.gradients + b.optimizer + b.reserved + b.optimizer_step);
  const trace::DeviceReport fp32 = simulate(node, m, testing::plan_yaml(plan, node, m)).report.devices.front();
  EXPECT_EQ(fp32.memory.optimizer_step, 0);
  EXPECT_EQ(fp32.memory.activations, b.activations);
  EXPECT_EQ(fp32.peak_memory_bytes - fp32.memory.reserved - fp32.memory.activations, (2 + 4 + 12) * parameters);
}

TEST(WorkingMemory, FullRecomputationRebuildsOneBlockBesideTheOtherBlocksInputs) {
  // A small vocabulary, so the last block's backward is the peak: the embedding's stash, every other
  // block's input, and the whole of the block the backward has rebuilt (what it would stash without
  // recomputation).
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const int blocks = 4;
  const model::Model m = gpt(blocks, 1024, 64);
  const std::string plan = "parallelism: { data: 8 }\nbatch: { global: 8, micro: 1 }\n";
  const plan::Plan full = testing::plan_yaml(plan + "recompute: full\n", node, m);
  const auto stash = [&](const model::Layer& l, model::Recompute r) {
    return model::stashed_activation_bytes(l, 1, 1, false, r).count();
  };
  const model::Layer& embedding = m.layers.front();
  const model::Layer& block = m.layers.at(1);
  ASSERT_EQ(block.kind, model::LayerKind::Transformer);
  const std::int64_t held = stash(embedding, model::Recompute::Full) + (blocks - 1) * stash(block, model::Recompute::Full) +
                            stash(block, model::stash_recompute(model::Recompute::None, true));
  const auto report = simulate(node, m, full).report;
  const trace::DeviceReport& gpu = report.devices.front();
  EXPECT_EQ(gpu.memory.activations, held);
  EXPECT_EQ(gpu.peak_memory_bytes - gpu.memory.weights - gpu.memory.gradients - gpu.memory.optimizer - gpu.memory.reserved,
            held);
}

TEST(WorkingMemory, AnAllGatherContextExchangeHoldsTheWholeSequencesKeysAndValues) {
  // Context 2 under full recomputation, a small vocabulary: the last block's backward is the peak. With
  // the all-gather exchange it also holds the whole sequence's keys and values, gathered again, and
  // their whole-sequence gradients: 2 x 1024 tokens x 4 heads x (64 + 64) x 2 bytes, 2 MiB, above the
  // ring's (p2p) peak. The forward's gathered copy (1 MiB) stays below that moment.
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const model::Model m = gpt(4, 1024, 64);
  const std::string plan =
      "parallelism: { data: 4, context: 2 }\nbatch: { global: 4, micro: 1 }\nrecompute: full\n";
  const std::int64_t key_values = 1024 * 4 * (64 + 64) * 2;
  EXPECT_EQ(peak_of(node, m, plan + "cp_comm_type: all_gather\n") - peak_of(node, m, plan), 2 * key_values);
  EXPECT_EQ(peak_of(node, m, plan + "cp_comm_type: p2p\n"), peak_of(node, m, plan));
}

TEST(WorkingMemory, ASplitBackwardKeepsTheWeightGradientStoreFromIToW) {
  // Stage 0 of a zb-h1 pipeline holds the embedding and two blocks: from I to W it keeps the embedding's
  // output gradient and each block's GEMM inputs and output gradients (16h per token at t = 1, in the
  // model's 2 bytes), whatever the blocks stash beside them.
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const model::Model m = gpt(4, 1024, 64);
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { pipeline: 2, data: 4 }\nbatch: { global: 16, micro: 2 }\nschedule: zb-h1\npartition: [0, 2, 4]\n",
      node, m);
  const CostModel costs = build_cost_model(node, m, p, plan::Layout(p));
  const std::int64_t tokens = 2 * 1024;
  const std::int64_t h = 256;
  const std::int64_t embedding = tokens * h * 2;
  const std::int64_t block = tokens * 16 * h * 2;
  EXPECT_EQ(costs.ranks.at(0).chunks.at(0).stashed_after_input.count(), embedding + 2 * block);
  // Stage 1: two blocks and the head, whose weight GEMM keeps the final norm's output and the logits'
  // gradient.
  const std::int64_t head = tokens * (h + 64) * 2;
  EXPECT_EQ(costs.ranks.at(1).chunks.at(0).stashed_after_input.count(), 2 * block + head);
}

}  // namespace
}  // namespace mpsim::engine
