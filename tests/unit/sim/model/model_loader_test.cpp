// Model files: the shipped ones, both forms of docs/formats/model.md, and located errors.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <string>

#include <gtest/gtest.h>

#include "sim/core/input_error.h"
#include "sim/model/model_loader.h"

namespace mpsim::model {
namespace {

namespace fs = std::filesystem;

const fs::path kModels = fs::path(MPSIM_SOURCE_DIR) / "configs" / "models";

/// A fresh folder for one test's files, removed afterwards.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (fs::temp_directory_path() / "mpsim-model-test-XXXXXX").string();
    if (mkdtemp(pattern.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
    path_ = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  [[nodiscard]] fs::path write(const std::string& name, const std::string& text) const {
    const fs::path p = path_ / name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  fs::path path_;
};

Model parse_text(const std::string& text) {
  const TempDir dir;
  return load_model_file(dir.write("model.yaml", text));
}

TEST(ModelLoader, EveryShippedModelLoads) {
  const std::set<std::string> required{
      "gpt3-1.3b",  "gpt3-13b",    "gpt3-175b",   "llama2-7b",      "llama2-70b",     "llama3-8b",
      "llama3-70b", "llama3-405b", "t5-3b",       "bert-large",     "mnist-cnn",      "megatron-1.7b",
      "megatron-7.5b", "megatron-39.1b", "megatron-145.6b", "megatron-529.6b", "mixtral-8x7b", "mixtral-8x22b",
      "deepseek-v3", "qwen3-30b-a3b", "qwen3-235b-a22b", "gpt-oss-120b", "llama31-405b", "kimi-k2"};
  std::set<std::string> found;
  for (const auto& entry : fs::directory_iterator(kModels)) {
    if (entry.path().extension() != ".yaml") continue;
    SCOPED_TRACE(entry.path().string());
    const Model m = load_model_file(entry.path());
    found.insert(entry.path().stem().string());
    EXPECT_EQ(m.name, entry.path().stem().string());
    EXPECT_FALSE(m.layers.empty());
    EXPECT_GT(m.parameters(), 0);
    EXPECT_GT(m.training_flops_per_sample().count(), 0.0);
  }
  for (const std::string& name : required) EXPECT_TRUE(found.count(name) == 1) << name;
}

TEST(ModelLoader, MnistCnnIsThePytorchExample) {
  const Model m = load_model_file(kModels / "mnist-cnn.yaml");
  EXPECT_EQ(m.parameters(), 1'199'882);
  EXPECT_EQ(m.dtype_bytes, 4);
  EXPECT_EQ(m.family, "cnn");
  EXPECT_FALSE(m.shape.has_value());
  ASSERT_EQ(m.layers.size(), 5U);
  const double forward = 389'376.0 + 21'233'664.0 + 2'359'296.0 + 2'560.0;
  // Backward is twice forward, less conv1's input gradient.
  EXPECT_DOUBLE_EQ(m.training_flops_per_sample().count(), 3 * forward - 389'376.0);
  EXPECT_DOUBLE_EQ(m.layers[1].backward_input_flops.count(), 21'233'664.0);  // backward_flops split 50/50
  EXPECT_EQ(m.layers[2].stashed.layer_input.count(), 147'456);  // the previous layer's output
  EXPECT_EQ(stashed_activation_bytes(m.layers[2], 1, 1, false, Recompute::None).count(), 230'400);
  EXPECT_EQ(stashed_activation_bytes(m.layers[2], 2, 1, false, Recompute::Full).count(), 2 * 147'456);
}

TEST(ModelLoader, HyperparameterShortForm) {
  // Exactly the example of docs/formats/model.md, "From hyperparameters".
  const Model m =
      parse_text("model: { family: gpt, layers: 24, hidden: 2304, heads: 24, seq_len: 2048, vocab: 51200 }\n");
  const Model shipped = load_model_file(kModels / "megatron-1.7b.yaml");
  EXPECT_EQ(m.name, "model");  // the file's stem
  EXPECT_EQ(m.family, "gpt");
  EXPECT_EQ(m.dtype_bytes, 2);
  EXPECT_EQ(m.parameters(), shipped.parameters());
  EXPECT_EQ(m.layers.size(), 26U);

  const Model named = parse_text(
      "model: { name: small, family: llama, layers: 2, hidden: 256, heads: 8, kv_heads: 2, ffn: 688,\n"
      "         seq_len: 128, vocab: 1000, dtype: fp32, tied_embeddings: true }\n");
  EXPECT_EQ(named.name, "small");
  EXPECT_EQ(named.dtype_bytes, 4);
  EXPECT_EQ(named.shape->kv_heads, 2);
  EXPECT_TRUE(named.shape->tied_embeddings);
  EXPECT_EQ(named.layers.back().parameters, 256);  // RMSNorm only: the output matrix is tied

  const Model t5 = parse_text("model: { family: t5, layers: 2, hidden: 64, heads: 4, seq_len: 32, vocab: 100, "
                              "decoder_seq_len: 8 }\n");
  EXPECT_EQ(t5.shape->encoder_layers, 2);
  EXPECT_EQ(t5.shape->decoder_layers, 2);
  EXPECT_EQ(t5.layers.size(), 6U);
  EXPECT_EQ(t5.layers.back().output_bytes.count(), 0);
  EXPECT_EQ(t5.layers[3].output_bytes.count(), 8 * 64 * 2);
}

TEST(ModelLoader, ExplicitLayerListWithTimes) {
  const Model m = parse_text(R"(model:
  layers:
    - { name: block0, forward_time: "18.5 ms", backward_input_time: "18.1 ms",
        backward_weight_time: "9.3 ms", params: 0, activation_bytes: 0, output_bytes: 0 }
    - { name: block1, forward_time: "10 ms", backward_time: "20.000001 ms", params: 7,
        forward_flops: "1.5 TFLOP", backward_flops: 3e12, backward_weight_flops: "1 TFLOP",
        activation_bytes: "1 MiB", output_bytes: "256 KiB", kind: transformer }
    - { name: mid, repeat: 3, forward_flops: 10, backward_time: "4 ms", backward_weight_time: "1 ms",
        activation_bytes: "1 MiB", output_bytes: "512 KiB" }
    - { forward_time: "1 us" }
)");
  EXPECT_EQ(m.family, "custom");
  EXPECT_FALSE(m.shape.has_value());
  ASSERT_EQ(m.layers.size(), 6U);
  const Layer& b0 = m.layers[0];
  EXPECT_EQ(b0.name, "block0");
  EXPECT_EQ(b0.kind, LayerKind::Generic);
  EXPECT_EQ(b0.forward_time, TimeNs::us(18'500));
  EXPECT_EQ(b0.backward_input_time, TimeNs::us(18'100));
  EXPECT_EQ(b0.backward_weight_time, TimeNs::us(9'300));
  EXPECT_EQ(b0.forward_flops.count(), 0.0);
  EXPECT_EQ(b0.tensor_parallel_allreduces_forward, 0);

  const Layer& b1 = m.layers[1];
  EXPECT_EQ(b1.kind, LayerKind::Transformer);
  EXPECT_EQ(b1.tensor_parallel_allreduces_forward, 2);
  EXPECT_EQ(b1.parameters, 7);
  EXPECT_EQ(b1.backward_input_time, TimeNs::ns(10'000'001));  // the odd nanosecond goes to the input half
  EXPECT_EQ(b1.backward_weight_time, TimeNs::ns(10'000'000));
  EXPECT_DOUBLE_EQ(b1.forward_flops.count(), 1.5e12);
  EXPECT_DOUBLE_EQ(b1.backward_input_flops.count(), 2e12);
  EXPECT_DOUBLE_EQ(b1.backward_weight_flops.count(), 1e12);
  EXPECT_EQ(b1.stashed.tp_replicated.count(), 1 << 20);
  EXPECT_EQ(b1.stashed.layer_input.count(), 0);  // block0's output
  EXPECT_EQ(b1.output_bytes.count(), 256 << 10);

  EXPECT_EQ(m.layers[2].name, "mid0");
  EXPECT_EQ(m.layers[4].name, "mid2");
  EXPECT_EQ(m.layers[2].backward_input_time, TimeNs::ms(3));
  EXPECT_EQ(m.layers[2].stashed.layer_input.count(), 256 << 10);
  EXPECT_EQ(m.layers[3].stashed.layer_input.count(), 512 << 10);
  EXPECT_EQ(m.layers[5].name, "layer5");
  EXPECT_FALSE(m.layers[5].backward_input_time.has_value());  // falls back to FLOPs
}

/// Loads `text` from a file named bad.yaml and returns the error's message, or "" when it loads.
std::string error_of(const std::string& text) {
  const TempDir dir;
  const fs::path file = dir.write("bad.yaml", text);
  try {
    (void)load_model_file(file);
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, file.string());
    return e.what();
  }
  return "";
}

void expect_error(const std::string& text, const std::string& location, const std::string& field,
                  const std::string& words) {
  const std::string message = error_of(text);
  SCOPED_TRACE(message);
  EXPECT_NE(message.find("bad.yaml:" + location), std::string::npos) << "location " << location;
  EXPECT_NE(message.find("(field '" + field + "')"), std::string::npos) << "field " << field;
  EXPECT_NE(message.find(words), std::string::npos) << "words " << words;
}

TEST(ModelLoader, MalformedInputsAreLocated) {
  const std::string gpt = "model:\n  family: gpt\n  layers: 24\n  hidden: 2304\n  heads: 24\n"
                          "  seq_len: 2048\n  vocab: 51200\n";
  ASSERT_EQ(error_of(gpt), "");
  expect_error(gpt + "  hiden: 12\n", "8:3", "model.hiden", "unknown field 'hiden'");
  expect_error("model:\n  family: gpt\n  layers: 24\n  hidden: 2300\n  heads: 24\n  seq_len: 2048\n  vocab: 51200\n",
               "5:10", "model.heads", "heads (24) must divide hidden (2300)");
  expect_error("model:\n  family: gpt\n  layers: -3\n  hidden: 2304\n  heads: 24\n  seq_len: 2048\n  vocab: 51200\n",
               "3:11", "model.layers", "must be at least 1");
  expect_error("model:\n  family: gpt\n  layers: 0\n  hidden: 2304\n  heads: 24\n  seq_len: 2048\n  vocab: 51200\n",
               "3:11", "model.layers", "must be at least 1");
  expect_error(gpt + "  kv_heads: 5\n", "8:13", "model.kv_heads", "kv_heads (5) must divide heads (24)");
  expect_error("model:\n  family: gpt4\n  layers: 2\n", "2:11", "model.family", "unknown value 'gpt4'");
  expect_error(gpt + "  dtype: int8\n", "8:10", "model.dtype", "unknown value 'int8'");
  expect_error("model:\n  family: llama\n  layers: 2\n  hidden: 64\n  heads: 4\n  seq_len: 8\n  vocab: 10\n", "2:3",
               "model.ffn", "needs ffn");
  expect_error(gpt + "  encoder_layers: 2\n", "8:19", "model.encoder_layers", "only family t5");
  expect_error("model:\n  layers: []\n", "2:11", "model.layers", "at least one layer");
  expect_error("model:\n  layers:\n    - { name: a, forward_time: \"18.5 parsecs\" }\n", "3:32",
               "model.layers[0].forward_time", "unknown unit 'parsecs'");
  expect_error("model:\n  layers:\n    - { name: a, forward_time: \"18.5\" }\n", "3:32", "model.layers[0].forward_time",
               "needs a unit");
  expect_error("model:\n  layers:\n    - { name: a, activation_bytes: \"-4 GiB\" }\n", "3:36",
               "model.layers[0].activation_bytes", "must not be negative");
  expect_error("model:\n  layers:\n    - { name: a, params: -1 }\n", "3:26", "model.layers[0].params",
               "must be at least 0");
  expect_error("model:\n  layers:\n    - { name: a, forward_flop: 3 }\n", "3:18", "model.layers[0].forward_flop",
               "unknown field 'forward_flop'");
  expect_error("model:\n  layers:\n    - { name: a, backward_flops: 10, backward_input_flops: 4,\n"
               "        backward_weight_flops: 5 }\n",
               "3:34", "model.layers[0].backward_flops", "backward_input_flops + backward_weight_flops");
  expect_error("model:\n  layers:\n    - { name: a, backward_time: \"1 ms\", backward_input_time: \"2 ms\" }\n",
               "3:62", "model.layers[0].backward_input_time", "exceeds backward_time");
  expect_error("model:\n  layers:\n    - { name: a }\n    - { name: a }\n", "4:15", "model.layers[1].name",
               "already used by model.layers[0]");
  expect_error("model:\n  layers:\n    - { name: a, kind: conv }\n", "3:24", "model.layers[0].kind",
               "unknown value 'conv'");
  const std::string llama = "model:\n  family: llama\n  layers: 4\n  hidden: 64\n  heads: 4\n  ffn: 128\n"
                            "  seq_len: 8\n  vocab: 10\n";
  ASSERT_EQ(error_of(llama + "  moe: { experts: 8, top_k: 2, expert_ffn: 32 }\n"), "");
  expect_error(llama + "  moe: { experts: 8, top_k: 9, expert_ffn: 32 }\n", "9:29", "model.moe.top_k",
               "top_k (9) exceeds the experts (8)");
  expect_error(llama + "  moe: { experts: 8, top_k: 2 }\n", "9:8", "model.moe.expert_ffn", "missing");
  expect_error(llama + "  moe: { experts: 8, top_k: 2, expert_ffn: 32, dense_layers: 4 }\n", "9:62",
               "model.moe.dense_layers", "at most 3");
  expect_error(llama + "  moe: { experts: 8, top_k: 2, expert_ffn: 32, router: yes }\n", "9:48",
               "model.moe.router", "unknown field 'router'");
  const std::string mla = "  mla: { kv_lora_rank: 16, qk_nope_head_dim: 8, qk_rope_head_dim: 8, v_head_dim: 16 }\n";
  ASSERT_EQ(error_of(llama + mla), "");
  expect_error(llama + "  kv_heads: 2\n" + mla, "9:13", "model.kv_heads", "with mla");
  expect_error(llama + "  mla: { kv_lora_rank: 16, qk_nope_head_dim: 0, qk_rope_head_dim: 0, v_head_dim: 16 }\n",
               "9:8", "model.mla", "must be positive");
  ASSERT_EQ(error_of(llama + "  mtp_layers: 1\n"), "");
  expect_error(llama + "  mtp_layers: 17\n", "9:15", "model.mtp_layers", "at most 16");
  expect_error("model:\n  family: bert\n  layers: 2\n  hidden: 64\n  heads: 4\n  seq_len: 8\n  vocab: 10\n"
               "  mtp_layers: 1\n",
               "8:15", "model.mtp_layers", "decoder-only families");
  expect_error("modle:\n  family: gpt\n", "1:1", "modle", "unknown field 'modle'");
  expect_error("name: x\n", "1:1", "name", "unknown field");
}

// Launch exports write both (Megatron's defaults would train another Llama 3 or Qwen3); the simulator
// itself reads neither.
TEST(ModelLoader, RotaryBaseAndNormEpsilon) {
  const std::string llama = "model:\n  family: llama\n  layers: 4\n  hidden: 64\n  heads: 4\n  ffn: 128\n"
                            "  seq_len: 8\n  vocab: 10\n";
  const Model plain = parse_text(llama);
  EXPECT_EQ(plain.shape->rotary_base, 10'000);
  EXPECT_EQ(plain.shape->norm_epsilon, 1e-5);
  const Model given = parse_text(llama + "  rotary_base: 500000\n  norm_epsilon: 1.0e-6\n");
  EXPECT_EQ(given.shape->rotary_base, 500'000);
  EXPECT_EQ(given.shape->norm_epsilon, 1e-6);
  const std::string gpt = "model:\n  family: gpt\n  layers: 2\n  hidden: 64\n  heads: 4\n  seq_len: 8\n  vocab: 10\n";
  EXPECT_EQ(parse_text(gpt).shape->rotary_base, 0);
  EXPECT_EQ(parse_text(gpt + "  positions: rotary\n").shape->rotary_base, 10'000);
  expect_error(gpt + "  rotary_base: 10000\n", "8:16", "model.rotary_base", "only rotary positions");
  expect_error(llama + "  rotary_base: 0\n", "9:16", "model.rotary_base", "at least 1");
  expect_error(llama + "  norm_epsilon: -1e-5\n", "9:17", "model.norm_epsilon", "must be between");
  // The shipped files carry the released configs' values.
  EXPECT_EQ(load_model_file(kModels / "llama3-70b.yaml").shape->rotary_base, 500'000);
  const Model qwen = load_model_file(kModels / "qwen3-30b-a3b.yaml");
  EXPECT_EQ(qwen.shape->rotary_base, 1'000'000);
  EXPECT_EQ(qwen.shape->norm_epsilon, 1e-6);
}

// Llama 3.1's and YaRN's rescaled frequencies, in Hugging Face's rope_scaling names: like the rotary
// base, only exports read them.
TEST(ModelLoader, RopeScaling) {
  const std::string llama = "model:\n  family: llama\n  layers: 4\n  hidden: 64\n  heads: 4\n  ffn: 128\n"
                            "  seq_len: 8\n  vocab: 10\n";
  EXPECT_FALSE(parse_text(llama).shape->rope_scaling);
  const Model llama31 = parse_text(llama +
                                   "  rope_scaling: { type: llama3, factor: 8, low_freq_factor: 1, high_freq_factor: 4,"
                                   " original_max_position_embeddings: 8192 }\n");
  ASSERT_TRUE(llama31.shape->rope_scaling);
  EXPECT_EQ(llama31.shape->rope_scaling->kind, RopeScalingKind::Llama3);
  EXPECT_EQ(llama31.shape->rope_scaling->factor, 8.0);
  EXPECT_EQ(llama31.shape->rope_scaling->low_freq_factor, 1.0);
  EXPECT_EQ(llama31.shape->rope_scaling->high_freq_factor, 4.0);
  EXPECT_EQ(llama31.shape->rope_scaling->original_max_position_embeddings, 8192);
  // YaRN's optional values take its defaults.
  const Model yarn = parse_text(llama + "  rope_scaling: { type: yarn, factor: 32, original_max_position_embeddings: 4096 }\n");
  ASSERT_TRUE(yarn.shape->rope_scaling);
  EXPECT_EQ(yarn.shape->rope_scaling->kind, RopeScalingKind::Yarn);
  EXPECT_EQ(yarn.shape->rope_scaling->beta_fast, 32.0);
  EXPECT_EQ(yarn.shape->rope_scaling->beta_slow, 1.0);
  EXPECT_EQ(yarn.shape->rope_scaling->mscale, 1.0);
  EXPECT_EQ(yarn.shape->rope_scaling->mscale_all_dim, 0.0);

  const std::string gpt = "model:\n  family: gpt\n  layers: 2\n  hidden: 64\n  heads: 4\n  seq_len: 8\n  vocab: 10\n";
  expect_error(gpt + "  rope_scaling: { type: yarn, factor: 4, original_max_position_embeddings: 2048 }\n", "8:17",
               "model.rope_scaling", "only rotary positions");
  expect_error(llama + "  rope_scaling: { type: ntk, factor: 2, original_max_position_embeddings: 2048 }\n", "9:25",
               "model.rope_scaling.type", "unknown value 'ntk'");
  expect_error(llama + "  rope_scaling: { type: yarn, factor: 4, original_max_position_embeddings: 2048, "
                       "low_freq_factor: 1 }\n",
               "9:99", "model.rope_scaling.low_freq_factor", "only type llama3");
  expect_error(llama + "  rope_scaling: { type: llama3, factor: 8, original_max_position_embeddings: 8192 }\n", "9:17",
               "model.rope_scaling.low_freq_factor", "low_freq_factor");
  expect_error(llama + "  rope_scaling: { type: llama3, factor: 8, low_freq_factor: 4, high_freq_factor: 1, "
                       "original_max_position_embeddings: 8192 }\n",
               "9:82", "model.rope_scaling.high_freq_factor", "must exceed low_freq_factor");
  expect_error(llama + "  rope_scaling: { type: yarn, factor: 0.5, original_max_position_embeddings: 2048 }\n", "9:39",
               "model.rope_scaling.factor", "must be between");

  // The shipped files carry the released configs' values.
  EXPECT_FALSE(load_model_file(kModels / "llama3-70b.yaml").shape->rope_scaling);
  for (const char* llama31_file : {"llama31-405b.yaml", "llama3-405b.yaml"}) {
    const auto scaling = load_model_file(kModels / llama31_file).shape->rope_scaling;
    ASSERT_TRUE(scaling) << llama31_file;
    EXPECT_EQ(scaling->kind, RopeScalingKind::Llama3);
    EXPECT_EQ(scaling->factor, 8.0);
  }
  const auto deepseek = load_model_file(kModels / "deepseek-v3.yaml").shape->rope_scaling;
  ASSERT_TRUE(deepseek);
  EXPECT_EQ(deepseek->factor, 40.0);
  EXPECT_EQ(deepseek->mscale_all_dim, 1.0);
  const auto kimi = load_model_file(kModels / "kimi-k2.yaml").shape->rope_scaling;
  ASSERT_TRUE(kimi);
  EXPECT_EQ(kimi->factor, 32.0);
  EXPECT_EQ(kimi->beta_fast, 1.0);
}

// What mpsim profile --model-out writes beside the layers: the optimizer's measured time per
// parameter, and the model the executor trains in the profiled model's place.
const std::string kTinyGpt = "{ family: gpt, layers: 2, hidden: 32, heads: 4, seq_len: 16, vocab: 64, dtype: fp32 }";
std::string profiled_list(const std::string& fields, const std::string& kinds = "embedding, transformer, transformer, output_head") {
  std::string out = "model:\n  name: tiny-profiled-mb1\n  dtype: fp32\n" + fields + "  layers:\n";
  int i = 0;
  std::string rest = kinds;
  while (!rest.empty()) {
    const std::size_t comma = rest.find(", ");
    const std::string kind = rest.substr(0, comma);
    out += "    - { name: l" + std::to_string(i++) + ", kind: " + kind + ", forward_time: \"1 ms\", backward_time: \"2 ms\" }\n";
    rest = comma == std::string::npos ? "" : rest.substr(comma + 2);
  }
  return out;
}

TEST(ModelLoader, AProfiledModelsOptimizerTimeAndSource) {
  const Model m = parse_text(profiled_list("  optimizer_time_per_parameter: { adam: \"7.24 ns\" }\n"
                                           "  profiled_from: " + kTinyGpt + "\n"));
  ASSERT_EQ(m.optimizer_seconds_per_parameter.size(), 1U);
  EXPECT_DOUBLE_EQ(m.optimizer_seconds_per_parameter.at(Optimizer::Adam), 7.24e-9);  // not rounded to 7 ns
  ASSERT_TRUE(m.profiled_from);
  EXPECT_EQ(&executed_model(m), m.profiled_from.get());
  EXPECT_EQ(m.profiled_from->name, "tiny-profiled-mb1");  // a source without a name takes the model's
  ASSERT_TRUE(m.profiled_from->shape);
  EXPECT_EQ(m.profiled_from->shape->hidden, 32);
  EXPECT_EQ(m.profiled_from->dtype_bytes, 4);
  // Without them: priced by memory traffic, trained as listed.
  const Model plain = parse_text(profiled_list(""));
  EXPECT_TRUE(plain.optimizer_seconds_per_parameter.empty());
  EXPECT_EQ(&executed_model(plain), &plain);
  // The hyperparameter form may carry a measured time too.
  const Model gpt = parse_text("model: { family: gpt, layers: 2, hidden: 32, heads: 4, seq_len: 16, vocab: 64, "
                               "optimizer_time_per_parameter: { muon: \"0.05 ns\" } }\n");
  EXPECT_DOUBLE_EQ(gpt.optimizer_seconds_per_parameter.at(Optimizer::Muon), 5e-11);
}

TEST(ModelLoader, AProfiledModelsBadFieldsAreLocated) {
  const std::string source = "  profiled_from: " + kTinyGpt + "\n";
  expect_error(profiled_list("  optimizer_time_per_parameter: { adam: \"7 parsecs\" }\n"), "4:41",
               "model.optimizer_time_per_parameter.adam", "unknown unit 'parsecs'");
  expect_error(profiled_list("  optimizer_time_per_parameter: { adamw: \"7 ns\" }\n"), "4:35",
               "model.optimizer_time_per_parameter.adamw", "unknown field 'adamw'");
  expect_error(profiled_list("  optimizer_time_per_parameter: { adam: \"0 ns\" }\n"), "4:41",
               "model.optimizer_time_per_parameter.adam", "must be positive");
  expect_error(profiled_list("  optimizer_time_per_parameter: { adam: \"15 ms\" }\n"), "4:41",
               "model.optimizer_time_per_parameter.adam", "the whole step's time");
  expect_error(profiled_list("  optimizer_time_per_parameter: \"7 ns\"\n"), "4:33", "model.optimizer_time_per_parameter",
               "expected a mapping");
  // The source must be the hyperparameter form, valid, with the list's layers in number and kind.
  expect_error(profiled_list("  profiled_from: { family: gpt, layers: 2, hiden: 32 }\n"), "4:44",
               "model.profiled_from.hiden", "unknown field 'hiden'");
  expect_error(profiled_list(source, "embedding, transformer, output_head"), "4:18", "model.profiled_from",
               "has 4 layers, the list 3");
  expect_error(profiled_list(source, "embedding, transformer, generic, output_head"), "4:18", "model.profiled_from",
               "layer 2 (l2) is transformer there and generic in the list");
  expect_error(profiled_list("  profiled_from: { layers: [ { name: a } ] }\n"), "4:28", "model.profiled_from.layers",
               "hyperparameter form");
}

TEST(ModelLoader, TheExecutedModelAProfileRecords) {
  const TempDir dir;
  // A hyperparameter model: its own mapping, named as the model is (here by its file).
  const fs::path gpt = dir.write("tiny.yaml", "model: { family: gpt, layers: 2, hidden: 32, heads: 4, seq_len: 16, vocab: 64 }\n");
  const std::string source = executed_model_yaml(gpt);
  EXPECT_NE(source.find("name: tiny"), std::string::npos) << source;
  const Model profiled = parse_text(profiled_list("  profiled_from: " + source + "\n"));
  ASSERT_TRUE(profiled.profiled_from);
  EXPECT_EQ(profiled.profiled_from->name, "tiny");
  EXPECT_EQ(profiled.profiled_from->parameters(), load_model_file(gpt).parameters());
  // A profiled model: what it was profiled from, without the measured optimizer time.
  const fs::path again = dir.write("tiny-mb1.yaml", profiled_list("  optimizer_time_per_parameter: { adam: \"7 ns\" }\n"
                                                                  "  profiled_from: " + source + "\n"));
  const std::string again_source = executed_model_yaml(again);
  EXPECT_EQ(parse_text(profiled_list("  profiled_from: " + again_source + "\n")).profiled_from->parameters(),
            profiled.profiled_from->parameters());
  EXPECT_EQ(again_source.find("optimizer_time"), std::string::npos) << again_source;
  // A listed model is trained as listed.
  EXPECT_EQ(executed_model_yaml(dir.write("listed.yaml", profiled_list(""))), "");
}

TEST(ModelLoader, MissingFileIsAnInputError) {
  EXPECT_THROW((void)load_model_file(kModels / "no-such-model.yaml"), InputError);
}

}  // namespace
}  // namespace mpsim::model
