// Megatron-Core's recompute_modules: what each module drops from the stash and runs again, worked
// out by hand from the shipped models' shapes (bf16: 2 bytes per element).
#include <cstdint>
#include <string>

#include <gtest/gtest.h>

#include "sim/model/model.h"
#include "sim/model/model_loader.h"

namespace mpsim::model {
namespace {

Model shipped_model(const std::string& stem) {
  return load_model_file(std::string(MPSIM_SOURCE_DIR) + "/configs/models/" + stem + ".yaml");
}

RecomputeModules only(std::initializer_list<RecomputeModule> modules) {
  RecomputeModules out{0};
  for (const RecomputeModule m : modules) out.add(m);
  return out;
}

const Layer& block(const Model& m, int index) { return m.layers.at(static_cast<std::size_t>(index) + 1); }

// gpt-oss-120b: s = 4096, h = 2880, 128 experts of width 2880, top 4.
constexpr std::int64_t kSeq = 4096;
constexpr std::int64_t kHidden = 2880;
constexpr std::int64_t kCopies = kSeq * 4;

TEST(RecomputeModules, LayerNormDropsBothPreNormOutputs) {
  const Model m = shipped_model("gpt-oss-120b");
  // The attention's and the MoE layer's input norms: 2 x s x h elements of 2 bytes, whole on every
  // tensor rank without sequence parallelism, split by t with it.
  const auto ln = only({RecomputeModule::LayerNorm});
  EXPECT_EQ(module_recomputation(block(m, 0), 1, 1, false, ln).dropped.count(), 2 * 2 * kSeq * kHidden);
  EXPECT_EQ(module_recomputation(block(m, 0), 2, 4, false, ln).dropped.count(), 2 * 2 * 2 * kSeq * kHidden);
  EXPECT_EQ(module_recomputation(block(m, 0), 2, 4, true, ln).dropped.count(), 2 * 2 * 2 * kSeq * kHidden / 4);
  EXPECT_EQ(module_recomputation(block(m, 0), 1, 1, false, ln).dropped_gemm_input_elements, 2 * kSeq * kHidden);
  EXPECT_EQ(module_recomputation(block(m, 0), 1, 1, false, ln).matmul_flops.count(), 0);
}

TEST(RecomputeModules, MoeActivationDropsTheExpertsDownProjectionInput) {
  const Model m = shipped_model("gpt-oss-120b");
  const auto act = only({RecomputeModule::MoeActivation});
  // Every routed copy's activation output: s x top_k x expert_ffn, split by the tensor degree.
  EXPECT_EQ(module_recomputation(block(m, 0), 1, 1, false, act).dropped.count(), 2 * kCopies * 2880);
  EXPECT_EQ(module_recomputation(block(m, 0), 1, 2, false, act).dropped.count(), kCopies * 2880);
  // Inside a recomputed MoE layer it is not counted twice.
  const auto both = only({RecomputeModule::MoeActivation, RecomputeModule::Moe});
  EXPECT_EQ(module_recomputation(block(m, 0), 1, 1, false, both).dropped,
            module_recomputation(block(m, 0), 1, 1, false, only({RecomputeModule::Moe})).dropped);
}

TEST(RecomputeModules, MlaUpProjectionDropsQkvAndRunsTheUpProjectionsAgain) {
  const Model m = shipped_model("deepseek-v3");
  // DeepSeek-V3: 128 heads, q/k head 192 (128 + 64 rope), v head 128, ranks 1536 and 512.
  constexpr std::int64_t s = 4096;
  const std::int64_t q_width = 128 * 192;
  const std::int64_t v_width = 128 * 128;
  const auto up = only({RecomputeModule::MlaUpProjection});
  const ModuleRecomputation r = module_recomputation(block(m, 0), 1, 1, false, up);
  EXPECT_EQ(r.dropped.count(), 2 * s * (2 * q_width + v_width));
  EXPECT_EQ(r.dropped_gemm_input_elements, 0);
  const double macs = static_cast<double>(s) * (1536.0 * q_width + 512.0 * 128 * (128 + 128));
  EXPECT_DOUBLE_EQ(r.matmul_flops.count(), 2 * macs);
}

TEST(RecomputeModules, DenseMlpRecomputesItsMatmuls) {
  const Model m = shipped_model("deepseek-v3");  // its first 3 blocks are dense (ffn 18432)
  const auto mlp = only({RecomputeModule::Mlp});
  constexpr std::int64_t s = 4096;
  const ModuleRecomputation r = module_recomputation(block(m, 0), 1, 1, false, mlp);
  EXPECT_EQ(r.dropped.count(), 2 * 3 * s * 18432);                      // gate, up, down input
  EXPECT_DOUBLE_EQ(r.matmul_flops.count(), 2.0 * s * 3 * 7168 * 18432);  // three matmuls
  // A MoE block has no dense MLP to recompute.
  EXPECT_EQ(module_recomputation(block(m, 3), 1, 1, false, mlp).dropped.count(), 0);
}

TEST(RecomputeModules, CoreAttentionIsTheDefaultAndDecidesTheScores) {
  EXPECT_TRUE(RecomputeModules{}.has(RecomputeModule::CoreAttention));
  EXPECT_EQ(score_recompute(Recompute::Selective, RecomputeModules{}), Recompute::Selective);
  EXPECT_EQ(score_recompute(Recompute::Selective, only({RecomputeModule::LayerNorm})), Recompute::None);
  EXPECT_EQ(score_recompute(Recompute::Full, only({RecomputeModule::LayerNorm})), Recompute::Full);
}

}  // namespace
}  // namespace mpsim::model
