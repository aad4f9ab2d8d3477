// Full recomputation's choice of layers and TorchTitan's selective options in the plan file: read under
// Megatron's and TorchTitan's names, written back, refused at file, line and field where they do not
// apply, and placed on each layer by plan::layer_recompute.
#include <string>

#include <gtest/gtest.h>

#include "plan_test_support.h"
#include "sim/plan/layer_recompute.h"

namespace mpsim::plan {
namespace {

using model::RecomputeMethod;
using testing::check_error;
using testing::spec_from;

constexpr const char* kDgx = "topologies/dgx-h100.yaml";
constexpr const char* kLlama = "configs/models/llama3-8b.yaml";  // 32 blocks

TEST(RecomputePolicy, MegatronsMethodAndTorchTitansOptionAreRead) {
  const PlanSpec block = spec_from("recompute_granularity: full\nrecompute_method: block\nrecompute_num_layers: 3\n");
  EXPECT_EQ(block.recompute, Recompute::Full);
  EXPECT_EQ(block.recompute_method, RecomputeMethod::Block);
  EXPECT_EQ(block.recompute_num_layers, 3);
  const PlanSpec every = spec_from("recompute: selective\nselective_ac_option: 4\n");
  EXPECT_EQ(every.recompute, Recompute::Full);
  EXPECT_EQ(every.recompute_method, RecomputeMethod::Every);
  EXPECT_EQ(every.recompute_num_layers, 4);
  EXPECT_EQ(spec_from("recompute: selective\nselective_ac_option: op\n").recompute, Recompute::Op);
  EXPECT_EQ(spec_from("recompute: op\n").recompute, Recompute::Op);
  // The defaults: every layer alone.
  const PlanSpec full = spec_from("recompute: full\n");
  EXPECT_EQ(full.recompute_method, RecomputeMethod::Uniform);
  EXPECT_EQ(full.recompute_num_layers, 1);
}

TEST(RecomputePolicy, WrittenPlansReadBack) {
  for (const std::string yaml : {"recompute: full\nrecompute_method: block\nrecompute_num_layers: 2\n",
                                 "recompute: full\nrecompute_num_layers: 4\n",
                                 "recompute: selective\nselective_ac_option: 2\n", "recompute: op\n"}) {
    SCOPED_TRACE(yaml);
    const Plan p = resolve_plan(spec_from("parallelism: { pipeline: 2 }\n" + yaml),
                                topology::load_topology_file(testing::repo_path(kDgx)),
                                model::load_model_file(testing::repo_path(kLlama)));
    const PlanSpec back = spec_from(write_plan_yaml(p));
    EXPECT_EQ(back.recompute, p.recompute);
    EXPECT_EQ(back.recompute_method, p.recompute_method);
    EXPECT_EQ(back.recompute_num_layers, p.recompute_num_layers);
  }
}

TEST(RecomputePolicy, WhereItDoesNotApplyTheFileLineAndFieldAreNamed) {
  EXPECT_EQ(check_error("recompute: selective\nrecompute_num_layers: 2\n", kDgx, kLlama),
            "plan.yaml:2:23: recompute_num_layers applies to recompute: full, not 'selective' (field "
            "'recompute_num_layers')");
  EXPECT_EQ(check_error("recompute_method: block\n", kDgx, kLlama),
            "plan.yaml:1:19: recompute_method applies to recompute: full, not 'none' (field 'recompute_method')");
  // Block checkpoints at most a chunk's layers: 32 blocks over 4 stages leave 8 in each.
  EXPECT_EQ(check_error("parallelism: { pipeline: 4 }\nrecompute: full\nrecompute_method: block\n"
                        "recompute_num_layers: 9\n",
                        kDgx, kLlama),
            "plan.yaml:4:23: recompute_method block checkpoints the first 9 layers of each chunk; virtual stage 0 "
            "holds 8 (field 'recompute_num_layers')");
  EXPECT_EQ(check_error("parallelism: { pipeline: 4 }\nrecompute: full\nrecompute_method: block\n"
                        "recompute_num_layers: 8\n",
                        kDgx, kLlama),
            "<no error>");
  // TorchTitan's option belongs to its selective mode, alone.
  EXPECT_EQ(check_error("recompute: full\nselective_ac_option: 2\n", kDgx, kLlama),
            "plan.yaml:2:22: selective_ac_option is an option of TorchTitan's selective mode: it needs recompute: "
            "selective, not 'full' (field 'selective_ac_option')");
  EXPECT_NE(check_error("recompute: selective\nrecompute_modules: [mlp]\nselective_ac_option: op\n", kDgx, kLlama)
                .find("leave out recompute_modules"),
            std::string::npos);
  EXPECT_NE(check_error("recompute: selective\nselective_ac_option: often\n", kDgx, kLlama).find("selective_ac_option"),
            std::string::npos);
  EXPECT_NE(check_error("recompute: full\nrecompute_method: sometimes\n", kDgx, kLlama).find("recompute_method"),
            std::string::npos);
  EXPECT_NE(check_error("recompute: full\nrecompute_num_layers: 0\n", kDgx, kLlama).find("recompute_num_layers"),
            std::string::npos);
}

/// The checkpointed blocks of `yaml`'s plan for Llama 3 8B (32 blocks, after the embedding), as indices from 0.
std::vector<int> checkpointed(const std::string& yaml) {
  const model::Model m = model::load_model_file(testing::repo_path(kLlama));
  const Plan p = resolve_plan(spec_from(yaml), topology::load_topology_file(testing::repo_path(kDgx)), m);
  const std::vector<LayerRecompute> rules = layer_recompute(p, m);
  EXPECT_EQ(rules.size(), m.layers.size());
  std::vector<int> out;
  for (std::size_t i = 0; i < m.layers.size(); ++i) {
    if (replays_forward(rules[i], m.layers[i].kind)) out.push_back(static_cast<int>(i) - 1);
  }
  return out;
}

TEST(RecomputePolicy, EachLayerTakesItsPlaceInItsChunkAndOnItsRank) {
  // Block 2 on 4 stages of 8 blocks: each stage's first two.
  EXPECT_EQ(checkpointed("parallelism: { pipeline: 4 }\nrecompute: full\nrecompute_method: block\n"
                         "recompute_num_layers: 2\n"),
            (std::vector<int>{0, 1, 8, 9, 16, 17, 24, 25}));
  // Every 3rd block of a rank: rank 0 of 2 interleaved over 2 chunks holds blocks 0-7 and 16-23, counted
  // 1-16 on the rank (the 3rd, 6th, 9th, 12th and 15th: blocks 2, 5, 16, 19, 22); rank 1 holds 8-15 and
  // 24-31.
  EXPECT_EQ(checkpointed("parallelism: { pipeline: 2, virtual_stages: 2 }\nbatch: { global: 8 }\n"
                         "recompute: selective\nselective_ac_option: 3\n"),
            (std::vector<int>{2, 5, 10, 13, 16, 19, 22, 24, 27, 30}));
  // Uniform groups checkpoint every block; their first blocks keep the input.
  const model::Model m = model::load_model_file(testing::repo_path(kLlama));
  const Plan p = resolve_plan(spec_from("parallelism: { pipeline: 4 }\nrecompute: full\nrecompute_num_layers: 3\n"),
                              topology::load_topology_file(testing::repo_path(kDgx)), m);
  const std::vector<LayerRecompute> rules = layer_recompute(p, m);
  for (int block = 0; block < 32; ++block) {
    const LayerRecompute& r = rules.at(static_cast<std::size_t>(block) + 1);
    EXPECT_EQ(r.rule, Recompute::Full);
    EXPECT_EQ(r.place.keeps_input, block % 8 % 3 == 0) << block;
    EXPECT_EQ(r.place.closes_group, block % 8 % 3 == 2 || block % 8 == 7) << block;
  }
  // Per-op checkpointing wraps the blocks only.
  const Plan op = resolve_plan(spec_from("recompute: op\n"), topology::load_topology_file(testing::repo_path(kDgx)), m);
  const std::vector<LayerRecompute> op_rules = layer_recompute(op, m);
  EXPECT_EQ(op_rules.front().rule, Recompute::None);
  EXPECT_EQ(op_rules.at(1).rule, Recompute::Op);
  EXPECT_EQ(op_rules.back().rule, Recompute::None);
}

}  // namespace
}  // namespace mpsim::plan
