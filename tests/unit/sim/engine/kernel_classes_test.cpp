// The cost model's kernel time by class (what `mpsim calibrate` compares with a profiler trace's
// kernels): the classes add up to each chunk's pass times, so the breakdown is the time simulated;
// GEMMs, attention and memory-bound work land in the classes whose factors scale their rates.
#include <gtest/gtest.h>

#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "tests/unit/sim/engine/engine_test_support.h"

namespace mpsim::engine {
namespace {

using testing::h100_node;
using testing::plan_yaml;

model::Model gpt3_xl() { return model::load_model(YamlDocument::load(testing::repo_path("configs/models/gpt3-1.3b.yaml")).root()); }

CostModel class_costs_of(const std::string& plan_text, const topology::Cluster& cluster, const model::Model& model) {
  const plan::Plan plan = plan_yaml(plan_text, cluster, model);
  return build_cost_model(cluster, model, plan, plan::Layout(plan));
}

/// Each chunk's classes add up to its forward and backward (no offloading here), whatever the
/// recomputation: the breakdown cannot drift from the passes the engine runs.
TEST(KernelClasses, AddUpToEachChunksPasses) {
  const topology::Cluster cluster = h100_node(8);
  const model::Model model = gpt3_xl();
  for (const std::string recompute : {"none", "selective", "full"}) {
    for (const std::string attention : {"flash", "standard"}) {
      const CostModel costs = class_costs_of("parallelism: {tensor: 2, pipeline: 2}\nbatch: {global: 16, micro: 1}\n"
                                       "schedule: 1f1b\nrecompute: " + recompute + "\nattention: " + attention + "\n",
                                       cluster, model);
      for (const RankCost& rank : costs.ranks) {
        for (const ChunkCost& chunk : rank.chunks) {
          EXPECT_EQ(chunk.kernels.total().base(), (chunk.forward + chunk.backward).base()) << recompute << " " << attention;
          EXPECT_GT(chunk.kernels[KernelClass::Gemm].base(), 0);
          EXPECT_GT(chunk.kernels[KernelClass::MemoryBound].base(), 0);
          EXPECT_EQ(chunk.kernels.profiled.base(), 0);
        }
      }
    }
  }
}

// FlashAttention's time is attention's; standard attention's score matmuls are 16-bit GEMMs, so the
// attention class is empty and the GEMMs take more.
TEST(KernelClasses, FlashAttentionIsAttentionAndStandardScoresAreGemms) {
  const topology::Cluster cluster = h100_node(8);
  const model::Model model = gpt3_xl();
  const std::string plan = "parallelism: {tensor: 8}\nbatch: {global: 8, micro: 1}\n";
  const ChunkCost flash = class_costs_of(plan + "attention: flash\n", cluster, model).chunk(0, 0);
  const ChunkCost standard = class_costs_of(plan + "attention: standard\n", cluster, model).chunk(0, 0);
  EXPECT_GT(flash.kernels[KernelClass::Attention].base(), 0);
  EXPECT_EQ(standard.kernels[KernelClass::Attention].base(), 0);
  EXPECT_GT(standard.kernels[KernelClass::Gemm].base(), flash.kernels[KernelClass::Gemm].base());
}

// Under FP8 the blocks' GEMMs are FP8 GEMMs and their casts memory-bound; the vocabulary projection
// stays a 16-bit GEMM. A 16-bit plan has no FP8 GEMM.
TEST(KernelClasses, Fp8BlocksAreFp8GemmsAndTheHeadSixteenBit) {
  const topology::Cluster cluster = h100_node(8);
  const model::Model model = gpt3_xl();
  const std::string plan = "parallelism: {tensor: 8}\nbatch: {global: 8, micro: 1}\n";
  const ChunkCost fp8 = class_costs_of(plan + "precision: fp8\n", cluster, model).chunk(0, 0);
  const ChunkCost bf16 = class_costs_of(plan, cluster, model).chunk(0, 0);
  EXPECT_GT(fp8.kernels[KernelClass::Fp8Gemm].base(), 0);
  EXPECT_GT(fp8.kernels[KernelClass::Gemm].base(), 0);
  EXPECT_LT(fp8.kernels[KernelClass::Gemm].base(), bf16.kernels[KernelClass::Gemm].base());
  EXPECT_EQ(bf16.kernels[KernelClass::Fp8Gemm].base(), 0);
  EXPECT_GT(fp8.kernels[KernelClass::MemoryBound].base(), bf16.kernels[KernelClass::MemoryBound].base());
}

// A step on a rank: every microbatch through each chunk, and the optimizer step as memory-bound work.
TEST(KernelClasses, AStepIsTheMicrobatchesPassesAndTheOptimizerStep) {
  const topology::Cluster cluster = h100_node(8);
  const model::Model model = gpt3_xl();
  const CostModel costs = class_costs_of("parallelism: {tensor: 4, pipeline: 2, virtual_stages: 2}\nbatch: {global: 8, micro: 1}\n"
                                   "schedule: interleaved-1f1b\n",
                                   cluster, model);
  const RankCost& rank = costs.ranks.at(1);
  ASSERT_EQ(rank.chunks.size(), 2U);
  const ClassTimes step = step_kernel_times(rank, 8);
  for (const KernelClass c : {KernelClass::Gemm, KernelClass::Attention}) {
    EXPECT_EQ(step[c].base(), 8 * (rank.chunks[0].kernels[c] + rank.chunks[1].kernels[c]).base()) << to_string(c);
  }
  EXPECT_EQ(step[KernelClass::MemoryBound].base(),
            8 * (rank.chunks[0].kernels[KernelClass::MemoryBound] + rank.chunks[1].kernels[KernelClass::MemoryBound]).base() +
                rank.optimizer_step.base());
  EXPECT_GT(rank.optimizer_step.base(), 0);
}

// A layer timed in the model file has no class: its time is `profiled`, counted in no factor's class.
TEST(KernelClasses, ProfiledLayersHaveNoClass) {
  const topology::Cluster cluster = h100_node(1);
  const model::Model model = testing::timed_layers(4, "1 ms", "1 ms", "1 ms");
  const CostModel costs = class_costs_of("batch: {global: 1, micro: 1}\n", cluster, model);
  const ChunkCost& chunk = costs.chunk(0, 0);
  EXPECT_EQ(chunk.kernels.profiled.base(), TimeNs::ms(12).base());
  for (const KernelClass c : kKernelClasses) EXPECT_EQ(chunk.kernels[c].base(), 0) << to_string(c);
}

}  // namespace
}  // namespace mpsim::engine
