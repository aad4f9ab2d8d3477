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
  plan::Plan expected = original.plan;
  if (!megatron && !sagemaker) expected.cross_entropy = plan::CrossEntropy::Pytorch;  // TorchTitan's loss
  EXPECT_EQ(back, expected) << exported << "\n" << imported.plan_yaml;
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
      "zero: 2\nprecision: fp8\nfp8_param_gather: true\ncross_entropy: te\n",
      "parallelism: { tensor: 2, pipeline: 2, virtual_stages: 2 }\npartition: [0, 10, 16, 24, 32]\nzero: 1\noverlap: { grad_reduce: true, param_gather: true }\nprecision: mxfp8\n"
      "grad_reduce_in_fp32: false\nplacement: tp-pp-dp\nattention: standard\nshard_groups: 2\n",
      "parallelism: { pipeline: 2, virtual_stages: 4 }\nbatch: { global: 64, micro: 2 }\n"
      "microbatch_group_size_per_vp_stage: 4\nrecompute: full\nzero: 3\n",
      "activation_offload_layers: 2\nprecision: fp16\nzero: 1\noptimizer: muon\n",
      "zero: 1\ngrad_reduce_in_fp32: false\nprecision_aware_optimizer: true\nexp_avg_dtype: bf16\nexp_avg_sq_dtype: fp8\n",
      "parallelism: { tensor: 2 }\nrecompute: full\nrecompute_method: block\nrecompute_num_layers: 4\n"
      "distribute_saved_activations: true\n",
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
                            "configs/models/qwen3-30b-a3b.yaml", "configs/models/megatron-1.7b.yaml",
                            "configs/models/llama31-405b.yaml"}) {
    const ResolvedPlan original("topologies/dgx-h100.yaml", model, testing::spec_from("parallelism: { tensor: 8 }\n"));
    const ImportedLaunch imported = import_megatron(original.exported(Framework::Megatron), "launch.sh", std::nullopt, true);
    const model::Model back = model::load_model(YamlDocument::parse(imported.model_yaml, "model.yaml").root());
    EXPECT_EQ(back.layers.size(), original.model.layers.size()) << model << "\n" << imported.model_yaml;
    EXPECT_EQ(total_parameters(back), total_parameters(original.model)) << model << "\n" << imported.model_yaml;
    EXPECT_EQ(total_flops(back), total_flops(original.model)) << model;
    EXPECT_EQ(back.dtype_bytes, original.model.dtype_bytes);
    ASSERT_TRUE(back.shape && original.model.shape);
    EXPECT_EQ(back.shape->rotary_base, original.model.shape->rotary_base) << model;
    EXPECT_EQ(back.shape->rope_scaling, original.model.shape->rope_scaling) << model << "\n" << imported.model_yaml;
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
  // Megatron-LM derives the data-parallel size from the world size, and so does the plan (from the cluster):
  // 128 GPUs over tensor 8 x pipeline 16 is a comment.
  EXPECT_FALSE(spec.written(plan::Axis::Data));
  EXPECT_NE(imported.plan_yaml.find("# data_parallel_size 1 on the script's 128 GPUs"), std::string::npos)
      << imported.plan_yaml;
  EXPECT_EQ(spec.global_batch, 1536);
  EXPECT_EQ(spec.precision, plan::Precision::Fp16);
  EXPECT_FALSE(spec.grad_reduce_in_fp32);  // Megatron reduces fp16 gradients in fp16 unless told
  // The values point at the script: --tensor-model-parallel-size is on line 31.
  EXPECT_NE(imported.plan_yaml.find("tensor_model_parallel_size: 8   # train.sh:31\n"), std::string::npos)
      << imported.plan_yaml;
  EXPECT_EQ(imported.ignored, (std::vector<std::string>{"--data-path", "--lr", "--rampup-batch-size"}));
  // GPT-2's 50257 tokens, padded by Megatron to a multiple of 128 x 8.
  EXPECT_NE(imported.model_yaml.find("vocab: 51200"), std::string::npos) << imported.model_yaml;
  // The GPU count from the caller replaces the script's, and still pins nothing.
  const ImportedLaunch on_256 = import_megatron(example_script(), "train.sh", 256, false);
  EXPECT_EQ(on_256.gpus, 256);
  EXPECT_FALSE(imported_spec(on_256).written(plan::Axis::Data));
  EXPECT_NE(on_256.plan_yaml.find("# data_parallel_size 2 on the script's 256 GPUs"), std::string::npos);
}

// An imported plan leaves the data-parallel size to the cluster, so it resolves on another cluster and with
// other degrees (`simulate --sweep plan.tensor=2,4,8`) instead of insisting on the script's GPU count.
TEST(MegatronImport, TheDataParallelSizeFollowsTheCluster) {
  const ImportedLaunch imported = import_megatron(
      "torchrun --nnodes 2 --nproc_per_node 8 pretrain_gpt.py --tensor-model-parallel-size 2 --global-batch-size 64\n",
      "train.sh", std::nullopt, false);
  ASSERT_EQ(imported.gpus, 16);
  const topology::Cluster one_node = topology::load_topology_file(repo_path(testing::kDgxH100));
  const model::Model llama = model::load_model_file(repo_path(testing::kLlama8b));
  for (const int tensor : {2, 4, 8}) {
    plan::PlanSpec spec = imported_spec(imported);
    spec.write(plan::Axis::Tensor, tensor);
    const plan::Plan p = plan::resolve_plan(spec, one_node, llama);
    EXPECT_EQ(p.degrees[plan::Axis::Data], 8 / tensor) << tensor;
    EXPECT_EQ(p.global_batch, 64);
  }
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
  // Full recomputation without the layers it applies to, as Megatron-Core's TransformerConfig refuses it.
  EXPECT_EQ(import_error("python pretrain_gpt.py --recompute-granularity full --recompute-method block\n").rfind("1:", 0), 0u);
  EXPECT_NE(import_error("python pretrain_gpt.py --recompute-granularity full --recompute-method block\n")
                .find("--recompute-num-layers"),
            std::string::npos);
  EXPECT_NE(import_error("python pretrain_gpt.py --recompute-granularity full --recompute-num-layers 2\n")
                .find("--recompute-method"),
            std::string::npos);
  EXPECT_NE(import_error("python pretrain_gpt.py --recompute-granularity full --recompute-method often "
                         "--recompute-num-layers 2\n")
                .find("expected uniform or block, not 'often'"),
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

// Megatron-Core runs the kernel --attention-backend names; --use-flash-attn only ever switched the legacy
// models (megatron/training/arguments.py does not reconcile the two). A script with both gives a plan with
// the backend alone (a plan with both would give `attention` twice), and a note.
TEST(MegatronImport, TheAttentionBackendWinsOverUseFlashAttn) {
  const auto imported = [](const std::string& args) {
    return import_megatron("python pretrain_gpt.py " + args + "\n", "train.sh", std::nullopt, false);
  };
  const ImportedLaunch both = imported("--attention-backend fused --use-flash-attn");
  EXPECT_NE(both.plan_yaml.find("attention_backend: fused"), std::string::npos) << both.plan_yaml;
  EXPECT_EQ(both.plan_yaml.find("use_flash_attn"), std::string::npos) << both.plan_yaml;
  EXPECT_EQ(imported_spec(both).attention, plan::AttentionKernel::Flash);
  ASSERT_EQ(both.notes.size(), 1u);
  EXPECT_NE(both.notes.front().find("--attention-backend fused"), std::string::npos) << both.notes.front();
  EXPECT_TRUE(both.ignored.empty()) << ::testing::PrintToString(both.ignored);
  // The backend decides where they disagree.
  EXPECT_EQ(imported_spec(imported("--use-flash-attn --attention-backend unfused")).attention,
            plan::AttentionKernel::Standard);
  // Either alone is read as before.
  const ImportedLaunch flash = imported("--use-flash-attn");
  EXPECT_NE(flash.plan_yaml.find("use_flash_attn: true"), std::string::npos) << flash.plan_yaml;
  EXPECT_TRUE(flash.notes.empty());
  EXPECT_EQ(imported_spec(imported("--attention-backend local")).attention, plan::AttentionKernel::Standard);
}

// The tokenizers whose vocabulary the import knows: GPT-2's BPE (50257) and HuggingFace tokenizers of the
// models in its table, by Hub name or by a local folder named after one, case aside.
TEST(MegatronImport, KnownTokenizersGiveTheirVocabulary) {
  EXPECT_EQ(known_vocabulary("GPT2BPETokenizer", ""), 50257);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "meta-llama/Meta-Llama-3-8B"), 128256);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "/models/meta-llama-3-70b-instruct/"), 128256);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "meta-llama/Llama-3.1-405B"), 128256);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "meta-llama/Llama-2-7b-hf"), 32000);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "mistralai/Mistral-7B-v0.1"), 32000);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "mistralai/Mistral-7B-Instruct-v0.3"), 32768);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "mistralai/Mixtral-8x7B-v0.1"), 32000);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "mistralai/Mixtral-8x22B-Instruct-v0.1"), 32768);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "Qwen/Qwen3-30B-A3B"), 151936);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "deepseek-ai/DeepSeek-V3"), 129280);
  EXPECT_EQ(known_vocabulary("HuggingFaceTokenizer", "openai/gpt-oss-120b"), 201088);
  // Not in the table (the Qwen2.5 sizes differ in config.json), or not a HuggingFace tokenizer.
  EXPECT_FALSE(known_vocabulary("HuggingFaceTokenizer", "Qwen/Qwen2.5-7B"));
  EXPECT_FALSE(known_vocabulary("HuggingFaceTokenizer", ""));
  EXPECT_FALSE(known_vocabulary("SentencePieceTokenizer", "meta-llama/Meta-Llama-3-8B"));
}

/// The shape arguments a tokenizer test needs, before the tokenizer's.
constexpr const char* kShape =
    "torchrun --nproc_per_node 8 pretrain_gpt.py --num-layers 2 --hidden-size 256 --num-attention-heads 4 "
    "--seq-length 128 --tensor-model-parallel-size 2 ";

std::int64_t vocab_of(const ImportedLaunch& imported) {
  return model::load_model(YamlDocument::parse(imported.model_yaml, "model.yaml").root()).shape->vocab;
}

std::string model_error(const std::string& script, std::optional<std::int64_t> vocab = std::nullopt) {
  try {
    (void)import_megatron(script, "train.sh", std::nullopt, true, vocab);
  } catch (const InputError& e) {
    return e.field() + ": " + e.message();
  }
  return "<no error>";
}

// The vocabulary is the tokenizer's, padded as Megatron pads it (to a multiple of 128 x tensor 2 here);
// `plan import --vocab-size` stands in for a tokenizer the import does not know, or replaces one it does.
TEST(MegatronImport, TheVocabularyComesFromTheTokenizer) {
  const auto with_model = [](const std::string& args, std::optional<std::int64_t> vocab = std::nullopt) {
    return import_megatron(kShape + args + "\n", "train.sh", std::nullopt, true, vocab);
  };
  EXPECT_EQ(vocab_of(with_model("--tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json --merge-file "
                                "gpt2-merges.txt")),
            50432);
  // Megatron-LM's example scripts give the two files without a type; a vocabulary file not named for GPT-2
  // is still taken as GPT-2's, with a note.
  EXPECT_EQ(vocab_of(with_model("--vocab-file gpt2-vocab.json --merge-file gpt2-merges.txt")), 50432);
  const ImportedLaunch other_file = with_model("--tokenizer-type GPT2BPETokenizer --vocab-file my-bpe.json");
  EXPECT_EQ(vocab_of(other_file), 50432);
  ASSERT_EQ(other_file.notes.size(), 1u);
  EXPECT_NE(other_file.notes.front().find("--vocab-file my-bpe.json"), std::string::npos) << other_file.notes.front();
  // 128256 over a multiple of 256.
  EXPECT_EQ(vocab_of(with_model("--tokenizer-type HuggingFaceTokenizer --tokenizer-model meta-llama/Meta-Llama-3-8B")),
            128256);
  EXPECT_EQ(vocab_of(with_model("--tokenizer-type HuggingFaceTokenizer --tokenizer-model mistralai/Mistral-7B-v0.1")),
            32000);
  // Megatron's tokenizers of a known size do not read --vocab-size: a note says so.
  const ImportedLaunch both = with_model("--tokenizer-type GPT2BPETokenizer --vocab-size 50304");
  EXPECT_EQ(vocab_of(both), 50432);
  ASSERT_EQ(both.notes.size(), 1u);
  EXPECT_NE(both.notes.front().find("--vocab-size 50304 is not read"), std::string::npos) << both.notes.front();
  // A tokenizer the import does not know: the error asks for plan import's --vocab-size, and that gives it.
  const std::string unknown =
      std::string(kShape) + "--tokenizer-type HuggingFaceTokenizer --tokenizer-model Qwen/Qwen2.5-7B\n";
  const std::string error = model_error(unknown);
  EXPECT_EQ(error.rfind("--vocab-size: ", 0), 0u) << error;
  EXPECT_NE(error.find("--tokenizer-model Qwen/Qwen2.5-7B"), std::string::npos) << error;
  EXPECT_NE(error.find("plan import --vocab-size N"), std::string::npos) << error;
  EXPECT_EQ(vocab_of(import_megatron(unknown, "train.sh", std::nullopt, true, 151665)), 151808);
  // It replaces a known one too, and the tokenizer's arguments count as read.
  const ImportedLaunch replaced = with_model("--tokenizer-type GPT2BPETokenizer --vocab-file gpt2-vocab.json", 32000);
  EXPECT_EQ(vocab_of(replaced), 32000);
  EXPECT_TRUE(replaced.ignored.empty()) << ::testing::PrintToString(replaced.ignored);
  // No tokenizer and no size at all.
  EXPECT_EQ(model_error(std::string(kShape) + "\n").rfind("--vocab-size: ", 0), 0u);
}

/// The plan and the model a sample script imports to, resolved on one shipped DGX H100 with the imported
/// model and with the shipped one.
void resolves_on_a_dgx_h100(const ImportedLaunch& imported, const std::string& shipped_model) {
  const topology::Cluster cluster = topology::load_topology_file(repo_path(testing::kDgxH100));
  const model::Model model = model::load_model(YamlDocument::parse(imported.model_yaml, "model.yaml").root());
  EXPECT_NO_THROW((void)plan::resolve_plan(imported_spec(imported), cluster, model)) << imported.plan_yaml;
  EXPECT_NO_THROW((void)plan::resolve_plan(imported_spec(imported), cluster,
                                           model::load_model_file(repo_path(shipped_model))))
      << imported.plan_yaml;
}

// tests/data/launch/train_gpt_1.3b_bpe.sh: GPT-2's tokenizer files and both attention switches, as most GPT
// scripts have them. It imports, and the plan resolves on another cluster than the script's two nodes.
TEST(MegatronImport, AGptScriptWithBpeFilesAndBothAttentionSwitches) {
  const std::string file = repo_path("tests/data/launch/train_gpt_1.3b_bpe.sh");
  const ImportedLaunch imported = import_megatron(read_text_file(file), file, std::nullopt, true);
  EXPECT_EQ(imported.gpus, 16);
  EXPECT_EQ(vocab_of(imported), 50432);  // 50257 to a multiple of 128 x tensor 2
  const plan::PlanSpec spec = imported_spec(imported);
  EXPECT_EQ(spec.attention, plan::AttentionKernel::Flash);
  EXPECT_EQ(spec.degrees[plan::Axis::Tensor], 2);
  EXPECT_FALSE(spec.written(plan::Axis::Data));
  EXPECT_EQ(spec.global_batch, 512);
  ASSERT_EQ(imported.notes.size(), 1u);  // the attention switches'
  EXPECT_NE(imported.notes.front().find("--use-flash-attn"), std::string::npos);
  resolves_on_a_dgx_h100(imported, "configs/models/gpt3-1.3b.yaml");
}

// tests/data/launch/train_llama3_8b_hf.sh: a HuggingFace tokenizer by its Hub name.
TEST(MegatronImport, ALlamaScriptWithAHuggingFaceTokenizer) {
  const std::string file = repo_path("tests/data/launch/train_llama3_8b_hf.sh");
  const ImportedLaunch imported = import_megatron(read_text_file(file), file, std::nullopt, true);
  EXPECT_EQ(imported.gpus, 32);
  EXPECT_EQ(vocab_of(imported), 128512);  // 128256 to a multiple of 128 x tensor 4
  EXPECT_NE(imported.model_yaml.find("vocab: 128512   # train_llama3_8b_hf.sh:"), std::string::npos)
      << imported.model_yaml;
  EXPECT_TRUE(imported.notes.empty()) << ::testing::PrintToString(imported.notes);
  const plan::PlanSpec spec = imported_spec(imported);
  EXPECT_EQ(spec.recompute, plan::Recompute::Selective);
  EXPECT_FALSE(spec.written(plan::Axis::Data));
  resolves_on_a_dgx_h100(imported, testing::kLlama8b);
}

}  // namespace
}  // namespace mpsim::interop
