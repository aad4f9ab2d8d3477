// Recompute modules in the cost model: each chunk's stash loses exactly what the modules drop, and
// its input-gradient pass grows by the modules' matmuls run again and their outputs rewritten.
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/cost_model.h"

namespace mpsim::engine {
namespace {

model::Model recompute_moe_model() {
  return testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 128, heads: 4, ffn: 256, seq_len: 64, vocab: 512,\n"
      "         moe: { experts: 8, top_k: 2, expert_ffn: 64, dense_layers: 1 } }\n");
}

ChunkCost recompute_chunk_of(const model::Model& model, const std::string& recompute) {
  const topology::Cluster node = testing::h100_node(2);
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { tensor: 2 }\nbatch: { global: 2, micro: 2 }\nsequence_parallel: true\n" + recompute, node, model);
  return build_cost_model(node, model, p, plan::Layout(p)).ranks.front().chunks.front();
}

TEST(RecomputeModules, TheStashLosesWhatTheModulesDrop) {
  const model::Model model = recompute_moe_model();
  const ChunkCost none = recompute_chunk_of(model, "recompute: none\n");
  const ChunkCost modules = recompute_chunk_of(model, "recompute: selective\nrecompute_modules: [layernorm, moe_act, mlp]\n");
  // Hand count, micro batch 2 on tensor 2 with sequence parallelism, 2 bytes per element:
  //   layernorm: 2 pre-norm outputs x 64 x 128 per block, 2 blocks, split by t (SP);
  //   moe_act:   64 x top 2 x 64 (the experts' activation output), the MoE block only, split by t;
  //   mlp:       3 x 64 x 256 (gate, up, down input), the dense block only, split by t.
  const std::int64_t b = 2, t = 2, e = 2;
  const std::int64_t layernorm = 2 * 2 * 64 * 128 * e * b / t;
  const std::int64_t moe_act = 64 * 2 * 64 * e * b / t;
  const std::int64_t mlp = 3 * 64 * 256 * e * b / t;
  EXPECT_EQ(none.stashed.count() - modules.stashed.count(), layernorm + moe_act + mlp);
  // The dense MLP's three matmuls run again: the input-gradient pass is longer, the others are not.
  EXPECT_GT(modules.backward_input, none.backward_input);
  EXPECT_EQ(modules.forward, none.forward);
  EXPECT_EQ(modules.backward_weight, none.backward_weight);
}

}  // namespace
}  // namespace mpsim::engine
