// The checks each framework runs on its configuration before it trains, as a table of rules that the
// exports must pass: an export that a framework refuses at startup (or quietly runs otherwise than the
// plan says) is the failure a user meets first. Each rule names the file and function it comes from;
// they were read at Megatron-LM d98e8a6 and Megatron-Bridge 067f987 (both August 2026), and the rules
// are restated in words, not copied. The exports checked are export_rule_cases.h's: every shipped plan's
// that the target can express (one it cannot is refused with an InputError, which is the export's job),
// the planner's first plan for Llama-3 70B on 64 H100 (Megatron FSDP beside tensor and context
// parallelism: the launch users reported) and a few more Megatron FSDP plans.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "interop/formats/shell_script.h"
#include "sim/core/input_error.h"
#include "sim/core/yaml_field.h"
#include "tests/unit/interop/export/export_rule_cases.h"

namespace mpsim::interop {
namespace {

using testing::ExportCase;
using testing::ResolvedPlan;
using testing::export_or_refusal;
using testing::resolve;

// ---- A Megatron-LM launch, as pretrain_gpt.py and the environment see it ----------------------------

struct MegatronLaunch {
  std::map<std::string, std::vector<std::string>, std::less<>> args;  ///< argparse keeps the last
  /// CUDA_DEVICE_MAX_CONNECTIONS as the script leaves it; nullopt: unset (the launching shell is
  /// taken to set nothing, which is why an FSDP script unsets it rather than relying on that).
  std::optional<std::string> max_connections;
  std::int64_t world_size = 0;

  [[nodiscard]] bool has(std::string_view flag) const { return args.contains(flag); }
  [[nodiscard]] std::optional<std::string> value(std::string_view flag) const {
    const auto it = args.find(flag);
    if (it == args.end() || it->second.empty()) return std::nullopt;
    return it->second.front();
  }
  [[nodiscard]] std::int64_t integer(std::string_view flag, std::int64_t fallback) const {
    const auto v = value(flag);
    return v ? std::stoll(*v) : fallback;
  }
  [[nodiscard]] std::int64_t tensor() const { return integer("--tensor-model-parallel-size", 1); }
  [[nodiscard]] std::int64_t pipeline() const { return integer("--pipeline-model-parallel-size", 1); }
  [[nodiscard]] std::int64_t context() const { return integer("--context-parallel-size", 1); }
  [[nodiscard]] std::int64_t data() const { return world_size / (tensor() * pipeline() * context()); }
  [[nodiscard]] bool fsdp() const { return has("--use-megatron-fsdp"); }
};

MegatronLaunch read_megatron(const std::string& script) {
  MegatronLaunch launch;
  // The environment: the script's own export or unset (the lines the export writes).
  std::istringstream lines(script);
  for (std::string line; std::getline(lines, line);) {
    constexpr std::string_view kExport = "export CUDA_DEVICE_MAX_CONNECTIONS=";
    if (line.rfind(kExport, 0) == 0) launch.max_connections = line.substr(kExport.size());
    if (line == "unset CUDA_DEVICE_MAX_CONNECTIONS") launch.max_connections.reset();
  }
  for (const ShellCommand& command : read_shell_commands(script, "launch.sh")) {
    const auto script_at = std::find_if(command.words.begin(), command.words.end(),
                                        [](const ShellWord& w) { return w.text == "pretrain_gpt.py"; });
    if (script_at == command.words.end()) continue;
    std::int64_t nodes = 1;
    std::int64_t per_node = 1;
    for (auto w = command.words.begin(); w + 1 < script_at; ++w) {
      if (w->text == "--nnodes") nodes = std::stoll((w + 1)->text);
      if (w->text == "--nproc_per_node") per_node = std::stoll((w + 1)->text);
    }
    launch.world_size = nodes * per_node;
    std::string flag;
    for (auto w = script_at + 1; w != command.words.end(); ++w) {
      if (w->text.rfind("--", 0) == 0) {
        flag = w->text;
        launch.args[flag].clear();
      } else if (!flag.empty()) {  // a flag's values run to the next flag; a switch has none
        launch.args[flag].push_back(w->text);
      }
    }
  }
  return launch;
}

struct MegatronRule {
  std::string_view source;  ///< the Megatron-LM file and function that enforces it
  std::string_view rule;    ///< the rule in words
  bool (*holds)(const MegatronLaunch&);
};

constexpr std::string_view kValidateArgs = "megatron/training/arguments.py validate_args";

constexpr std::string_view kOptimizerConfig = "megatron/core/optimizer/optimizer_config.py OptimizerConfig.__post_init__";

const MegatronRule kMegatronRules[] = {
    {kValidateArgs, "Megatron FSDP needs CUDA_DEVICE_MAX_CONNECTIONS unset or above 1",
     [](const MegatronLaunch& l) { return !l.fsdp() || l.max_connections.value_or("") != "1"; }},
    {kValidateArgs, "Megatron FSDP (version 1, the default) runs the distributed optimizer (validate_args turns it "
                    "on; docs/user-guide/features/megatron_fsdp.md lists --use-distributed-optimizer)",
     [](const MegatronLaunch& l) { return !l.fsdp() || l.has("--use-distributed-optimizer"); }},
    {kValidateArgs, "Megatron FSDP needs --ckpt-format fsdp_dtensor, and fsdp_dtensor needs Megatron FSDP",
     [](const MegatronLaunch& l) { return l.fsdp() == (l.value("--ckpt-format") == "fsdp_dtensor"); }},
    {kValidateArgs, "Megatron FSDP runs only the adam and sgd optimizers",
     [](const MegatronLaunch& l) {
       const std::string optimizer = l.value("--optimizer").value_or("adam");
       return !l.fsdp() || optimizer == "adam" || optimizer == "sgd";
     }},
    {"the required flags of Megatron-LM's January 2026 FSDP user guide (docs/discussions/megatron-fsdp-user-guide, "
     "commit 55103f9); validate_args warns that TE must support fused accumulation into sharded gradients, and the "
     "guide that replaced it makes fusion the default: a safe choice of the export rather than a refusal",
     "Megatron FSDP sharding gradients runs with --no-gradient-accumulation-fusion",
     [](const MegatronLaunch& l) { return !l.fsdp() || l.has("--no-gradient-accumulation-fusion"); }},
    {kValidateArgs, "tensor or context parallelism without FSDP (on Hopper and earlier) needs "
                    "CUDA_DEVICE_MAX_CONNECTIONS=1",
     [](const MegatronLaunch& l) {
       const bool model_parallel = l.tensor() > 1 || l.context() > 1;
       return !model_parallel || l.fsdp() || l.has("--overlap-moe-expert-parallel-comm") ||
              l.max_connections == "1";
     }},
    {kValidateArgs, "the world size is a multiple of tensor x pipeline x context",
     [](const MegatronLaunch& l) { return l.world_size % (l.tensor() * l.pipeline() * l.context()) == 0; }},
    {kValidateArgs, "without a layout or uneven first and last stages, num_layers is a multiple of the pipeline size",
     [](const MegatronLaunch& l) {
       if (l.has("--pipeline-model-parallel-layout") || l.has("--decoder-first-pipeline-num-layers") ||
           l.has("--decoder-last-pipeline-num-layers"))
         return true;
       return l.integer("--num-layers", 0) % l.pipeline() == 0;
     }},
    {kValidateArgs, "the layers of a pipeline stage are a multiple of --num-layers-per-virtual-pipeline-stage",
     [](const MegatronLaunch& l) {
       if (!l.has("--num-layers-per-virtual-pipeline-stage")) return true;
       const std::int64_t per_stage = l.integer("--num-layers", 0) / l.pipeline();
       return per_stage % l.integer("--num-layers-per-virtual-pipeline-stage", 1) == 0;
     }},
    {"megatron/core/num_microbatches_calculator.py ConstantNumMicroBatchesCalculator",
     "the global batch is a multiple of micro batch x data-parallel size",
     [](const MegatronLaunch& l) {
       return l.integer("--global-batch-size", 0) % (l.integer("--micro-batch-size", 1) * l.data()) == 0;
     }},
    {"megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__ (validate_args turns it off at "
     "tensor 1 instead)",
     "sequence parallelism needs tensor parallelism",
     [](const MegatronLaunch& l) { return !l.has("--sequence-parallel") || l.tensor() > 1; }},
    {kValidateArgs, "--tp-comm-overlap needs --sequence-parallel",
     [](const MegatronLaunch& l) { return !l.has("--tp-comm-overlap") || l.has("--sequence-parallel"); }},
    {kValidateArgs, "--overlap-param-gather needs the distributed optimizer, Megatron FSDP or dist_muon, and "
                    "--overlap-grad-reduce",
     [](const MegatronLaunch& l) {
       if (!l.has("--overlap-param-gather")) return true;
       const bool sharded = l.has("--use-distributed-optimizer") || l.fsdp() || l.value("--optimizer") == "dist_muon";
       return sharded && l.has("--overlap-grad-reduce");
     }},
    {kValidateArgs, "--fp8-param-gather needs the distributed optimizer or Megatron FSDP",
     [](const MegatronLaunch& l) {
       return !l.has("--fp8-param-gather") || l.has("--use-distributed-optimizer") || l.fsdp();
     }},
    {kValidateArgs, "expert parallelism needs --num-experts, a multiple of the expert-parallel size",
     [](const MegatronLaunch& l) {
       const std::int64_t expert = l.integer("--expert-model-parallel-size", 1);
       return expert == 1 || (l.has("--num-experts") && l.integer("--num-experts", 0) % expert == 0);
     }},
    {"megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__",
     "num_attention_heads is a multiple of the tensor size",
     [](const MegatronLaunch& l) { return l.integer("--num-attention-heads", 0) % l.tensor() == 0; }},
    {"megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__",
     "num_query_groups is a multiple of the tensor size, or the tensor size a multiple of it",
     [](const MegatronLaunch& l) {
       const std::int64_t groups = l.integer("--num-query-groups", l.integer("--num-attention-heads", 1));
       return groups % l.tensor() == 0 || l.tensor() % groups == 0;
     }},
    {kValidateArgs, "with context parallelism, seq_length is a multiple of 2 x the context size",
     [](const MegatronLaunch& l) { return l.context() == 1 || l.integer("--seq-length", 0) % (2 * l.context()) == 0; }},
    {"megatron/training/argument_utils.py core_transformer_config_from_args",
     "a --rope-type other than rope needs --multi-latent-attention",
     [](const MegatronLaunch& l) {
       return l.value("--rope-type").value_or("rope") == "rope" || l.has("--multi-latent-attention");
     }},
    {"megatron/core/transformer/transformer_config.py MLATransformerConfig.__post_init__ (rope fusion is on unless "
     "--no-rope-fusion; without --rope-type latent attention takes yarn)",
     "latent attention with fused RoPE needs rope_type yarn",
     [](const MegatronLaunch& l) {
       return !l.has("--multi-latent-attention") || l.has("--no-rope-fusion") ||
              l.value("--rope-type").value_or("yarn") == "yarn";
     }},
    {"megatron/training/arguments.py validate_args (MTP validation)",
     "multi-token prediction needs position_embedding_type rope or none",
     [](const MegatronLaunch& l) {
       const std::string positions = l.value("--position-embedding-type").value_or("learned_absolute");
       return l.integer("--mtp-num-layers", 0) == 0 || positions == "rope" || positions == "none";
     }},
    {"megatron/core/transformer/transformer_config.py:1901-1932 TransformerConfig.__post_init__",
     "under --recompute-granularity full, --recompute-method is uniform or block and --recompute-num-layers is "
     "given; under selective, neither",
     [](const MegatronLaunch& l) {
       const std::optional<std::string> granularity = l.value("--recompute-granularity");
       const std::optional<std::string> method = l.value("--recompute-method");
       if (granularity == "full") return (method == "uniform" || method == "block") && l.has("--recompute-num-layers");
       return !method && !l.has("--recompute-num-layers");
     }},
    {"megatron/core/recompute.py:157-166 checkpointed_forward (uniform)",
     "--recompute-num-layers is at least 1 (uniform steps through the layers by it)",
     [](const MegatronLaunch& l) { return l.integer("--recompute-num-layers", 1) >= 1; }},
    {"megatron/training/arguments.py validate_args (activation recomputing) and "
     "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__",
     "--distribute-saved-activations needs tensor parallelism, --recompute-granularity full with a method, and no "
     "--sequence-parallel",
     [](const MegatronLaunch& l) {
       return !l.has("--distribute-saved-activations") ||
              (l.tensor() > 1 && l.value("--recompute-granularity") == "full" && l.has("--recompute-method") &&
               !l.has("--sequence-parallel"));
     }},
    {kOptimizerConfig, "--exp-avg-dtype and --exp-avg-sq-dtype are fp32, fp16, bf16 or fp8 (argparse's choices), and "
                       "other than fp32 only with --use-precision-aware-optimizer",
     [](const MegatronLaunch& l) {
       for (const std::string_view flag : {"--exp-avg-dtype", "--exp-avg-sq-dtype"}) {
         const std::string dtype = l.value(flag).value_or("fp32");
         if (dtype != "fp32" && dtype != "fp16" && dtype != "bf16" && dtype != "fp8") return false;
         if (dtype != "fp32" && !l.has("--use-precision-aware-optimizer")) return false;
       }
       return true;
     }},
    {kOptimizerConfig, "--use-precision-aware-optimizer only with adam",
     [](const MegatronLaunch& l) {
       return !l.has("--use-precision-aware-optimizer") || l.value("--optimizer").value_or("adam") == "adam";
     }},
};

// ---- A Megatron-Bridge override file ------------------------------------------------------------------

struct BridgeConfig {
  YamlDocument doc;
  std::int64_t world_size = 0;

  [[nodiscard]] std::optional<Field> field(std::string_view section, std::string_view key) const {
    const auto s = doc.root().get(section);
    if (!s) return std::nullopt;
    const auto f = s->get(key);
    if (!f || f->is_null()) return std::nullopt;
    return f;
  }
  [[nodiscard]] bool flag(std::string_view section, std::string_view key) const {
    const auto f = field(section, key);
    return f && f->as_bool();
  }
  [[nodiscard]] std::int64_t integer(std::string_view section, std::string_view key, std::int64_t fallback) const {
    const auto f = field(section, key);
    return f ? f->as_int() : fallback;
  }
  [[nodiscard]] std::string text(std::string_view section, std::string_view key) const {
    const auto f = field(section, key);
    return f ? f->as_string() : std::string();
  }
  [[nodiscard]] std::int64_t tensor() const { return integer("model", "tensor_model_parallel_size", 1); }
  [[nodiscard]] std::int64_t pipeline() const { return integer("model", "pipeline_model_parallel_size", 1); }
  [[nodiscard]] std::int64_t context() const { return integer("model", "context_parallel_size", 1); }
  [[nodiscard]] bool fsdp() const { return flag("ddp", "use_megatron_fsdp") || flag("dist", "use_megatron_fsdp"); }
};

struct BridgeRule {
  std::string_view source;
  std::string_view rule;
  bool (*holds)(const BridgeConfig&);
};

constexpr std::string_view kBridgeValidate =
    "src/megatron/bridge/training/config.py ConfigContainer.validate / _validate_and_apply_megatron_fsdp_v1_configs";
constexpr std::string_view kTransformerConfig =
    "megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__";

const BridgeRule kBridgeRules[] = {
    {kBridgeValidate, "ddp.use_megatron_fsdp and dist.use_megatron_fsdp agree (Bridge sets both)",
     [](const BridgeConfig& c) { return c.flag("ddp", "use_megatron_fsdp") == c.flag("dist", "use_megatron_fsdp"); }},
    {kBridgeValidate, "Megatron FSDP (version 1) runs the distributed optimizer: ddp and optimizer "
                      "use_distributed_optimizer are true (Bridge turns them on, so false states another launch)",
     [](const BridgeConfig& c) {
       return !c.fsdp() ||
              (c.flag("ddp", "use_distributed_optimizer") && c.flag("optimizer", "use_distributed_optimizer"));
     }},
    {"src/megatron/bridge/training/config.py _validate_and_sync_distributed_optimizer_settings",
     "ddp.use_distributed_optimizer and optimizer.use_distributed_optimizer agree",
     [](const BridgeConfig& c) {
       return c.flag("ddp", "use_distributed_optimizer") == c.flag("optimizer", "use_distributed_optimizer");
     }},
    {kBridgeValidate, "Megatron FSDP saves and loads only checkpoint.ckpt_format fsdp_dtensor",
     [](const BridgeConfig& c) { return !c.fsdp() || c.text("checkpoint", "ckpt_format") == "fsdp_dtensor"; }},
    {kBridgeValidate, "Megatron FSDP turns ddp.average_in_collective off (unless symmetric registration is "
                      "disabled), so the file says false",
     [](const BridgeConfig& c) {
       const auto f = c.field("ddp", "average_in_collective");
       return !c.fsdp() || (f && !f->as_bool());
     }},
    {"megatron/training/arguments.py validate_args and megatron/core/num_microbatches_calculator.py",
     "the global batch is a multiple of micro batch x data-parallel size",
     [](const BridgeConfig& c) {
       const std::int64_t data = c.world_size / (c.tensor() * c.pipeline() * c.context());
       return c.integer("train", "global_batch_size", 0) % (c.integer("train", "micro_batch_size", 1) * data) == 0;
     }},
    {"megatron/core/model_parallel_config.py ModelParallelConfig.__post_init__",
     "sequence_parallel needs tensor_model_parallel_size > 1",
     [](const BridgeConfig& c) { return !c.flag("model", "sequence_parallel") || c.tensor() > 1; }},
    {"src/megatron/bridge/training/comm_overlap.py CommOverlapConfig (turns tp_comm_overlap off otherwise)",
     "comm_overlap.tp_comm_overlap needs model.sequence_parallel",
     [](const BridgeConfig& c) {
       return !c.flag("comm_overlap", "tp_comm_overlap") || c.flag("model", "sequence_parallel");
     }},
    {kTransformerConfig, "without a layout or uneven first and last stages, num_layers is a multiple of the "
                         "pipeline size, and the layers of a stage a multiple of the virtual size",
     [](const BridgeConfig& c) {
       if (c.field("model", "pipeline_model_parallel_layout") ||
           c.field("model", "num_layers_in_first_pipeline_stage") || c.field("model", "num_layers_in_last_pipeline_stage"))
         return true;
       const std::int64_t layers = c.integer("model", "num_layers", 0);
       if (layers % c.pipeline() != 0) return false;
       return (layers / c.pipeline()) % c.integer("model", "virtual_pipeline_model_parallel_size", 1) == 0;
     }},
    {kTransformerConfig, "num_attention_heads is a multiple of the tensor size",
     [](const BridgeConfig& c) { return c.integer("model", "num_attention_heads", 0) % c.tensor() == 0; }},
    {kTransformerConfig, "num_query_groups is a multiple of the tensor size, or the tensor size a multiple of it",
     [](const BridgeConfig& c) {
       const std::int64_t groups = c.integer("model", "num_query_groups", c.integer("model", "num_attention_heads", 1));
       return groups % c.tensor() == 0 || c.tensor() % groups == 0;
     }},
    {"megatron/core/transformer/moe/moe_layer.py MoELayer (and validate_args for Megatron-LM)",
     "num_moe_experts is a multiple of expert_model_parallel_size",
     [](const BridgeConfig& c) {
       const std::int64_t expert = c.integer("model", "expert_model_parallel_size", 1);
       return expert == 1 || c.integer("model", "num_moe_experts", 0) % expert == 0;
     }},
    {"megatron/core/transformer/transformer_config.py MLATransformerConfig.__post_init__ (the recipe's "
     "apply_rope_fusion survives the merge unless the file states it)",
     "latent attention with rope_type rope states apply_rope_fusion false",
     [](const BridgeConfig& c) {
       if (!c.flag("model", "multi_latent_attention") || c.text("model", "rope_type") != "rope") return true;
       const auto f = c.field("model", "apply_rope_fusion");
       return f && !f->as_bool();
     }},
    {"the recipe's own dispatcher survives the merge otherwise (recipes/qwen/h100/qwen3_moe.py sets alltoall, "
     "and flex in its DeepEP variants)",
     "an MoE model states moe_token_dispatcher_type",
     [](const BridgeConfig& c) {
       return !c.field("model", "num_moe_experts") || !c.text("model", "moe_token_dispatcher_type").empty();
     }},
    {"megatron/core/transformer/transformer_config.py:1901-1932 TransformerConfig.__post_init__",
     "under recompute_granularity full, recompute_method is uniform or block and recompute_num_layers is set; under "
     "selective, neither",
     [](const BridgeConfig& c) {
       const std::string granularity = c.text("model", "recompute_granularity");
       const std::string method = c.text("model", "recompute_method");
       const bool layers = c.field("model", "recompute_num_layers").has_value();
       if (granularity == "full") return (method == "uniform" || method == "block") && layers;
       return method.empty() && !layers;
     }},
    {"megatron/core/transformer/transformer_config.py TransformerConfig.__post_init__",
     "distribute_saved_activations only under recompute_granularity full and without sequence_parallel",
     [](const BridgeConfig& c) {
       return !c.flag("model", "distribute_saved_activations") ||
              (c.text("model", "recompute_granularity") == "full" && !c.flag("model", "sequence_parallel"));
     }},
    {"megatron/core/optimizer/optimizer_config.py OptimizerConfig.__post_init__ and Megatron-Bridge's str_to_dtype "
     "(src/megatron/bridge/utils/activation_map.py), which turns an override's string back into a torch.dtype",
     "optimizer.exp_avg_dtype and exp_avg_sq_dtype name a dtype str_to_dtype knows (torch.float32, torch.bfloat16, "
     "torch.float16), other than torch.float32 only with optimizer.use_precision_aware_optimizer",
     [](const BridgeConfig& c) {
       for (const std::string_view key : {"exp_avg_dtype", "exp_avg_sq_dtype"}) {
         const std::string dtype = c.text("optimizer", key);
         if (dtype.empty()) continue;
         if (dtype != "torch.float32" && dtype != "torch.bfloat16" && dtype != "torch.float16") return false;
         if (dtype != "torch.float32" && !c.flag("optimizer", "use_precision_aware_optimizer")) return false;
       }
       return true;
     }},
};

class FrameworkRules : public ::testing::TestWithParam<ExportCase> {};

TEST_P(FrameworkRules, MegatronLmAcceptsTheScript) {
  const ResolvedPlan r = resolve(GetParam());
  const std::optional<std::string> script = export_or_refusal(r, Framework::Megatron, GetParam().megatron_refuses);
  if (!script) return;
  const MegatronLaunch launch = read_megatron(*script);
  ASSERT_EQ(launch.world_size, r.plan.gpus()) << *script;
  testing::expect_every_rule_holds(kMegatronRules, launch, *script);
}

TEST_P(FrameworkRules, MegatronBridgeAcceptsTheOverrides) {
  const ResolvedPlan r = resolve(GetParam());
  const std::optional<std::string> yaml = export_or_refusal(r, Framework::Nemo, GetParam().bridge_refuses);
  if (!yaml) return;
  const BridgeConfig config{YamlDocument::parse(*yaml, "overrides.yaml"), r.plan.gpus()};
  testing::expect_every_rule_holds(kBridgeRules, config, *yaml);
}

INSTANTIATE_TEST_SUITE_P(Exports, FrameworkRules, ::testing::ValuesIn(testing::kExportCases),
                         [](const ::testing::TestParamInfo<ExportCase>& info) { return info.param.name; });

// The rules are not vacuous: the launches users reported fail the rules they broke.
TEST(FrameworkRuleTable, CatchesTheReportedLaunches) {
  const auto failed = [](const std::string& script) { return testing::failed_rules(kMegatronRules, read_megatron(script)); };
  const std::string fsdp_with_one_connection =
      "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
      "torchrun --nproc_per_node 8 --nnodes 8 pretrain_gpt.py --num-layers 80 --num-attention-heads 64 "
      "--tensor-model-parallel-size 2 --sequence-parallel --micro-batch-size 1 --global-batch-size 128 "
      "--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params --ckpt-format fsdp_dtensor\n";
  EXPECT_EQ(failed(fsdp_with_one_connection),
            (std::vector<std::string_view>{kMegatronRules[0].rule, kMegatronRules[1].rule, kMegatronRules[4].rule}));
  const std::string uneven_batch =
      "torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 30 --num-attention-heads 32 "
      "--pipeline-model-parallel-size 4 --micro-batch-size 3 --global-batch-size 16 --expert-model-parallel-size 4 "
      "--num-experts 6\n";
  EXPECT_EQ(failed(uneven_batch).size(), 3U);
  // Latent attention's plain RoPE beside the fused kernel; YaRN named without latent attention, and
  // multi-token prediction with learned positions.
  EXPECT_EQ(failed("torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 8 --num-attention-heads 8 "
                   "--multi-latent-attention --rope-type rope\n"),
            (std::vector<std::string_view>{kMegatronRules[19].rule}));
  EXPECT_EQ(failed("torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 8 --num-attention-heads 8 "
                   "--rope-type yarn --position-embedding-type learned_absolute --mtp-num-layers 1\n"),
            (std::vector<std::string_view>{kMegatronRules[18].rule, kMegatronRules[20].rule}));

  // Moments in bf16 without the precision-aware optimizer; the precision-aware optimizer with Muon;
  // distributed checkpoints beside sequence parallelism.
  const std::size_t megatron_rules = std::size(kMegatronRules);
  EXPECT_EQ(failed("export CUDA_DEVICE_MAX_CONNECTIONS=1\n"
                   "torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 8 --num-attention-heads 8 "
                   "--tensor-model-parallel-size 2 --sequence-parallel --recompute-granularity full "
                   "--recompute-method uniform --recompute-num-layers 1 --distribute-saved-activations\n"),
            (std::vector<std::string_view>{kMegatronRules[megatron_rules - 3].rule}));
  EXPECT_EQ(failed("torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 8 --num-attention-heads 8 "
                   "--exp-avg-dtype bf16\n"),
            (std::vector<std::string_view>{kMegatronRules[megatron_rules - 2].rule}));
  EXPECT_EQ(failed("torchrun --nproc_per_node 8 --nnodes 1 pretrain_gpt.py --num-layers 8 --num-attention-heads 8 "
                   "--use-precision-aware-optimizer --optimizer muon\n"),
            (std::vector<std::string_view>{kMegatronRules[megatron_rules - 1].rule}));
  const BridgeConfig uint8_moments{
      YamlDocument::parse("optimizer:\n  use_precision_aware_optimizer: true\n  exp_avg_dtype: torch.uint8\n",
                          "overrides.yaml"),
      8};
  EXPECT_FALSE(kBridgeRules[std::size(kBridgeRules) - 1].holds(uint8_moments));

  // The reported NeMo overrides: FSDP with the distributed optimizer off, no checkpoint format, no
  // average_in_collective, and an MoE model that leaves the recipe's dispatcher.
  const std::string reported_overrides =
      "model:\n  num_layers: 48\n  num_attention_heads: 32\n  num_moe_experts: 128\n  expert_model_parallel_size: 8\n"
      "train:\n  micro_batch_size: 1\n  global_batch_size: 256\n"
      "ddp:\n  use_distributed_optimizer: false\n  use_megatron_fsdp: true\n"
      "dist:\n  use_megatron_fsdp: true\n"
      "optimizer:\n  use_distributed_optimizer: false\n";
  const BridgeConfig config{YamlDocument::parse(reported_overrides, "overrides.yaml"), 64};
  const std::vector<std::string_view> bridge_failed = testing::failed_rules(kBridgeRules, config);
  EXPECT_EQ(bridge_failed, (std::vector<std::string_view>{kBridgeRules[1].rule, kBridgeRules[3].rule,
                                                          kBridgeRules[4].rule, kBridgeRules[13].rule}));
  const BridgeConfig plain_mla{
      YamlDocument::parse("model:\n  num_attention_heads: 8\n  multi_latent_attention: true\n  rope_type: rope\n",
                          "overrides.yaml"),
      8};
  EXPECT_FALSE(kBridgeRules[12].holds(plain_mla));
}

}  // namespace
}  // namespace mpsim::interop
