// Stashed activations and the Model value type.
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "sim/model/model.h"
#include "sim/model/transformer.h"

namespace mpsim::model {
namespace {

// The 22B model of Korthikanti et al. 2023 (MLSys, Tables 3-5): a = 64 heads, h = 6144,
// s = 2048, trained with micro batch b = 4 on t = 8 tensor-parallel GPUs.
constexpr std::int64_t kS = 2048;
constexpr std::int64_t kB = 4;
constexpr std::int64_t kH = 6144;
constexpr std::int64_t kA = 64;
constexpr std::int64_t kT = 8;
constexpr std::int64_t kV = 51200;

Model gpt_22b() {
  return make_transformer(default_shape(Family::Gpt, 48, kH, kA, kS, kV), "gpt-22b", 2);
}

Bytes stashed(const Layer& l, int tensor, bool sp, Recompute r) {
  return stashed_activation_bytes(l, static_cast<int>(kB), tensor, sp, r);
}

TEST(Activations, BlockFootprintIsKorthikantiSection4) {
  const Model m = gpt_22b();
  const Layer& block = m.layers.at(1);
  ASSERT_EQ(block.kind, LayerKind::Transformer);
  // Per sample (b = 1): 10sh replicated, 24sh sharded, 5as² scores, 2sh input.
  EXPECT_EQ(block.stashed.tp_replicated.count(), 10 * kS * kH);
  EXPECT_EQ(block.stashed.tp_sharded.count(), 24 * kS * kH);
  EXPECT_EQ(block.stashed.attention_scores.count(), 5 * kA * kS * kS);
  EXPECT_EQ(block.stashed.layer_input.count(), 2 * kS * kH);
}

TEST(Activations, KorthikantiTable2ForEveryCombination) {
  const Model m = gpt_22b();
  const Layer& block = m.layers.at(1);
  const std::int64_t sbh = kS * kB * kH;      // 50,331,648
  const std::int64_t as2b = kA * kS * kS * kB;  // 1,073,741,824

  // No parallelism: sbh(34 + 5as/h).
  EXPECT_EQ(stashed(block, 1, false, Recompute::None).count(), 34 * sbh + 5 * as2b);
  EXPECT_EQ(stashed(block, 1, false, Recompute::None).count(), 7'079'985'152);
  // Tensor parallel: sbh(10 + 24/t + 5as/(ht)).
  EXPECT_EQ(stashed(block, kT, false, Recompute::None).count(), 10 * sbh + 24 * sbh / kT + 5 * as2b / kT);
  EXPECT_EQ(stashed(block, kT, false, Recompute::None).count(), 1'325'400'064);
  // Tensor + sequence parallel: sbh(34/t + 5as/(ht)).
  EXPECT_EQ(stashed(block, kT, true, Recompute::None).count(), 34 * sbh / kT + 5 * as2b / kT);
  EXPECT_EQ(stashed(block, kT, true, Recompute::None).count(), 884'998'144);
  // Tensor parallel + selective recomputation: sbh(10 + 24/t).
  EXPECT_EQ(stashed(block, kT, false, Recompute::Selective).count(), 10 * sbh + 24 * sbh / kT);
  EXPECT_EQ(stashed(block, kT, false, Recompute::Selective).count(), 654'311'424);
  // Tensor + sequence parallel + selective: sbh(34/t).
  EXPECT_EQ(stashed(block, kT, true, Recompute::Selective).count(), 34 * sbh / kT);
  EXPECT_EQ(stashed(block, kT, true, Recompute::Selective).count(), 213'909'504);
  // Selective without parallelism: 34sbh.
  EXPECT_EQ(stashed(block, 1, false, Recompute::Selective).count(), 34 * sbh);
  // Full recomputation: 2sbh, whatever the tensor parallelism ...
  EXPECT_EQ(stashed(block, 1, false, Recompute::Full).count(), 2 * sbh);
  EXPECT_EQ(stashed(block, kT, false, Recompute::Full).count(), 2 * sbh);
  // ... and split by t with sequence parallelism, where the stored input is sequence-sharded.
  EXPECT_EQ(stashed(block, kT, true, Recompute::Full).count(), 2 * sbh / kT);
}

TEST(Activations, OutputHeadAndEmbeddingFollowSection43) {
  const Model m = gpt_22b();
  const Layer& embedding = m.layers.front();
  const Layer& head = m.layers.back();
  const std::int64_t sbh = kS * kB * kH;
  // Embedding dropout mask sbh (/t with SP); output layer 4sbh(1 + v/h) (/t with SP; the logits always /t).
  EXPECT_EQ(stashed(embedding, kT, true, Recompute::None).count(), sbh / kT);
  EXPECT_EQ(stashed(embedding, kT, false, Recompute::None).count(), sbh);
  EXPECT_EQ(stashed(head, kT, true, Recompute::None).count(), 4 * sbh / kT + 4 * kS * kB * kV / kT);
  EXPECT_EQ(stashed(head, kT, false, Recompute::None).count(), 4 * sbh + 4 * kS * kB * kV / kT);
  // Neither is recomputed: full recomputation keeps their whole footprint.
  EXPECT_EQ(stashed(head, kT, true, Recompute::Full), stashed(head, kT, true, Recompute::Selective));
  EXPECT_EQ(stashed(embedding, 1, false, Recompute::Full), stashed(embedding, 1, false, Recompute::None));
}

TEST(Activations, ASplitBackwardKeepsEachGemmsInputAndOutputGradient) {
  // A GPT block's GEMMs: QKV [h x 3h] and fc1 [h x 4h] by columns, the projection [h x h] and fc2
  // [4h x h] by rows. Inputs as the weight GEMMs read them: h, h/t, h, 4h/t per token; output
  // gradients: 3h/t, h, 4h/t, h.
  const Model m = gpt_22b();
  const Layer& block = m.layers.at(1);
  const std::int64_t sbh = kS * kB * kH;
  const WeightGradientStore one = weight_gradient_store(block, static_cast<int>(kB), 1);
  EXPECT_EQ(one.input_elements, 7 * sbh);
  EXPECT_EQ(one.output_gradient_elements, 9 * sbh);
  // In 16-bit that is 32sbh: Korthikanti's 34sbh stash less the norms' inputs (4sbh), the GELU's
  // input (8sbh), Q and K (4sbh), V (2sbh) and the dropout masks (2sbh), plus the four output
  // gradients (18sbh).
  EXPECT_EQ(2 * (one.input_elements + one.output_gradient_elements),
            stashed(block, 1, false, Recompute::Selective).count() - 2 * sbh);
  const WeightGradientStore split = weight_gradient_store(block, static_cast<int>(kB), static_cast<int>(kT));
  EXPECT_EQ(split.input_elements, 2 * sbh + 5 * sbh / kT);
  EXPECT_EQ(split.output_gradient_elements, 2 * sbh + 7 * sbh / kT);
}

TEST(Activations, SplitTermsRoundUp) {
  Layer l;
  l.kind = LayerKind::Generic;
  l.stashed.tp_sharded = Bytes::bytes(10);
  l.stashed.attention_scores = Bytes::bytes(1);
  EXPECT_EQ(stashed_activation_bytes(l, 1, 3, false, Recompute::None).count(), 4 + 1);
  EXPECT_EQ(stashed_activation_bytes(l, 2, 3, false, Recompute::Selective).count(), 7);
}

TEST(Activations, WithoutDropoutNoMasksAreStored) {
  TransformerShape s = default_shape(Family::Gpt, 2, kH, kA, kS, kV);
  s.dropout = false;
  const Model m = make_transformer(s, "no-dropout", 2);
  const Layer& block = m.layers.at(1);
  // Two 1-byte masks of sh go, and the scores keep only the softmax output (2as²).
  EXPECT_EQ(block.stashed.tp_replicated.count(), 8 * kS * kH);
  EXPECT_EQ(block.stashed.tp_sharded.count(), 24 * kS * kH);
  EXPECT_EQ(block.stashed.attention_scores.count(), 2 * kA * kS * kS);
}

TEST(ModelValue, SumsOverLayers) {
  Model m;
  m.dtype_bytes = 4;
  Layer a;
  a.parameters = 10;
  a.forward_flops = Flops::flop(100);
  a.backward_input_flops = Flops::flop(100);
  a.backward_weight_flops = Flops::flop(50);
  Layer b = a;
  b.parameters = 5;
  m.layers = {a, b};
  EXPECT_EQ(m.parameters(), 15);
  EXPECT_EQ(m.parameter_bytes().count(), 60);
  EXPECT_DOUBLE_EQ(m.training_flops_per_sample().count(), 500.0);
  EXPECT_DOUBLE_EQ(a.backward_flops().count(), 150.0);
}

TEST(ModelValue, IdenticalRunsIgnoreNamesOnly) {
  const Model m = make_transformer(default_shape(Family::Gpt, 4, 256, 4, 128, 1000), "tiny", 2);
  const std::vector<LayerRun> runs = identical_runs(m.layers);
  ASSERT_EQ(runs.size(), 3U);
  EXPECT_EQ(runs[0].first, 0U);
  EXPECT_EQ(runs[0].count, 1U);
  EXPECT_EQ(runs[1].first, 1U);
  EXPECT_EQ(runs[1].count, 4U);
  EXPECT_EQ(runs[2].first, 5U);
  EXPECT_EQ(runs[2].count, 1U);

  std::vector<Layer> layers = m.layers;
  layers[2].forward_time = TimeNs::ms(1);
  EXPECT_EQ(identical_runs(layers).size(), 5U);
  EXPECT_TRUE(identical_runs({}).empty());
}

TEST(ModelValue, EnumWords) {
  EXPECT_EQ(to_string(LayerKind::Embedding), "embedding");
  EXPECT_EQ(to_string(LayerKind::Transformer), "transformer");
  EXPECT_EQ(to_string(LayerKind::OutputHead), "output_head");
  EXPECT_EQ(to_string(LayerKind::Generic), "generic");
  EXPECT_EQ(to_string(Recompute::None), "none");
  EXPECT_EQ(to_string(Recompute::Selective), "selective");
  EXPECT_EQ(to_string(Recompute::Full), "full");
  EXPECT_EQ(to_string(Family::Llama), "llama");
}

}  // namespace
}  // namespace mpsim::model
