// Megatron-LM launch scripts and SageMaker's parameters into plans and models, and export -> import round
// trips of every shipped plan (through TorchTitan's job TOML where neither runs the schedule).
#include <gtest/gtest.h>

#include <numeric>
#include <string>

#include <fmt/format.h>

#include "interop/import/megatron_import.h"
#include "interop/import/sagemaker_import.h"
#include "interop/import/torchtitan_import.h"
#include "sim/core/input_error.h"
#include "sim/core/text_file.h"
#include "sim/core/yaml_field.h"
#include "tests/unit/interop/interop_test_support.h"

namespace mpsim::interop {
namespace {

using testing::ResolvedPlan;
using testing::repo_path;

plan::PlanSpec imported_spec(const ImportedLaunch& imported) {
  return plan::load_plan_spec(YamlDocument::parse(imported.plan_yaml, "imported.yaml").root());
}

struct RoundTripCase {
  std::string plan;
  std::string topology;
  std::string model;
  int gpus = 0;  ///< the job's GPUs; 0: the whole topology
};
void PrintTo(const RoundTripCase& c, std::ostream* os) { *os << c.plan; }

class EveryShippedPlan : public ::testing::TestWithParam<RoundTripCase> {};

/// A TorchTitan export read back: the TOML names the schedule CSV "job.csv" where it needs one, and the
/// import reads that CSV from memory.
ImportedLaunch through_torchtitan(const ResolvedPlan& original, std::string& exported) {
  const bool with_csv = torchtitan_runs_from_csv(original.plan);
  exported = original.exported(Framework::TorchTitan, with_csv ? "job.csv" : "");
  const std::string csv = with_csv ? torchtitan_schedule_csv(original.plan) : "";
  TorchTitanImportOptions options;
  options.model = &original.model;
  options.read_csv = [&](const std::string& written) {
    EXPECT_EQ(written, "job.csv");
    return ScheduleCsvFile{"job.csv", csv};
  };
  return import_torchtitan(exported, "job.toml", options);
}

// import(export(plan)) resolves to the same plan on the same cluster and model, for every shipped plan:
// through a Megatron-LM script where Megatron-LM runs its schedule, else through SageMaker's parameters
// (its simple and interleaved pipelines), else through a TorchTitan job TOML whose schedule CSV carries
// the order (ZB-H1: neither Megatron-LM nor SageMaker runs it, and the export to either is the error at
// `schedule`).
TEST_P(EveryShippedPlan, RoundTripsThroughALaunchConfiguration) {
  const RoundTripCase& c = GetParam();
  const ResolvedPlan original(c.topology, c.model, "configs/plans/" + c.plan, c.gpus);
  const auto schedule = original.plan.schedule;
  const bool megatron = schedule == plan::ScheduleKind::OneFOneB || schedule == plan::ScheduleKind::Interleaved1F1B;
  const bool sagemaker = schedule == plan::ScheduleKind::GPipe || schedule == plan::ScheduleKind::SageMakerInterleaved;
  if (!megatron) {
    try {
      (void)original.exported(Framework::Megatron);
      FAIL() << "Megatron-LM cannot run " << plan::to_string(schedule);
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "schedule");
    }
  }
  if (!megatron && !sagemaker) {
    try {
      (void)original.exported(Framework::SageMaker);
      FAIL() << "SageMaker cannot run " << plan::to_string(schedule);
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "schedule");
    }
  }
  std::string exported;
  const ImportedLaunch imported =
      megatron    ? import_megatron(exported = original.exported(Framework::Megatron), "launch.sh", std::nullopt, false)
      : sagemaker ? import_sagemaker(exported = original.exported(Framework::SageMaker), "distribution.json",
                                     original.plan.gpus())
                  : through_torchtitan(original, exported);
  ASSERT_TRUE(imported.gpus);
  EXPECT_EQ(*imported.gpus, original.plan.gpus());
  const plan::Plan back = plan::resolve_plan(imported_spec(imported), original.cluster, original.model);
  EXPECT_EQ(back, original.plan) << exported << "\n" << imported.plan_yaml;
  // Every argument the script writes is one the import reads.
  EXPECT_TRUE(imported.ignored.empty()) << ::testing::PrintToString(imported.ignored);
  EXPECT_TRUE(imported.notes.empty()) << ::testing::PrintToString(imported.notes);
}

INSTANTIATE_TEST_SUITE_P(
    Plans, EveryShippedPlan,
    ::testing::Values(
        RoundTripCase{"cpu-tiny-1f1b-pp2.yaml", "topologies/dgx-a100.yaml", "configs/models/cpu-gpt-tiny.yaml", 2},
        RoundTripCase{"cpu-tiny-zb-h1-pp2.yaml", "topologies/dgx-a100.yaml", "configs/models/cpu-gpt-tiny.yaml", 2},
        RoundTripCase{"gpt3-1.3b-sagemaker.yaml", "topologies/p4d.24xlarge.yaml", "configs/models/gpt3-1.3b.yaml"},
        RoundTripCase{"gpt3-13b-4x-p4d.yaml", "topologies/4x-p4d.yaml", "configs/models/gpt3-13b.yaml"},
        RoundTripCase{"gpt3-175b-h100-weak-scaling.yaml", "topologies/512x-dgx-h100.yaml", "configs/models/gpt3-175b.yaml"},
        RoundTripCase{"megatron-175b-interleaved.yaml", "topologies/16x-dgx-h100.yaml", "configs/models/gpt3-175b.yaml"},
        RoundTripCase{"megatron-sc21-1.7b.yaml", "topologies/selene.yaml", "configs/models/megatron-1.7b.yaml", 32},
        RoundTripCase{"megatron-sc21-7.5b.yaml", "topologies/selene.yaml", "configs/models/megatron-7.5b.yaml", 128},
        RoundTripCase{"megatron-sc21-39.1b.yaml", "topologies/selene.yaml", "configs/models/megatron-39.1b.yaml", 512},
        RoundTripCase{"megatron-sc21-145.6b.yaml", "topologies/selene.yaml", "configs/models/megatron-145.6b.yaml", 1536},
        RoundTripCase{"megatron-sc21-529.6b.yaml", "topologies/selene.yaml", "configs/models/megatron-529.6b.yaml", 2520}),
    [](const ::testing::TestParamInfo<RoundTripCase>& info) {
      std::string name;
      for (const char ch : info.param.plan.substr(0, info.param.plan.size() - 5)) {
        name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
      }
      return name;
    });

// Plans with every setting the Megatron target writes round-trip too.
TEST(MegatronRoundTrip, EverySettingComesBack) {
  const char* const plans[] = {
      "parallelism: { tensor: 2, pipeline: 4 }\npartition: [0, 7, 16, 25, 32]\nrecompute: selective\n"
      "recompute_modules: [core_attn, mlp]\nsequence_parallel: true\noverlap: { tensor_comm: true, grad_reduce: true }\n"
      "zero: 2\nprecision: fp8\nfp8_param_gather: true\n",
      "parallelism: { tensor: 2, pipeline: 2, virtual_stages: 2 }\npartition: [0, 10, 16, 24, 32]\nzero: 1\noverlap: { grad_reduce: true, param_gather: true }\nprecision: mxfp8\n"
      "grad_reduce_in_fp32: false\nplacement: tp-pp-dp\nattention: standard\nshard_groups: 2\n",
      "parallelism: { pipeline: 2, virtual_stages: 4 }\nbatch: { global: 64, micro: 2 }\n"
      "microbatch_group_size_per_vp_stage: 4\nrecompute: full\nzero: 3\n",
      "activation_offload_layers: 2\nprecision: fp16\nzero: 1\noptimizer: muon\n",
      "parallelism: { tensor: 2, context: 2 }\ncp_comm_type: a2a\nsequence_parallel: true\nprecision: fp8-blockwise\n",
  };
  for (const char* yaml : plans) {
    const ResolvedPlan original("topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml", testing::spec_from(yaml));
    const std::string script = original.exported(Framework::Megatron);
    const ImportedLaunch imported = import_megatron(script, "launch.sh", std::nullopt, false);
    EXPECT_EQ(plan::resolve_plan(imported_spec(imported), original.cluster, original.model), original.plan)
        << yaml << "\n" << script << "\n" << imported.plan_yaml;
  }
  // Mixture of experts: expert parallelism (with its all-to-all dispatcher), expert tensor size, capacity.
  {
    const ResolvedPlan original("topologies/dgx-h100.yaml", "configs/models/mixtral-8x7b.yaml",
                                testing::spec_from("parallelism: { tensor: 2, expert: 4, expert_tensor: 1 }\n"
                                                   "moe_expert_capacity_factor: 1.25\nmoe_pad_expert_input_to_capacity: true\n"
                                                   "overlap: { moe_expert_comm: true }\n"
                                                   "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep\n"
                                                   "moe_hybridep_num_sms: 32\n"));
    const std::string script = original.exported(Framework::Megatron);
    const ImportedLaunch imported = import_megatron(script, "launch.sh", std::nullopt, false);
    EXPECT_EQ(plan::resolve_plan(imported_spec(imported), original.cluster, original.model), original.plan)
        << script << "\n" << imported.plan_yaml;
    EXPECT_TRUE(imported.ignored.empty()) << ::testing::PrintToString(imported.ignored);
  }
}

double total_parameters(const model::Model& m) {
  return std::accumulate(m.layers.begin(), m.layers.end(), 0.0,
                         [](double sum, const model::Layer& l) { return sum + static_cast<double>(l.parameters); });
}
double total_flops(const model::Model& m) {
  return std::accumulate(m.layers.begin(), m.layers.end(), 0.0,
                         [](double sum, const model::Layer& l) { return sum + l.training_flops().base(); });
}

// --model-out: the shape arguments give back the model they were written from.
TEST(MegatronRoundTrip, TheShapeArgumentsGiveBackTheModel) {
  for (const char* model : {"configs/models/gpt3-175b.yaml", "configs/models/llama3-70b.yaml",
                            "configs/models/mixtral-8x7b.yaml", "configs/models/deepseek-v3.yaml",
                            "configs/models/qwen3-30b-a3b.yaml", "configs/models/megatron-1.7b.yaml"}) {
    const ResolvedPlan original("topologies/dgx-h100.yaml", model, testing::spec_from("parallelism: { tensor: 8 }\n"));
    const ImportedLaunch imported = import_megatron(original.exported(Framework::Megatron), "launch.sh", std::nullopt, true);
    const model::Model back = model::load_model(YamlDocument::parse(imported.model_yaml, "model.yaml").root());
    EXPECT_EQ(back.layers.size(), original.model.layers.size()) << model << "\n" << imported.model_yaml;
    EXPECT_EQ(total_parameters(back), total_parameters(original.model)) << model << "\n" << imported.model_yaml;
    EXPECT_EQ(total_flops(back), total_flops(original.model)) << model;
    EXPECT_EQ(back.dtype_bytes, original.model.dtype_bytes);
  }
}

// tests/data/launch/train_gpt3_175b.sh, a script as Megatron-LM's examples write it
// (examples/gpt3/train_gpt3_175b_distributed.sh): sizes in variables, unquoted arrays, arguments the
// plan does not need, and a variable set only at run time.
std::string example_script() { return read_text_file(repo_path("tests/data/launch/train_gpt3_175b.sh")); }

TEST(MegatronImport, ReadsAScriptAsPeopleWriteIt) {
  const ImportedLaunch imported = import_megatron(example_script(), "train.sh", std::nullopt, true);
  ASSERT_TRUE(imported.gpus);
  EXPECT_EQ(*imported.gpus, 128);
  const plan::PlanSpec spec = imported_spec(imported);
  EXPECT_EQ(spec.degrees[plan::Axis::Tensor], 8);
  EXPECT_EQ(spec.degrees[plan::Axis::Pipeline], 16);
  EXPECT_EQ(spec.written(plan::Axis::Data), 1);
  EXPECT_EQ(spec.global_batch, 1536);
  EXPECT_EQ(spec.precision, plan::Precision::Fp16);
  EXPECT_FALSE(spec.grad_reduce_in_fp32);  // Megatron reduces fp16 gradients in fp16 unless told
  // The values point at the script: --tensor-model-parallel-size is on line 31.
  EXPECT_NE(imported.plan_yaml.find("tensor_model_parallel_size: 8   # train.sh:31\n"), std::string::npos)
      << imported.plan_yaml;
  EXPECT_EQ(imported.ignored, (std::vector<std::string>{"--data-path", "--lr", "--rampup-batch-size"}));
  // GPT-2's 50257 tokens, padded by Megatron to a multiple of 128 x 8.
  EXPECT_NE(imported.model_yaml.find("vocab: 51200"), std::string::npos) << imported.model_yaml;
  // The GPU count from the caller replaces the script's.
  EXPECT_EQ(imported_spec(import_megatron(example_script(), "train.sh", 256, false)).written(plan::Axis::Data), 2);
}

std::string import_error(const std::string& script) {
  try {
    (void)import_megatron(script, "train.sh", std::nullopt, false);
  } catch (const InputError& e) {
    return fmt::format("{}:{}: {}: {}", e.where().line, e.where().column, e.field(), e.message());
  }
  return "<no error>";
}

TEST(MegatronImport, AValueFromAVariableTheScriptNeverSetsNamesIt) {
  const std::string error = import_error("ARGS=(--tensor-model-parallel-size $TP)\ntorchrun pretrain_gpt.py ${ARGS[@]}\n");
  EXPECT_EQ(error.rfind("1:36: --tensor-model-parallel-size: ", 0), 0u) << error;
  EXPECT_NE(error.find("'TP'"), std::string::npos) << error;
  // An unused one is no error.
  EXPECT_EQ(import_error("torchrun pretrain_gpt.py --data-path $DATA\n"), "<no error>");
}

TEST(MegatronImport, WhatMpsimCannotRepresentIsAnErrorAtTheArgument) {
  EXPECT_EQ(import_error("python pretrain_gpt.py --recompute-granularity full --recompute-method block\n").rfind("1:", 0), 0u);
  EXPECT_NE(import_error("python pretrain_gpt.py --recompute-granularity full --recompute-method block\n")
                .find("--recompute-method"),
            std::string::npos);
  EXPECT_NE(import_error("python pretrain_gpt.py --cp-comm-type p2p a2a\n").find("--cp-comm-type"), std::string::npos);
  EXPECT_NE(import_error("python pretrain_gpt.py --pipeline-model-parallel-size 2 --pipeline-model-parallel-layout \"Et|tLx\"\n")
                .find("not a layout letter"),
            std::string::npos);
  EXPECT_NE(import_error("echo no training here\n").find("pretrain_"), std::string::npos);
  EXPECT_NE(import_error("torchrun --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 3\n").find("--nnodes"),
            std::string::npos);
}

TEST(MegatronImport, ALayoutGivesThePartitionAndTheVirtualStages) {
  const ImportedLaunch imported = import_megatron(
      "python pretrain_gpt.py --num-layers 8 --pipeline-model-parallel-size 2 "
      "--pipeline-model-parallel-layout \"Et|(tt|)*2t*3L\"\n",
      "train.sh", std::nullopt, false);
  const plan::PlanSpec spec = imported_spec(imported);
  EXPECT_EQ(spec.virtual_stages, 2);
  EXPECT_EQ(spec.partition, (std::vector<int>{0, 1, 3, 5, 8}));
}

}  // namespace
}  // namespace mpsim::interop
