// TorchTitan's per-op selective checkpointing (model::op_checkpoint) and full recomputation's choice of
// layers (model::full_recompute_place), against closed forms worked out by hand from Llama 3 8B's shape
// (bf16: 2 bytes per element) and an enumeration of every place.
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "sim/model/model.h"
#include "sim/model/model_loader.h"

namespace mpsim::model {
namespace {

Model llama() { return load_model_file(std::string(MPSIM_SOURCE_DIR) + "/configs/models/llama3-8b.yaml"); }

// Llama 3 8B: s = 8192, h = 4096, 32 heads of 128, 8 key/value heads (kv width 1024), ffn 14336.
constexpr std::int64_t kLlamaSeq = 8192;
constexpr std::int64_t kLlamaHidden = 4096;
constexpr std::int64_t kLlamaKv = 1024;
constexpr std::int64_t kLlamaFfn = 14336;
constexpr std::int64_t kLlamaHeads = 32;

TEST(OpCheckpoint, TheFusedGemmsCountAsTorchTitansSevenMatmuls) {
  const Model m = llama();
  const Layer& block = m.layers.at(1);
  ASSERT_EQ(block.gemms.size(), 4u);
  // wq, wk, wv; wo; w1, w3; w2.
  EXPECT_EQ(block.gemms[0].matmuls, 3);
  EXPECT_EQ(block.gemms[0].matmul_out(0), kLlamaHidden);
  EXPECT_EQ(block.gemms[0].matmul_out(1), kLlamaKv);
  EXPECT_EQ(block.gemms[0].matmul_out(2), kLlamaKv);
  EXPECT_EQ(block.gemms[1].matmuls, 1);
  EXPECT_EQ(block.gemms[2].matmuls, 2);
  EXPECT_EQ(block.gemms[2].matmul_out(0), kLlamaFfn);
  EXPECT_EQ(block.gemms[2].matmul_out(1), kLlamaFfn);
  EXPECT_EQ(block.gemms[3].matmuls, 1);
}

TEST(OpCheckpoint, KeepsTheOddMatmulsAndTheAttentionOutputOfALlamaBlock) {
  const Model m = llama();
  const Layer& block = m.layers.at(1);
  // The whole stash under FlashAttention (no dropout): four s x h tensors (the two norms' inputs and
  // outputs), Q and the attention output (s x h each), K and V (s x kv each), gate, up and the down
  // projection's input (s x ffn each).
  const std::int64_t whole = 2 * (4 * kLlamaSeq * kLlamaHidden + 2 * kLlamaSeq * kLlamaHidden + 2 * kLlamaSeq * kLlamaKv + 3 * kLlamaSeq * kLlamaFfn);
  ASSERT_EQ(stashed_activation_bytes(block, 1, 1, false, Recompute::Selective).count(), whole);
  const OpCheckpoint op = op_checkpoint(block, 1, 1, false, 2, Bytes::bytes(whole));
  // Saved: the block's input, wq's (1st), wv's (3rd), w1's (5th) and w2's (7th) outputs, the attention
  // output and its fp32 log-sum-exp per query and head.
  const std::int64_t kept = 2 * (kLlamaSeq * kLlamaHidden + kLlamaSeq * kLlamaHidden + kLlamaSeq * kLlamaKv + kLlamaSeq * kLlamaFfn + kLlamaSeq * kLlamaHidden + kLlamaSeq * kLlamaHidden) + 4 * kLlamaSeq * kLlamaHeads;
  EXPECT_EQ(op.kept.count(), kept);
  // Rebuilt: the stash less the input, Q, V, gate and the attention output it shares with what is saved.
  EXPECT_EQ(op.rebuilt.count(), whole - 2 * (kLlamaSeq * kLlamaHidden + kLlamaSeq * kLlamaHidden + kLlamaSeq * kLlamaKv + kLlamaSeq * kLlamaFfn + kLlamaSeq * kLlamaHidden));
  // Replayed: wk (2nd), wo (4th) and w3 (6th), 2 FLOPs per multiply-add.
  EXPECT_DOUBLE_EQ(op.matmul_flops.count(), 2.0 * kLlamaSeq * (kLlamaHidden * kLlamaKv + kLlamaHidden * kLlamaHidden + kLlamaHidden * kLlamaFfn));
  // Per sample, as the report counts it.
  EXPECT_DOUBLE_EQ(recomputed_flops(m, block, Recompute::Op).count(), op.matmul_flops.count());
}

TEST(OpCheckpoint, UnderTensorParallelismTheRowParallelOutputsAreWholeAndTheirReduceScattersSaved) {
  const Model m = llama();
  const Layer& block = m.layers.at(1);
  constexpr std::int64_t t = 4;
  const OpCheckpoint op = op_checkpoint(block, 2, t, true, 2, Bytes{});
  // Two sequences. The input split by t (sequence parallelism); wq, wv and w1 split by columns; w2's
  // partial sum whole; the reduce-scatters after wo and w2 split by t; the attention's heads split.
  const std::int64_t b = 2;
  const std::int64_t kept = 2 * b * (kLlamaSeq * kLlamaHidden / t + kLlamaSeq * kLlamaHidden / t + kLlamaSeq * kLlamaKv / t + kLlamaSeq * kLlamaFfn / t + kLlamaSeq * kLlamaHidden + 2 * kLlamaSeq * kLlamaHidden / t +
                                     kLlamaSeq * kLlamaHidden / t) +
                            4 * b * kLlamaSeq * kLlamaHeads / t;
  EXPECT_EQ(op.kept.count(), kept);
  EXPECT_DOUBLE_EQ(op.matmul_flops.count(), 2.0 * b * kLlamaSeq * (kLlamaHidden * kLlamaKv + kLlamaHidden * kLlamaHidden + kLlamaHidden * kLlamaFfn) / t);
  EXPECT_EQ(op.rebuilt.count(), 0);  // nothing beyond an empty stash
}

TEST(FullRecomputePlace, EveryPlaceOfEveryMethod) {
  // Uniform: groups of n from the chunk's first layer, the last one shorter.
  for (int n = 1; n <= 5; ++n) {
    for (int layers = 1; layers <= 7; ++layers) {
      int kept_inputs = 0, closed = 0;
      for (int i = 0; i < layers; ++i) {
        const FullRecomputePlace p = full_recompute_place(RecomputeMethod::Uniform, n, i, layers, 100 + i);
        EXPECT_TRUE(p.checkpointed);
        EXPECT_EQ(p.keeps_input, i % n == 0) << n << " " << layers << " " << i;
        EXPECT_EQ(p.closes_group, i % n == n - 1 || i == layers - 1) << n << " " << layers << " " << i;
        kept_inputs += p.keeps_input ? 1 : 0;
        closed += p.closes_group ? 1 : 0;
      }
      EXPECT_EQ(kept_inputs, (layers + n - 1) / n);
      EXPECT_EQ(closed, kept_inputs);
      // Block: the chunk's first n layers, each alone.
      for (int i = 0; i < layers; ++i) {
        const FullRecomputePlace p = full_recompute_place(RecomputeMethod::Block, n, i, layers, 0);
        EXPECT_EQ(p, (FullRecomputePlace{i < n, true, true}));
      }
    }
    // Every: the rank's k-th layer (k from 1) when k % n == 0, wherever it sits in its chunk.
    for (int k = 1; k <= 12; ++k) {
      const FullRecomputePlace p = full_recompute_place(RecomputeMethod::Every, n, 0, 1, k - 1);
      EXPECT_EQ(p, (FullRecomputePlace{k % n == 0, true, true})) << n << " " << k;
    }
  }
}

}  // namespace
}  // namespace mpsim::model
