// The transformer generator against published parameter counts and FLOP formulas.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <gtest/gtest.h>

#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/model/transformer.h"

namespace mpsim::model {
namespace {

Model shipped(const std::string& stem) {
  return load_model_file(std::string(MPSIM_SOURCE_DIR) + "/configs/models/" + stem + ".yaml");
}

double relative_error(double got, double want) { return std::fabs(got - want) / std::fabs(want); }

/// Megatron's model FLOPs per sample (Narayanan et al. SC21 Eq. 3 without recomputation, i.e. 72 rather than
/// 96; the same expression in Korthikanti et al. 2023): 72·l·s·h²·(1 + s/(6h) + V/(12hl)).
double megatron_training_flops(double l, double s, double h, double v) {
  return 72.0 * l * s * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * h * l));
}

/// Narayanan et al. SC21 Eq. 2: P = 12·l·h²·(1 + 13/(12h) + (V + s)/(12lh)).
double sc21_parameters(double l, double s, double h, double v) {
  return 12.0 * l * h * h * (1.0 + 13.0 / (12.0 * h) + (v + s) / (12.0 * l * h));
}

// Narayanan et al. SC21 Table 1 (rows: params_billion, heads, hidden, layers; every row has seq_len
// 2048 and vocab 51200).
struct Sc21Row {
  const char* file;
  double params_billion;
  std::int64_t heads;
  std::int64_t hidden;
  int layers;
};
constexpr Sc21Row kSc21Rows[] = {
    {"megatron-1.7b", 1.7, 24, 2304, 24},      {"megatron-7.5b", 7.5, 32, 4096, 36},
    {"megatron-39.1b", 39.1, 64, 8192, 48},    {"megatron-145.6b", 145.6, 96, 12288, 80},
    {"megatron-529.6b", 529.6, 128, 20480, 105},
};
constexpr double kSc21SeqLen = 2048;
constexpr double kSc21Vocab = 51200;

TEST(Transformer, Sc21Equation2WithinOnePercent) {
  for (const Sc21Row& row : kSc21Rows) {
    SCOPED_TRACE(row.file);
    const Model m = shipped(row.file);
    ASSERT_TRUE(m.shape.has_value());
    EXPECT_EQ(m.shape->layers, row.layers);
    EXPECT_EQ(m.shape->hidden, row.hidden);
    EXPECT_EQ(m.shape->heads, row.heads);
    EXPECT_EQ(m.shape->seq_len, 2048);
    EXPECT_EQ(m.shape->vocab, 51200);
    const double eq2 = sc21_parameters(row.layers, kSc21SeqLen, static_cast<double>(row.hidden), kSc21Vocab);
    const auto ours = static_cast<double>(m.parameters());
    std::printf("  %-16s parameters %15.0f  Eq. 2 %15.0f  relative %.2e  (Table 1: %.1f B)\n", row.file, ours, eq2,
                relative_error(ours, eq2), row.params_billion);
    EXPECT_LT(relative_error(ours, eq2), 0.01);
    // The only difference is the final LayerNorm (2h), which Eq. 2 leaves out.
    EXPECT_EQ(m.parameters() - static_cast<std::int64_t>(eq2 + 0.5), 2 * row.hidden);
  }
}

// Both sides are sums of exact integers below 2^63 evaluated in double (53-bit mantissa): a few dozen
// roundings of relative size 2^-53 each. 1e-9 leaves ample room for them, while any missing or extra term
// (the smallest one, V/(12hl), is above 1e-3 for every file) would fail by orders of magnitude.
constexpr double kFlopsTolerance = 1e-9;

TEST(Transformer, GptTrainingFlopsAreMegatrons) {
  for (const char* stem : {"gpt3-1.3b", "gpt3-13b", "gpt3-175b", "megatron-1.7b", "megatron-7.5b", "megatron-39.1b",
                           "megatron-145.6b", "megatron-529.6b"}) {
    SCOPED_TRACE(stem);
    const Model m = shipped(stem);
    const TransformerShape& s = *m.shape;
    const double want = megatron_training_flops(s.layers, static_cast<double>(s.seq_len),
                                                static_cast<double>(s.hidden), static_cast<double>(s.vocab));
    EXPECT_LT(relative_error(m.training_flops_per_sample().count(), want), kFlopsTolerance);
  }
}

TEST(Transformer, GptBlockCounts) {
  const std::int64_t h = 2304;
  const std::int64_t s = 2048;
  const Model m = make_transformer(default_shape(Family::Gpt, 3, h, 24, s, 51200), "g", 2);
  ASSERT_EQ(m.layers.size(), 5U);
  const Layer& block = m.layers[1];
  EXPECT_EQ(block.name, "block0");
  EXPECT_EQ(m.layers[3].name, "block2");
  EXPECT_EQ(block.parameters, 12 * h * h + 13 * h);
  EXPECT_DOUBLE_EQ(block.forward_flops.count(), 24.0 * s * h * h + 4.0 * s * s * h);
  EXPECT_EQ(block.output_bytes.count(), s * h * 2);
  EXPECT_EQ(block.tensor_parallel_allreduces_forward, 2);
  EXPECT_EQ(m.layers.front().parameters, 51200 * h + s * h);  // tokens and learned positions
  EXPECT_EQ(m.layers.back().parameters, 2 * h);               // final LayerNorm; logits tied
  EXPECT_DOUBLE_EQ(m.layers.back().forward_flops.count(), 2.0 * s * h * 51200);
  EXPECT_EQ(m.layers.back().output_bytes.count(), 0);
}

TEST(Transformer, BackwardIsTwiceForwardPerBlock) {
  for (const char* stem : {"gpt3-13b", "llama2-70b", "llama3-8b", "t5-3b", "bert-large", "megatron-1.7b"}) {
    SCOPED_TRACE(stem);
    const Model m = shipped(stem);
    int blocks = 0;
    for (const Layer& l : m.layers) {
      if (l.kind != LayerKind::Transformer) continue;
      ++blocks;
      EXPECT_DOUBLE_EQ(l.backward_flops().count(), 2.0 * l.forward_flops.count()) << l.name;
      // Weight gradients redo the weight matmuls only, so the input half carries the score FLOPs.
      EXPECT_GT(l.backward_input_flops.count(), l.backward_weight_flops.count()) << l.name;
    }
    EXPECT_EQ(blocks, m.shape->layers);
  }
}

struct PublishedCount {
  const char* file;
  double approx;       // as the model card rounds it
  std::int64_t exact;  // the released checkpoint's parameter count
};
// Meta's model cards / Hugging Face configs; T5 and BERT as Hugging Face counts them (see the files).
constexpr PublishedCount kPublished[] = {
    {"llama2-7b", 6.74e9, 6'738'415'616},       {"llama2-70b", 68.98e9, 68'976'648'192},
    {"llama3-8b", 8.03e9, 8'030'261'248},       {"llama3-70b", 70.6e9, 70'553'706'496},
    {"llama3-405b", 405.9e9, 405'853'388'800},  {"t5-3b", 2.85e9, 2'851'598'336},
    {"bert-large", 336.2e6, 336'226'108},
    // Mixture of experts (model cards; exact: the checkpoints' tensor sizes, summed).
    {"mixtral-8x7b", 46.7e9, 46'702'792'704},   {"mixtral-8x22b", 141e9, 140'620'634'112},
    {"deepseek-v3", 671e9, 671'026'419'200},    {"qwen3-30b-a3b", 30.5e9, 30'532'122'624},
    {"qwen3-235b-a22b", 235e9, 235'093'634'560}, {"gpt-oss-120b", 116.83e9, 116'829'156'672},
    {"llama31-405b", 405.9e9, 405'853'388'800},
};

TEST(Transformer, PublishedParameterCounts) {
  for (const PublishedCount& p : kPublished) {
    SCOPED_TRACE(p.file);
    const Model m = shipped(p.file);
    std::printf("  %-12s parameters %15lld  (published %.4g)\n", p.file, static_cast<long long>(m.parameters()),
                p.approx);
    EXPECT_LT(relative_error(static_cast<double>(m.parameters()), p.approx), 0.01);
    EXPECT_EQ(m.parameters(), p.exact);
  }
}

TEST(Transformer, MoeBlockRoutesTopKCopiesThroughGroupedExperts) {
  const Model m = shipped("qwen3-30b-a3b");
  const Layer& block = m.layers.at(1);
  const std::int64_t h = 2048, aw = 32 * 128, kv = 4 * 128, s = 4096;
  const std::int64_t experts = 128, k = 8, f = 768;
  // Routed stash: permuted tokens and outputs (2 s k h), the gated experts' intermediates (3 s k f).
  // The attention half of the block (combined 1F1B's slots): the fused QKV and the output projection.
  EXPECT_EQ(block.routed, (RoutedExperts{experts, k, s, h, Bytes::bytes((2 * s * k * h + 3 * s * k * f) * 2), 2}));
  EXPECT_EQ(block.expert_parameters, experts * 3 * h * f);
  // Router + QK-norm + attention + two RMSNorms + experts.
  EXPECT_EQ(block.parameters, h * experts + 2 * 128 + h * (aw + 2 * kv) + aw * h + 2 * h + experts * 3 * h * f);
  // Forward: the weight matmuls (each token's k copies through its experts' three matrices) and the scores.
  const double matmuls = 2.0 * s * (h * (aw + 2 * kv) + aw * h + h * experts) + 2.0 * s * k * 3 * h * f;
  EXPECT_DOUBLE_EQ(block.forward_flops.count(), matmuls + 4.0 * s * s * aw);
  EXPECT_DOUBLE_EQ(block.backward_weight_flops.count(), matmuls);
  // The experts' GEMMs: one grouped kernel per matrix over the 128 experts, s x k rows in all.
  ASSERT_EQ(block.gemms.size(), 5u);  // QKV, output, router, up+gate, down
  EXPECT_EQ(block.gemms[3], (Gemm{s * k, h, 2 * f, TensorSplit::Columns, experts, 2, f}));  // gate and up fused
  EXPECT_EQ(block.gemms[4], (Gemm{s * k, f, h, TensorSplit::Rows, experts}));
}

TEST(Transformer, ActiveParametersCountTheTopKExperts) {
  // Model cards: 22B activated (Qwen3-235B-A22B), 12.9B (Mixtral 8x7B), 37B (DeepSeek-V3, 37.6B with
  // the input embedding); dense models use all of theirs.
  EXPECT_EQ(shipped("qwen3-235b-a22b").active_parameters(), 22'190'763'520);
  EXPECT_EQ(shipped("mixtral-8x7b").active_parameters(), 12'879'925'248);
  EXPECT_EQ(shipped("deepseek-v3").active_parameters(), 37'552'297'472);
  const Model dense = shipped("llama3-8b");
  EXPECT_EQ(dense.active_parameters(), dense.parameters());
}

TEST(Transformer, KimiK2IsDeepSeekV3WithHalfTheHeadsAndMoreExperts) {
  const Model m = shipped("kimi-k2");
  const std::int64_t h = 7168, vocab = 163840, heads = 64, experts = 384, f = 2048, dense_ffn = 18432;
  // Latent attention: q down (h x 1536) + its norm + q up (1536 x heads x 192), kv down (h x (512 + 64))
  // + its norm + kv up (512 x heads x (128 + 128)), output (heads x 128 x h).
  const std::int64_t attention = h * 1536 + 1536 + 1536 * heads * 192 + h * (512 + 64) + 512 +
                                 512 * heads * (128 + 128) + heads * 128 * h;
  const std::int64_t norms = 2 * h;
  const std::int64_t dense_block = attention + norms + 3 * h * dense_ffn;
  const std::int64_t moe_block = attention + norms + (h * experts + experts) + experts * 3 * h * f + 3 * h * f;
  EXPECT_EQ(m.parameters(), vocab * h + dense_block + 60 * moe_block + h + vocab * h);
  // The model card: 1T parameters, 32B activated.
  EXPECT_LT(relative_error(static_cast<double>(m.parameters()), 1e12), 0.03);
  EXPECT_LT(relative_error(static_cast<double>(m.active_parameters()), 32e9), 0.03);
}

TEST(Transformer, MultiTokenPredictionAddsADepthAndItsLogits) {
  // DeepSeek-V3 with its one MTP depth (Megatron-Bridge's recipe: mtp_num_layers 1).
  std::ifstream file(std::string(MPSIM_SOURCE_DIR) + "/configs/models/deepseek-v3.yaml");
  const std::string text{std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
  const Model main = shipped("deepseek-v3");
  const Model mtp = load_model(YamlDocument::parse(text + "  mtp_layers: 1\n", "v3-mtp.yaml").root());
  const std::int64_t h = 7168, s = 4096, vocab = 129280;
  ASSERT_EQ(mtp.layers.size(), main.layers.size() + 1);
  const Layer& last_block = main.layers.at(61);
  const Layer& depth = mtp.layers.at(62);
  EXPECT_EQ(depth.name, "mtp0");
  // enorm, hnorm, eh_proj (2h x h, no bias), a block like the last one, the final norm; and the
  // embedding table's copy on its stage, counted once in the model.
  EXPECT_EQ(depth.parameters, 3 * h + 2 * h * h + last_block.parameters + vocab * h);
  EXPECT_EQ(depth.tied_copy_parameters, vocab * h);
  const std::int64_t unique = mtp.parameters() - main.parameters();
  EXPECT_EQ(unique, 3 * h + 2 * h * h + last_block.parameters);
  // DeepSeek-V3's README_WEIGHTS: "11.5B unique parameters" in the MTP module; README: 685B on Hugging
  // Face with the module (which stores the shared embedding and head once more).
  EXPECT_LT(relative_error(static_cast<double>(unique), 11.5e9), 0.01);
  EXPECT_LT(relative_error(static_cast<double>(mtp.parameters() + 2 * vocab * h), 685e9), 0.001);
  // Its block is an MoE block: dispatch and combine too, after one more gemm (eh_proj) before the MLP.
  model::RoutedExperts expected = last_block.routed;
  ++expected.attention_gemms;
  EXPECT_EQ(depth.routed, expected);
  EXPECT_DOUBLE_EQ(depth.forward_flops.count(), last_block.forward_flops.count() + 2.0 * s * 2 * h * h);
  // The head computes logits for the main sequence and the MTP one.
  const Layer& head = mtp.layers.back();
  EXPECT_EQ(head.gemms.front(), (Gemm{2 * s, h, vocab, TensorSplit::Columns}));
  EXPECT_DOUBLE_EQ(head.forward_flops.count(), 2 * main.layers.back().forward_flops.count());
  EXPECT_EQ(depth.output_bytes.count(), 2 * 2 * s * h);  // main and MTP hidden states travel to the head
}

TEST(Transformer, MoeDenseLayersAndFrequency) {
  const Model v3 = shipped("deepseek-v3");
  for (int i = 0; i < 61; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(v3.layers.at(static_cast<std::size_t>(i) + 1).routed.experts, i < 3 ? 0 : 256);
  }
  const Model every_other = load_model(YamlDocument::parse(
      "model: { family: llama, layers: 5, hidden: 64, heads: 4, ffn: 128, seq_len: 8, vocab: 10,\n"
      "         moe: { experts: 4, top_k: 1, expert_ffn: 32, dense_layers: 1, frequency: 2 } }\n", "m.yaml").root());
  std::vector<bool> moe;
  for (std::size_t i = 1; i + 1 < every_other.layers.size(); ++i) moe.push_back(every_other.layers[i].routed.experts > 0);
  EXPECT_EQ(moe, (std::vector<bool>{false, true, false, true, false}));
}

TEST(Transformer, LatentAttentionHasSeparateQueryKeyAndValueWidths) {
  const Model m = shipped("deepseek-v3");
  const Layer& block = m.layers.at(1);
  ASSERT_EQ(block.attention.size(), 1u);
  const AttentionCore& core = block.attention.front();
  EXPECT_EQ(core.head_dim, 192);  // 128 without rotary + 64 rotary
  EXPECT_EQ(core.values(), 128);
  const std::int64_t h = 7168, heads = 128, s = 4096;
  // q_a, q_a norm, q_b; kv_a (latent + shared rotary key), kv_a norm, kv_b; output.
  const std::int64_t attention = h * 1536 + 1536 + 1536 * heads * 192 + h * (512 + 64) + 512 +
                                 512 * heads * (128 + 128) + heads * 128 * h;
  EXPECT_EQ(block.parameters, attention + 2 * h + 3 * h * 18432);  // + two norms + the dense MLP
  // Selective recomputation replays QK^T (192 wide) and scores x V (128 wide).
  EXPECT_DOUBLE_EQ(recomputed_flops(m, block, Recompute::Selective).count(), 2.0 * s * s * heads * (192 + 128));
}

TEST(Transformer, LlamaBlockIsGatedWithoutBiases) {
  const Model m = shipped("llama3-8b");
  const Layer& block = m.layers.at(1);
  const std::int64_t h = 4096;
  const std::int64_t kv = 1024;  // 8 key/value heads of 128
  const std::int64_t f = 14336;
  const std::int64_t s = 8192;
  EXPECT_EQ(block.parameters, 2 * h * h + 2 * h * kv + 3 * h * f + 2 * h);
  EXPECT_DOUBLE_EQ(block.forward_flops.count(),
                   2.0 * s * (h * (h + 2 * kv) + h * h + 3 * h * f) + 4.0 * static_cast<double>(s) * s * h);
  EXPECT_EQ(m.layers.front().parameters, 128256 * h);             // no position table
  EXPECT_EQ(m.layers.back().parameters, 128256 * h + h);          // untied output + RMSNorm
  EXPECT_EQ(block.stashed.tp_replicated.count(), 4 * 2 * s * h);  // no dropout masks
}

TEST(Transformer, T5HasEncoderAndDecoderStacks) {
  const Model m = shipped("t5-3b");
  ASSERT_EQ(m.layers.size(), 50U);
  EXPECT_EQ(m.layers[1].name, "encoder0");
  EXPECT_EQ(m.layers[24].name, "encoder23");
  EXPECT_EQ(m.layers[25].name, "decoder0");
  EXPECT_EQ(m.layers[48].name, "decoder23");
  const std::int64_t d = 1024;
  const std::int64_t inner = 4096;
  const std::int64_t ff = 16384;
  const std::int64_t s = 512;
  const Layer& enc = m.layers[2];
  const Layer& dec = m.layers[26];
  EXPECT_EQ(enc.parameters, 4 * d * inner + 2 * d * ff + 2 * d);
  EXPECT_EQ(dec.parameters, 8 * d * inner + 2 * d * ff + 3 * d);
  EXPECT_EQ(m.layers[1].parameters, enc.parameters + 32 * 32);  // relative position bias
  EXPECT_EQ(dec.tensor_parallel_allreduces_forward, 3);
  // Decoder: self- and cross-attention over 512 tokens each, so twice the attention cost of the encoder.
  EXPECT_DOUBLE_EQ(enc.forward_flops.count(), 2.0 * s * (4 * d * inner + 2 * d * ff) + 4.0 * s * s * inner);
  EXPECT_DOUBLE_EQ(dec.forward_flops.count(), 2.0 * s * (8 * d * inner + 2 * d * ff) + 8.0 * s * s * inner);
}

TEST(Transformer, DefaultsAndShapeErrors) {
  TransformerShape s = default_shape(Family::Gpt, 2, 64, 4, 32, 100);
  EXPECT_EQ(shape_error(s), "");
  EXPECT_EQ(s.ffn, 256);
  EXPECT_EQ(s.head_dim, 16);
  EXPECT_EQ(s.max_positions, 32);
  s.kv_heads = 3;
  EXPECT_NE(shape_error(s), "");
  EXPECT_NE(shape_error(default_shape(Family::Llama, 2, 64, 4, 32, 100)), "");  // ffn must be given
  TransformerShape t5 = default_shape(Family::T5, 6, 512, 8, 128, 100);
  EXPECT_EQ(t5.layers, 12);
  EXPECT_EQ(t5.encoder_layers, 6);
  EXPECT_EQ(shape_error(t5), "");
  set_positions(s, PositionKind::Rotary);
  EXPECT_EQ(s.max_positions, 0);
}

}  // namespace
}  // namespace mpsim::model
