// The profiled model a layer profile becomes loads with the project's own model loader, keeps the
// original model's layers, parameters and bytes, and carries the measured times.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

#include "executor/profile/layer_profiler.h"
#include "sim/model/model_loader.h"
#include "sim/model/transformer.h"

namespace mpsim::executor::profile {
namespace {

std::filesystem::path model_scratch() {
  return std::filesystem::temp_directory_path() / ("mpsim-profiled-model-test-" + std::to_string(::getpid()));
}

model::Model load_text(const std::string& text) {
  const auto dir = model_scratch();
  std::filesystem::create_directories(dir);
  const auto path = dir / "profiled.yaml";
  {
    std::ofstream out(path);
    out << text;
  }
  model::Model m = model::load_model_file(path);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
  return m;
}

model::Model small_gpt() {
  const model::TransformerShape s = model::default_shape(model::Family::Gpt, 3, 64, 4, 32, 256);
  return model::make_transformer(s, "tiny-gpt", 4);
}

LayerProfile timings_for(const model::Model& m) {
  LayerProfile p;
  p.backend = "cpu";
  p.micro_batch = 2;
  p.repetitions = 5;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    const double base = 1e-3 * static_cast<double>(i + 1);
    p.layers.push_back({base + 123e-9, 2 * base + 7e-9, 0.5 * base});
  }
  p.adam_s_per_parameter = 2.5e-9;
  p.executor_parameters = m.parameters();
  p.spread = 0.0625;
  return p;
}

TEST(ProfiledModel, RoundTripsThroughTheModelLoader) {
  const model::Model original = small_gpt();
  const LayerProfile profile = timings_for(original);
  const model::Model loaded = load_text(profiled_model_yaml(
      original, profile,
      {"mpsim profile ...", "host", "now", "{name: tiny-gpt, family: gpt, layers: 3, hidden: 64, heads: 4, seq_len: 32, vocab: 256, dtype: fp32}"}));

  EXPECT_EQ(loaded.name, "tiny-gpt-profiled-mb2");
  EXPECT_EQ(loaded.dtype_bytes, original.dtype_bytes);
  ASSERT_EQ(loaded.layers.size(), original.layers.size());
  for (std::size_t i = 0; i < original.layers.size(); ++i) {
    const model::Layer& a = original.layers[i];
    const model::Layer& b = loaded.layers[i];
    SCOPED_TRACE(a.name);
    EXPECT_EQ(b.name, a.name);
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.parameters, a.parameters);
    EXPECT_EQ(b.output_bytes, a.output_bytes);
    EXPECT_EQ(b.tensor_parallel_allreduces_forward, a.tensor_parallel_allreduces_forward);
    EXPECT_DOUBLE_EQ(b.forward_flops.base(), a.forward_flops.base());
    EXPECT_DOUBLE_EQ(b.backward_input_flops.base(), a.backward_input_flops.base());
    EXPECT_DOUBLE_EQ(b.backward_weight_flops.base(), a.backward_weight_flops.base());
    // Without tensor parallelism or recomputation a layer stashes the same bytes both ways.
    for (const int micro : {1, 4}) {
      EXPECT_EQ(model::stashed_activation_bytes(b, micro, 1, false, model::Recompute::None),
                model::stashed_activation_bytes(a, micro, 1, false, model::Recompute::None));
    }
    EXPECT_EQ(b.stashed.layer_input, a.stashed.layer_input);
    ASSERT_TRUE(b.forward_time && b.backward_input_time && b.backward_weight_time);
    const LayerTiming& t = profile.layers[i];
    EXPECT_NEAR(b.forward_time->to_seconds(), t.forward_s, 1e-9);
    EXPECT_NEAR(b.backward_input_time->to_seconds(), t.backward_input_s, 1e-9);
    EXPECT_NEAR(b.backward_weight_time->to_seconds(), t.backward_weight_s, 1e-9);
  }
  EXPECT_EQ(loaded.parameters(), original.parameters());
  // The band a prediction from it carries.
  ASSERT_TRUE(loaded.profile_spread);
  EXPECT_DOUBLE_EQ(*loaded.profile_spread, 0.0625);
  // The Adam step's time per parameter, a field the optimizer step's cost uses (4 digits kept).
  ASSERT_EQ(loaded.optimizer_seconds_per_parameter.count(model::Optimizer::Adam), 1U);
  EXPECT_DOUBLE_EQ(loaded.optimizer_seconds_per_parameter.at(model::Optimizer::Adam), 2.5e-9);
  // The model the executor trains in its place.
  ASSERT_TRUE(loaded.profiled_from);
  EXPECT_EQ(loaded.profiled_from->name, "tiny-gpt");
  EXPECT_EQ(loaded.profiled_from->parameters(), original.parameters());
}

TEST(ProfiledModel, IsInTheExecutorsFp32WhateverTheModelsDtype) {
  // The backends compute and keep fp32: a bf16 model's profile says fp32, with its bytes doubled.
  const model::TransformerShape shape = model::default_shape(model::Family::Gpt, 3, 64, 4, 32, 256);
  const model::Model original = model::make_transformer(shape, "tiny-gpt-bf16", 2);
  const model::Model loaded = load_text(profiled_model_yaml(original, timings_for(original), {}));
  EXPECT_EQ(loaded.dtype_bytes, 4);
  ASSERT_EQ(loaded.layers.size(), original.layers.size());
  for (std::size_t i = 0; i < original.layers.size(); ++i) {
    SCOPED_TRACE(original.layers[i].name);
    EXPECT_EQ(loaded.layers[i].output_bytes.count(), 2 * original.layers[i].output_bytes.count());
    EXPECT_EQ(model::stashed_activation_bytes(loaded.layers[i], 1, 1, false, model::Recompute::None).count(),
              2 * model::stashed_activation_bytes(original.layers[i], 1, 1, false, model::Recompute::None).count());
  }
  EXPECT_FALSE(loaded.profiled_from);  // none given: trained as listed
}

TEST(ProfiledModel, KeepsHandListedLayers) {
  const model::Model original = load_text(
      "model:\n"
      "  name: \"net \\\"a\\\"\"\n"
      "  dtype: fp32\n"
      "  layers:\n"
      "    - { name: fc, repeat: 2, params: 1000, forward_flops: \"2 MFLOP\", activation_bytes: \"4 KiB\",\n"
      "        output_bytes: \"1 KiB\" }\n");
  const model::Model loaded = load_text(profiled_model_yaml(original, timings_for(original), {}));
  ASSERT_EQ(loaded.layers.size(), 2U);
  EXPECT_EQ(loaded.name, "net \"a\"-profiled-mb2");
  EXPECT_EQ(loaded.layers[1].name, "fc1");
  EXPECT_EQ(loaded.layers[1].kind, model::LayerKind::Generic);
  EXPECT_EQ(loaded.layers[1].stashed.tp_replicated, original.layers[1].stashed.tp_replicated);
  EXPECT_EQ(loaded.layers[1].stashed.layer_input, original.layers[1].stashed.layer_input);
}

TEST(ProfiledModel, RejectsTimingsOfAnotherModel) {
  const model::Model original = small_gpt();
  LayerProfile profile = timings_for(original);
  profile.layers.pop_back();
  EXPECT_THROW(static_cast<void>(profiled_model_yaml(original, profile, {})), std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::executor::profile
