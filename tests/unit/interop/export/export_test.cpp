// What each target cannot express is an error at the plan field that holds it.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/core/input_error.h"
#include "tests/unit/interop/interop_test_support.h"

namespace mpsim::interop {
namespace {

using testing::ResolvedPlan;
using testing::kDgxH100;
using testing::kLlama8b;
using testing::spec_from;

/// The error an export throws: "field: message", or "<no error>".
std::string export_error(Framework target, const std::string& plan_yaml, const std::string& model = kLlama8b,
                         const std::string& topology = kDgxH100) {
  try {
    (void)ResolvedPlan(topology, model, spec_from(plan_yaml)).exported(target);
  } catch (const InputError& e) {
    return e.field() + ": " + e.message();
  }
  return "<no error>";
}

std::string megatron(const std::string& plan_yaml, const std::string& model = kLlama8b) {
  return ResolvedPlan(kDgxH100, model, spec_from(plan_yaml)).exported(Framework::Megatron);
}

TEST(MegatronExport, RefusesSchedulesMegatronDoesNotRun) {
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { pipeline: 2 }\nschedule: zb-h1\n").rfind("schedule: ", 0), 0u);
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { pipeline: 2 }\nschedule: gpipe\n").rfind("schedule: ", 0), 0u);
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { pipeline: 2 }\nschedule: 1f1b\n"), "<no error>");
}

TEST(MegatronExport, TheErrorPointsAtThePlanLine) {
  try {
    (void)ResolvedPlan(kDgxH100, kLlama8b, spec_from("parallelism: { pipeline: 2 }\nschedule: zb-h1\n"))
        .exported(Framework::Megatron);
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().file, "plan.yaml");
    EXPECT_EQ(e.where().line, 2);
  }
}

TEST(MegatronExport, OverlapsNeedWhatMegatronAssertsForThem) {
  EXPECT_EQ(export_error(Framework::Megatron, "overlap: { param_gather: true }\nzero: 1\n").rfind("overlap.param_gather: ", 0), 0u);
  EXPECT_EQ(export_error(Framework::Megatron, "overlap: { param_gather: true, grad_reduce: true }\nzero: 1\n"), "<no error>");
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { tensor: 2 }\noverlap: { tensor_comm: true }\n")
                .rfind("overlap.tensor_comm: ", 0),
            0u);
}

TEST(MegatronExport, AnUnevenSplitIsWrittenAsFirstAndLastStageLayersOrALayout) {
  // Llama 3 8B has 32 blocks: 4 stages of 8 need no flag; 7 + 9 + 9 + 7 name the ends; 10 + 6 + 8 + 8 a layout.
  EXPECT_EQ(megatron("parallelism: { pipeline: 4 }\n").find("pipeline-num-layers"), std::string::npos);
  const std::string ends = megatron("parallelism: { pipeline: 4 }\npartition: [0, 7, 16, 25, 32]\n");
  EXPECT_NE(ends.find("--decoder-first-pipeline-num-layers 7\n"), std::string::npos) << ends;
  EXPECT_NE(ends.find("--decoder-last-pipeline-num-layers 7\n"), std::string::npos) << ends;
  const std::string layout = megatron("parallelism: { pipeline: 4 }\npartition: [0, 10, 16, 24, 32]\n");
  EXPECT_NE(layout.find("--pipeline-model-parallel-layout \"Et*10|t*6|t*8|t*8L\"\n"), std::string::npos) << layout;
}

// The model's RoPE scaling is written where Megatron has the setting and refused where it has not:
// Megatron's defaults (no scaling; latent attention's YaRN with factor 40 and mscale_all_dim 0) train
// another Llama 3.1 or DeepSeek-V3.
TEST(MegatronExport, WritesTheModelsRopeScalingOrRefusesIt) {
  const std::string llama31 = megatron("{}\n", "configs/models/llama31-405b.yaml");
  EXPECT_NE(llama31.find("--rotary-base 500000\n    --use-rope-scaling\n    --rope-scaling-factor 8\n"), std::string::npos)
      << llama31;
  EXPECT_EQ(megatron("{}\n", "configs/models/llama3-70b.yaml").find("rope-scaling"), std::string::npos);
  const std::string deepseek = megatron("parallelism: { tensor: 8 }\n", "configs/models/deepseek-v3.yaml");
  EXPECT_NE(deepseek.find("--rope-type yarn\n    --rotary-scaling-factor 40\n    --mscale 1\n    --mscale-all-dim 1\n"),
            std::string::npos)
      << deepseek;
  // Kimi K2's beta_fast (1) is a Megatron-Bridge field only.
  EXPECT_EQ(export_error(Framework::Megatron, "parallelism: { tensor: 8 }\n", "configs/models/kimi-k2.yaml")
                .rfind("model.rope_scaling: ", 0),
            0u);
  const std::string kimi =
      ResolvedPlan(kDgxH100, "configs/models/kimi-k2.yaml", spec_from("parallelism: { tensor: 8 }\n")).exported(Framework::Nemo);
  EXPECT_NE(kimi.find("  rope_type: yarn\n  rotary_scaling_factor: 32\n  mscale: 1\n  mscale_all_dim: 1\n"
                      "  original_max_position_embeddings: 4096\n  beta_fast: 1\n  beta_slow: 1\n"),
            std::string::npos)
      << kimi;
  const std::string bridge_llama31 =
      ResolvedPlan(kDgxH100, "configs/models/llama31-405b.yaml", spec_from("{}\n")).exported(Framework::Nemo);
  EXPECT_NE(bridge_llama31.find("  rotary_base: 500000\n  rope_scaling: true\n  rope_scaling_factor: 8\n"),
            std::string::npos)
      << bridge_llama31;
}

TEST(MegatronExport, VirtualStagesAreLayersPerVirtualStage) {
  const std::string script = megatron("parallelism: { pipeline: 2, virtual_stages: 4 }\n");
  EXPECT_NE(script.find("--num-layers-per-virtual-pipeline-stage 4\n"), std::string::npos) << script;
}

TEST(MegatronExport, MoeLayersFollowMegatronsFrequencyArgument) {
  const std::string script = megatron("parallelism: { tensor: 8 }\n", "configs/models/deepseek-v3.yaml");
  EXPECT_NE(script.find("--moe-layer-freq \"([0]*3+[1]*58)\"\n"), std::string::npos) << script;
  EXPECT_NE(script.find("--multi-latent-attention\n"), std::string::npos);
}

// Megatron-LM's validate_args refuses Megatron FSDP with one CUDA connection and sets the
// distributed optimizer under it; the FSDP user guide's required flags add no fused accumulation.
TEST(MegatronExport, MegatronFsdpLaunchesWithWhatMegatronRequires) {
  const std::string script = megatron("parallelism: { tensor: 2 }\nsequence_parallel: true\nzero: 3\n");
  EXPECT_EQ(script.find("CUDA_DEVICE_MAX_CONNECTIONS=1"), std::string::npos) << script;
  EXPECT_NE(script.find("\nunset CUDA_DEVICE_MAX_CONNECTIONS\n"), std::string::npos) << script;
  EXPECT_NE(script.find("    --use-megatron-fsdp\n    --data-parallel-sharding-strategy optim_grads_params\n"
                        "    --use-distributed-optimizer\n    --no-gradient-accumulation-fusion\n"
                        "    --ckpt-format fsdp_dtensor\n"),
            std::string::npos)
      << script;
  // Without FSDP, tensor parallelism keeps its one connection.
  EXPECT_NE(megatron("parallelism: { tensor: 2 }\nzero: 1\n").find("\nexport CUDA_DEVICE_MAX_CONNECTIONS=1\n"),
            std::string::npos);
  // validate_args takes only Adam and SGD with Megatron FSDP; Muon stays with zero 1 (dist_muon).
  EXPECT_EQ(export_error(Framework::Megatron, "zero: 3\noptimizer: muon\n").rfind("optimizer: ", 0), 0u);
  EXPECT_EQ(export_error(Framework::Megatron, "zero: 1\noptimizer: muon\n"), "<no error>");
}

// The predicted peak is of tensors, the caching allocator's fragmentation beyond it: the script launches
// with expandable segments (without them a Megatron-Bridge run went out of memory from fragmentation),
// unless the allocator was set before it. The line runs in bash as the script's `set -euo pipefail` has it.
TEST(MegatronExport, LaunchesWithExpandableSegmentsUnlessTheAllocatorIsSet) {
  const std::string line = "export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}\n";
  for (const std::string plan : {"{}\n", "parallelism: { tensor: 2 }\nsequence_parallel: true\nzero: 3\n"}) {
    EXPECT_NE(megatron(plan).find("\n" + line), std::string::npos) << megatron(plan);
  }
  const auto allocator_setting = [&](const std::string& before) {
    const std::string command = "env -u PYTORCH_CUDA_ALLOC_CONF bash -c 'set -euo pipefail; " + before + line +
                                "printf %s \"$PYTORCH_CUDA_ALLOC_CONF\"'";
    std::string out;
    if (FILE* pipe = popen(command.c_str(), "r")) {
      char buffer[256];
      while (std::fgets(buffer, sizeof buffer, pipe) != nullptr) out += buffer;
      EXPECT_EQ(pclose(pipe), 0) << command;
    }
    return out;
  };
  EXPECT_EQ(allocator_setting(""), "expandable_segments:True");
  EXPECT_EQ(allocator_setting("export PYTORCH_CUDA_ALLOC_CONF=garbage_collection_threshold:0.8\n"),
            "garbage_collection_threshold:0.8");
}

// Megatron's defaults (rotary base 10000, epsilon 1e-5) would train another Llama-3 or Qwen3.
TEST(MegatronExport, WritesTheModelsRotaryBaseAndNormEpsilon) {
  const std::string llama = megatron("{}\n");
  EXPECT_NE(llama.find("    --rotary-base 500000\n    --norm-epsilon 1.0e-05\n"), std::string::npos) << llama;
  const std::string qwen = megatron("parallelism: { expert: 8 }\n", "configs/models/qwen3-30b-a3b.yaml");
  EXPECT_NE(qwen.find("    --rotary-base 1000000\n    --norm-epsilon 1.0e-06\n"), std::string::npos) << qwen;
  EXPECT_NE(qwen.find("    --untie-embeddings-and-output-weights\n"), std::string::npos) << qwen;
  EXPECT_NE(qwen.find("    --moe-token-dispatcher-type alltoall\n"), std::string::npos) << qwen;
  // Learned positions have no base.
  const std::string gpt = ResolvedPlan("topologies/4x-p4d.yaml", "configs/models/gpt3-13b.yaml", spec_from("{}\n"))
                              .exported(Framework::Megatron);
  EXPECT_EQ(gpt.find("--rotary-base"), std::string::npos) << gpt;
}

TEST(MegatronExport, AHandListedModelHasNoShapeArguments) {
  EXPECT_EQ(export_error(Framework::Megatron, "{}\n", "configs/models/mnist-cnn.yaml").rfind("model.layers: ", 0), 0u);
}

/// The plan field an export's error names ("schedule", "model.layers", ...), or "<no error>".
std::string error_field(Framework target, const std::string& plan_yaml, const std::string& model = kLlama8b,
                        const std::string& topology = kDgxH100) {
  const std::string error = export_error(target, plan_yaml, model, topology);
  return error.substr(0, error.find(':'));
}

constexpr const char* kMixtral = "configs/models/mixtral-8x7b.yaml";
constexpr const char* kUneven = "parallelism: { pipeline: 4 }\npartition: [0, 7, 16, 25, 32]\n";

TEST(NemoExport, NamesTheFieldItCannotExpress) {
  const Framework t = Framework::Nemo;
  EXPECT_EQ(error_field(t, "{}\n"), "<no error>");
  EXPECT_EQ(error_field(t, "{}\n", "configs/models/mnist-cnn.yaml"), "model.layers");
  EXPECT_EQ(error_field(t, "{}\n", "configs/models/t5-3b.yaml"), "model.family");
  EXPECT_EQ(error_field(t, "{}\n", "configs/models/gpt-oss-120b.yaml"), "model.attention_sinks");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nschedule: zb-h1\n"), "schedule");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nplacement: tp-pp-dp\n"), "placement");
  EXPECT_EQ(error_field(t, "precision: fp32\n"), "precision");
  EXPECT_EQ(error_field(t, "grad_reduce_in_fp32: false\n"), "grad_reduce_in_fp32");
  EXPECT_EQ(error_field(t, "zero: 1\nprecision_aware_optimizer: true\nexp_avg_dtype: fp8\n"), "exp_avg_dtype");
  EXPECT_EQ(error_field(t, "precision: fp8\nzero: 1\n"), "fp8_param_gather");
  EXPECT_EQ(error_field(t, "precision: fp8\nzero: 1\nfp8_param_gather: true\n"), "<no error>");
  EXPECT_EQ(error_field(t, "optimizer: muon\n"), "optimizer");
  EXPECT_EQ(error_field(t, "overlap: { param_gather: true }\nzero: 1\n"), "overlap.param_gather");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 2 }\noverlap: { tensor_comm: true }\n"), "overlap.tensor_comm");
}

// Megatron-Bridge's FSDP check (config.py _validate_and_apply_megatron_fsdp_v1_configs) runs the
// distributed optimizer, saves only fsdp_dtensor and turns averaging in the collective off.
TEST(NemoExport, MegatronFsdpOverridesAreTheOnesBridgeRuns) {
  const std::string yaml = ResolvedPlan(kDgxH100, "configs/models/llama3-70b.yaml",
                                        spec_from("parallelism: { tensor: 2 }\nsequence_parallel: true\nzero: 3\n"))
                               .exported(Framework::Nemo);
  EXPECT_NE(yaml.find("ddp:\n  use_distributed_optimizer: true\n  use_megatron_fsdp: true\n"
                      "  data_parallel_sharding_strategy: optim_grads_params\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("  average_in_collective: false\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("optimizer:\n  optimizer: adam\n  use_distributed_optimizer: true\n"
                      "  use_precision_aware_optimizer: false\n  exp_avg_dtype: torch.float32\n"
                      "  exp_avg_sq_dtype: torch.float32\n"),
            std::string::npos)
      << yaml;
  EXPECT_NE(yaml.find("\ncheckpoint:\n  ckpt_format: fsdp_dtensor\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  gradient_accumulation_fusion: false\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("  rotary_base: 500000\n  layernorm_epsilon: 1.0e-05\n"), std::string::npos) << yaml;
  // Without FSDP none of it is written.
  const std::string ddp = ResolvedPlan(kDgxH100, kLlama8b, spec_from("zero: 1\n")).exported(Framework::Nemo);
  EXPECT_EQ(ddp.find("checkpoint:"), std::string::npos) << ddp;
  EXPECT_EQ(ddp.find("average_in_collective"), std::string::npos) << ddp;
}

// The header names the recipe the file is merged into: the model's own where Megatron-Bridge has
// one, else one of the same architecture (never Llama-3 8B for an MoE model).
TEST(NemoExport, NamesTheModelsOwnRecipeAndTheMoeDispatcher) {
  const auto nemo = [](const char* model, const char* plan) {
    return ResolvedPlan(kDgxH100, model, spec_from(plan)).exported(Framework::Nemo);
  };
  const std::string qwen = nemo("configs/models/qwen3-30b-a3b.yaml", "{}\n");
  EXPECT_NE(qwen.find("# Recipe: qwen3_30b_a3b_pretrain_config (megatron.bridge.recipes.qwen), the model's own.\n"),
            std::string::npos)
      << qwen;
  EXPECT_EQ(qwen.find("llama3_8b"), std::string::npos) << qwen;
  // Written at expert size 1 too, so that the recipe's dispatcher does not survive the merge.
  EXPECT_NE(qwen.find("  moe_token_dispatcher_type: alltoall\n"), std::string::npos) << qwen;
  EXPECT_NE(qwen.find("  rotary_base: 1000000\n  layernorm_epsilon: 1.0e-06\n"), std::string::npos) << qwen;
  EXPECT_NE(nemo("configs/models/llama3-70b.yaml", "{}\n").find("--recipe llama3_70b_pretrain_config "),
            std::string::npos);
  EXPECT_NE(nemo(kMixtral, "{}\n").find("# Recipe: qwen3_30b_a3b_pretrain_config (megatron.bridge.recipes.qwen), the "
                                         "closest architecture (the model has none)"),
            std::string::npos);
  EXPECT_NE(nemo("configs/models/deepseek-v3.yaml", "parallelism: { tensor: 8 }\n").find("deepseek_v3_pretrain_config"),
            std::string::npos);
}

TEST(NemoExport, WritesTheMixedPrecisionPresetOfThePrecision) {
  const std::string fp8 = ResolvedPlan(kDgxH100, kLlama8b, spec_from("precision: fp8\nzero: 1\nfp8_param_gather: true\n"))
                              .exported(Framework::Nemo);
  EXPECT_NE(fp8.find("\nmixed_precision: bf16_with_fp8_current_scaling_mixed\n"), std::string::npos) << fp8;
  const std::string blockwise =
      ResolvedPlan(kDgxH100, kLlama8b, spec_from("precision: fp8-blockwise\n")).exported(Framework::Nemo);
  EXPECT_NE(blockwise.find("\nmixed_precision: bf16_with_fp8_subchannel_scaling_mixed\n"), std::string::npos);
  const std::string layout = ResolvedPlan(kDgxH100, kLlama8b, spec_from("parallelism: { pipeline: 4 }\npartition: [0, 10, 16, 24, 32]\n"))
                                 .exported(Framework::Nemo);
  EXPECT_NE(layout.find("  pipeline_model_parallel_layout: \"Et*10|t*6|t*8|t*8L\"\n"), std::string::npos) << layout;
  // The flex token dispatcher and its backend, in the model section as Megatron-Bridge reads them.
  const std::string flex = ResolvedPlan(kDgxH100, kMixtral,
                                        spec_from("parallelism: { expert: 8 }\nmoe_token_dispatcher_type: flex\n"
                                                  "moe_flex_dispatcher_backend: hybridep\nmoe_hybridep_num_sms: 32\n"))
                               .exported(Framework::Nemo);
  EXPECT_NE(flex.find("  moe_token_dispatcher_type: flex\n  moe_flex_dispatcher_backend: hybridep\n"
                      "  moe_hybridep_num_sms: 32\n"),
            std::string::npos)
      << flex;
}

TEST(DeepSpeedExport, NamesTheFieldItCannotExpress) {
  const Framework t = Framework::DeepSpeed;
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nzero: 1\n"), "<no error>");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2, virtual_stages: 2 }\n"), "virtual_stages");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nschedule: gpipe\n"), "schedule");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nschedule: dualpipev\nbatch: { global: 64 }\n"),
            "virtual_stages");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nzero: 2\n"), "zero");
  EXPECT_EQ(error_field(t, kUneven), "partition");
  EXPECT_EQ(error_field(t, "precision: fp8\n"), "precision");
  EXPECT_EQ(error_field(t, "parallelism: { context: 2 }\n"), "context");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 2 }\nsequence_parallel: true\n"), "sequence_parallel");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 2 }\noverlap: { tensor_comm: true }\n"), "overlap.tensor_comm");
  EXPECT_EQ(error_field(t, "parallelism: { expert: 8 }\n", kMixtral), "expert");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 2, expert_tensor: 1 }\n", kMixtral), "expert_tensor");
  EXPECT_EQ(error_field(t, "moe_expert_capacity_factor: 1.0\n", kMixtral), "moe_expert_capacity_factor");
  EXPECT_EQ(error_field(t, "zero: 1\nshard_groups: 2\n"), "shard_groups");
  EXPECT_EQ(error_field(t, "activation_offload_layers: 2\n"), "activation_offload_layers");
  EXPECT_EQ(error_field(t, "recompute: selective\n"), "<no error>");  // FlashAttention recomputes the scores
  EXPECT_EQ(error_field(t, "recompute: selective\nattention: standard\n"), "recompute");
  EXPECT_EQ(error_field(t, "overlap: { grad_reduce: true }\n"), "overlap.grad_reduce");
  EXPECT_EQ(error_field(t, "overlap: { grad_reduce: true, param_gather: true }\nzero: 1\n"), "overlap.param_gather");
  EXPECT_EQ(error_field(t, "overlap: { grad_reduce: true }\nzero: 3\n"), "overlap.param_gather");
  EXPECT_EQ(error_field(t, "overlap: { grad_reduce: true, param_gather: true }\nzero: 3\n"), "<no error>");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nplacement: tp-pp-dp\n"), "placement");
}

TEST(DeepSpeedExport, WritesJsonWhoseBatchSizesAgree) {
  const std::string text =
      ResolvedPlan(kDgxH100, kLlama8b, spec_from("parallelism: { tensor: 2, pipeline: 2 }\nbatch: { global: 64, micro: 2 }\n"))
          .exported(Framework::DeepSpeed);
  const nlohmann::json config = nlohmann::json::parse(text);
  EXPECT_EQ(config["train_batch_size"].get<int>(), config["train_micro_batch_size_per_gpu"].get<int>() *
                                                       config["gradient_accumulation_steps"].get<int>() * 2);
  EXPECT_EQ(config["pipeline"]["stages"], 2);
  EXPECT_EQ(config["tensor_parallel"]["autotp_size"], 2);
}

// Full recomputation's checkpoints split over the tensor ranks: DeepSpeed's partition_activations.
TEST(DeepSpeedExport, PartitionsTheCheckpointsAsThePlanDistributesThem) {
  const auto checkpointing = [](const std::string& yaml) {
    const std::string text = ResolvedPlan(kDgxH100, kLlama8b, spec_from(yaml)).exported(Framework::DeepSpeed);
    return nlohmann::json::parse(text)["activation_checkpointing"];
  };
  const std::string full = "parallelism: { tensor: 2 }\nrecompute: full\n";
  EXPECT_EQ(checkpointing(full)["partition_activations"], false);
  EXPECT_EQ(checkpointing(full + "distribute_saved_activations: true\n")["partition_activations"], true);
}

TEST(TorchTitanExport, NamesTheFieldItCannotExpress) {
  const Framework t = Framework::TorchTitan;
  EXPECT_EQ(error_field(t, "{}\n"), "<no error>");
  EXPECT_EQ(error_field(t, "zero: 1\n"), "zero");
  EXPECT_EQ(error_field(t, "zero: 3\nprecision_aware_optimizer: true\n"), "precision_aware_optimizer");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 2 }\n"), "sequence_parallel");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nschedule: zb-h1\n"), "schedule");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2, virtual_stages: 2 }\nbatch: { global: 64 }\n"
                           "microbatch_group_size_per_vp_stage: 4\n"),
            "microbatch_group_size");
  EXPECT_EQ(error_field(t, kUneven), "partition");
  EXPECT_EQ(error_field(t, "parallelism: { context: 2 }\ncp_comm_type: a2a\n"), "cp_comm_type");
  EXPECT_EQ(error_field(t, "parallelism: { expert: 8 }\n", kMixtral), "expert");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 4, expert: 2, expert_tensor: 2 }\nsequence_parallel: true\nzero: 3\n",
                        kMixtral),
            "expert_tensor");
  EXPECT_EQ(error_field(t, "parallelism: { expert: 8 }\nzero: 3\noverlap: { moe_expert_comm: true }\n", kMixtral),
            "overlap.moe_expert_comm");
  EXPECT_EQ(error_field(t, "parallelism: { expert: 8 }\nzero: 3\nmoe_token_dispatcher_type: flex\n", kMixtral),
            "moe_token_dispatcher_type");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nplacement: tp-pp-dp\n"), "placement");
  EXPECT_EQ(error_field(t, "optimizer: muon\n"), "optimizer");
  EXPECT_EQ(error_field(t, "moe_expert_capacity_factor: 1.0\n", kMixtral), "moe_expert_capacity_factor");
  EXPECT_EQ(error_field(t, "activation_offload_layers: 2\n"), "activation_offload_layers");
  EXPECT_EQ(error_field(t, "grad_reduce_in_fp32: false\n"), "grad_reduce_in_fp32");
  EXPECT_EQ(error_field(t, "precision: fp16\n"), "precision");
  EXPECT_EQ(error_field(t, "precision: fp8-blockwise\n"), "precision");
  EXPECT_EQ(error_field(t, "precision: fp8\nfp8_param_gather: true\nzero: 0\n"), "fp8_param_gather");
  EXPECT_EQ(error_field(t, "precision: fp8\nfp8_param_gather: true\nzero: 3\n"), "<no error>");
  EXPECT_EQ(error_field(t, "precision: mxfp8\nfp8_param_gather: true\nzero: 3\n", kLlama8b, "topologies/dgx-b200.yaml"),
            "fp8_param_gather");
  EXPECT_EQ(error_field(t, "recompute: selective\nrecompute_modules: [core_attn, mlp]\n"), "recompute");
}

// The flavor carries RoPE and the norms; the header names them, so that no default picks them.
TEST(TorchTitanExport, NamesTheRopeTheFlavorMustHave) {
  const std::string llama31 =
      ResolvedPlan(kDgxH100, "configs/models/llama31-405b.yaml", spec_from("{}\n")).exported(Framework::TorchTitan);
  EXPECT_NE(llama31.find("# rope_theta 500000, llama3 RoPE scaling factor 8 (low_freq_factor 1, high_freq_factor 4, "
                         "original context 8192), norm_eps 1e-05.\n"),
            std::string::npos)
      << llama31;
}

TEST(TorchTitanExport, MapsZeroToDdpOrFsdpAndTheScheduleByName) {
  const auto titan = [](const std::string& yaml) {
    return ResolvedPlan(kDgxH100, kLlama8b, spec_from(yaml)).exported(Framework::TorchTitan);
  };
  const std::string ddp = titan("{}\n");
  EXPECT_NE(ddp.find("\ndata_parallel_replicate_degree = 8\ndata_parallel_shard_degree = 1\n"), std::string::npos) << ddp;
  const std::string hsdp = titan("zero: 3\nshard_groups: 2\n");
  EXPECT_NE(hsdp.find("\ndata_parallel_replicate_degree = 2\ndata_parallel_shard_degree = 4\n"
                      "fsdp_reshard_after_forward = \"default\"\n"),
            std::string::npos)
      << hsdp;
  EXPECT_NE(titan("zero: 2\n").find("fsdp_reshard_after_forward = \"never\"\n"), std::string::npos);
  // Under pipelining FSDP2 holds whole weights and fp32 gradients over the microbatches: zero 1.
  const std::string zbv = titan("parallelism: { pipeline: 2 }\nschedule: zb-v\nbatch: { global: 64 }\nzero: 1\n");
  EXPECT_NE(zbv.find("pipeline_parallel_schedule = \"ZBVZeroBubble\"\n"), std::string::npos) << zbv;
  EXPECT_NE(zbv.find("pipeline_parallel_layers_per_stage = 8\n"), std::string::npos) << zbv;
  EXPECT_NE(zbv.find("data_parallel_shard_degree = 4\nfsdp_reshard_after_forward = \"default\"\n"), std::string::npos)
      << zbv;
  for (const char* sharded : {"zero: 2\n", "zero: 3\n"}) {
    EXPECT_EQ(error_field(Framework::TorchTitan,
                          std::string("parallelism: { pipeline: 2 }\nbatch: { global: 64 }\n") + sharded),
              "zero");
  }
  EXPECT_EQ(error_field(Framework::TorchTitan, "zero: 1\n"), "zero");
  // FSDP under a pipeline gathers FP8 weights as it does without one.
  const std::string fp8_gather = titan(
      "parallelism: { pipeline: 2 }\nbatch: { global: 64 }\nzero: 1\nprecision: fp8\nfp8_param_gather: true\n");
  EXPECT_NE(fp8_gather.find("enable_fsdp_float8_all_gather = true\n"), std::string::npos) << fp8_gather;
  EXPECT_EQ(error_field(Framework::TorchTitan, "precision: fp8\nfp8_param_gather: true\n"), "fp8_param_gather");
  const std::string fp8 = titan("precision: fp8\n");
  EXPECT_NE(fp8.find("converters = [\"quantize.linear.float8\"]\n"), std::string::npos) << fp8;
  EXPECT_NE(fp8.find("[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\n"), std::string::npos) << fp8;
  const std::string ring = titan("parallelism: { context: 2 }\n");
  EXPECT_NE(ring.find("context_parallel_rotate_method = \"alltoall\"\n"), std::string::npos) << ring;
}

TEST(SageMakerExport, NamesTheFieldItCannotExpress) {
  const Framework t = Framework::SageMaker;
  EXPECT_EQ(error_field(t, "partitions: 2\npipeline: simple\n"), "<no error>");
  EXPECT_EQ(error_field(t, "parallelism: { context: 2 }\n"), "context");
  EXPECT_EQ(error_field(t, "parallelism: { expert: 8 }\n", kMixtral), "expert");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2, virtual_stages: 2 }\n"), "virtual_stages");
  EXPECT_EQ(error_field(t, "parallelism: { pipeline: 2 }\nschedule: 1f1b\n"), "schedule");
  EXPECT_EQ(error_field(t, "precision: fp8\n"), "precision");
  EXPECT_EQ(error_field(t, "optimizer: muon\n"), "optimizer");
  EXPECT_EQ(error_field(t, "precision_aware_optimizer: true\n"), "precision_aware_optimizer");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 2 }\nsequence_parallel: true\n"), "sequence_parallel");
  EXPECT_EQ(error_field(t, "parallelism: { tensor: 2 }\noverlap: { tensor_comm: true }\n"), "overlap.tensor_comm");
  EXPECT_EQ(error_field(t, "zero: 2\n"), "zero");
  EXPECT_EQ(error_field(t, "zero: 1\nshard_groups: 2\n"), "shard_groups");
  EXPECT_EQ(error_field(t, "recompute: full\n"), "recompute");
  EXPECT_EQ(error_field(t, "activation_offload_layers: 2\n"), "activation_offload_layers");
  EXPECT_EQ(error_field(t, "moe_expert_capacity_factor: 1.0\n", kMixtral), "moe_expert_capacity_factor");
}

TEST(SageMakerExport, ThePlacementStrategyReadsBackToThePlacement) {
  for (const std::string strategy : {"cluster", "spread", "PTD", "TDP", "DTP", "PDT"}) {
    const ResolvedPlan first(kDgxH100, kLlama8b,
                             spec_from("partitions: 2\ntensor_parallel_degree: 2\npipeline: simple\nplacement_strategy: " +
                                       strategy + "\n"));
    const nlohmann::json distribution = nlohmann::json::parse(first.exported(Framework::SageMaker));
    const nlohmann::json& parameters = distribution["smdistributed"]["modelparallel"]["parameters"];
    EXPECT_EQ(parameters["placement_strategy"], strategy);
    const std::string written = parameters["placement_strategy"];
    const ResolvedPlan again(kDgxH100, kLlama8b,
                             spec_from("partitions: 2\ntensor_parallel_degree: 2\npipeline: simple\nplacement_strategy: " +
                                       written + "\n"));
    EXPECT_EQ(plan::complete_order(again.plan.placement), plan::complete_order(first.plan.placement)) << strategy;
  }
}

}  // namespace
}  // namespace mpsim::interop
