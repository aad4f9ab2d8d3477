// The checks TorchTitan runs on a job config before it trains, as a table of rules the TOML export must
// pass. Read at pytorch/torchtitan 238fa9953 (February 2026), the last commit whose jobs are TOML files
// (torchtitan/config/job_config.py; the commit after it moved the config to Python dataclasses); the
// schedule names are torch.distributed.pipelining's. Each rule names the file and function it comes
// from and restates it in words. The exports checked are export_rule_cases.h's.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "interop/formats/toml_values.h"
#include "tests/unit/interop/export/export_rule_cases.h"

namespace mpsim::interop {
namespace {

using testing::ExportCase;
using testing::ResolvedPlan;

/// A TorchTitan job as its trainer sees it: the TOML's settings with job_config.py's defaults for the
/// ones it leaves out, the world size torchrun gives it and the model's block count (n_layers, which
/// the TOML's [model] flavor sets).
struct TorchTitanJob {
  TomlValues toml;
  std::int64_t world_size = 0;
  std::int64_t layers = 0;

  [[nodiscard]] std::int64_t integer(std::string_view key, std::int64_t fallback) const {
    return toml.integer(key).value_or(fallback);
  }
  [[nodiscard]] std::string text(std::string_view key, std::string_view fallback) const {
    return toml.text(key).value_or(std::string(fallback));
  }
  [[nodiscard]] bool flag(std::string_view key) const { return toml.flag(key).value_or(false); }

  [[nodiscard]] std::int64_t replicate() const { return integer("parallelism.data_parallel_replicate_degree", 1); }
  [[nodiscard]] std::int64_t tensor() const { return integer("parallelism.tensor_parallel_degree", 1); }
  [[nodiscard]] std::int64_t pipeline() const { return integer("parallelism.pipeline_parallel_degree", 1); }
  [[nodiscard]] std::int64_t context() const { return integer("parallelism.context_parallel_degree", 1); }
  [[nodiscard]] std::int64_t expert() const { return integer("parallelism.expert_parallel_degree", 1); }
  [[nodiscard]] std::int64_t expert_tensor() const { return integer("parallelism.expert_tensor_parallel_degree", 1); }
  /// data_parallel_shard_degree, -1 (its default) filled as ParallelDims fills it.
  [[nodiscard]] std::int64_t shard() const {
    const std::int64_t shard = integer("parallelism.data_parallel_shard_degree", -1);
    const std::int64_t others = replicate() * context() * tensor() * pipeline();
    return shard >= 0 ? shard : others > 0 ? world_size / others : 0;
  }
  [[nodiscard]] std::int64_t local_batch() const { return integer("training.local_batch_size", 8); }
  [[nodiscard]] std::string schedule() const {
    std::string name = text("parallelism.pipeline_parallel_schedule", "1F1B");
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    return name;
  }
  /// Stages each pipeline rank builds (pipeline_llm): from pipeline_parallel_layers_per_stage when given,
  /// else 1 for a single-stage schedule and 2 for the others.
  [[nodiscard]] std::int64_t stages_per_rank() const {
    if (pipeline() < 1) return 0;  // the degree rule fails it
    const std::int64_t per_stage = integer("parallelism.pipeline_parallel_layers_per_stage", 0);
    if (per_stage <= 0) return single_stage() ? 1 : 2;
    const std::int64_t counted = layers + integer("parallelism.pipeline_parallel_first_stage_less_layers", 1) +
                                 integer("parallelism.pipeline_parallel_last_stage_less_layers", 1);
    return (counted + per_stage - 1) / per_stage / pipeline();
  }
  [[nodiscard]] std::int64_t virtual_stages() const {
    const std::int64_t per_stage = integer("parallelism.pipeline_parallel_layers_per_stage", 0);
    if (per_stage <= 0) return stages_per_rank() * pipeline();
    const std::int64_t counted = layers + integer("parallelism.pipeline_parallel_first_stage_less_layers", 1) +
                                 integer("parallelism.pipeline_parallel_last_stage_less_layers", 1);
    return (counted + per_stage - 1) / per_stage;
  }
  /// The schedule classes deriving from PipelineScheduleSingle (one stage per rank).
  [[nodiscard]] bool single_stage() const {
    const std::string s = schedule();
    return s == "1f1b" || s == "gpipe" || s == "pipelineschedulesingle";
  }
};

struct TorchTitanRule {
  std::string_view source;
  std::string_view rule;
  bool (*holds)(const TorchTitanJob&);
};

/// torch/distributed/pipelining/schedules.py get_schedule_class: the names it maps (compared lowercased).
constexpr std::array<std::string_view, 9> kTorchScheduleNames = {"gpipe",
                                                                 "1f1b",
                                                                 "interleaved1f1b",
                                                                 "loopedbfs",
                                                                 "interleavedzerobubble",
                                                                 "zbvzerobubble",
                                                                 "dualpipev",
                                                                 "pipelineschedulesingle",
                                                                 "pipelineschedulemulti"};
/// The model converters registered by name (torchtitan/components/quantization/float8.py and mx.py,
/// register_model_converter); protocols/model_converter.py ModelConvertersContainer looks each up.
constexpr std::array<std::string_view, 4> kConverters = {"quantize.linear.float8", "quantize.grouped_mm.float8",
                                                         "quantize.linear.mx", "quantize.grouped_mm.mx"};

bool is_one_of(std::string_view value, std::initializer_list<std::string_view> allowed) {
  return std::find(allowed.begin(), allowed.end(), value) != allowed.end();
}

const TorchTitanRule kTorchTitanRules[] = {
    {"torchtitan/distributed/parallel_dims.py:46-51 ParallelDims._validate",
     "every parallel degree is at least 1, except data_parallel_shard_degree, which may be -1 (fill)",
     [](const TorchTitanJob& j) {
       const std::int64_t shard = j.integer("parallelism.data_parallel_shard_degree", -1);
       return j.replicate() >= 1 && j.context() >= 1 && j.tensor() >= 1 && j.pipeline() >= 1 && j.expert() >= 1 &&
              j.expert_tensor() >= 1 && (shard == -1 || shard >= 1);
     }},
    {"torchtitan/distributed/parallel_dims.py:53 ParallelDims._validate",
     "replicate x shard x context x tensor x pipeline is the world size (shard -1 takes what is left)",
     [](const TorchTitanJob& j) {
       return j.shard() >= 1 && j.replicate() * j.shard() * j.context() * j.tensor() * j.pipeline() == j.world_size;
     }},
    {"torchtitan/distributed/parallel_dims.py:59 ParallelDims._validate",
     "with expert parallelism, expert_tensor_parallel_degree is the tensor degree or 1",
     [](const TorchTitanJob& j) {
       return j.expert() == 1 || j.expert_tensor() == j.tensor() || j.expert_tensor() == 1;
     }},
    {"torchtitan/distributed/parallel_dims.py:138 ParallelDims.build_mesh (the sparse mesh's efsdp size)",
     "expert x expert-tensor divides shard x context x tensor (the ranks the experts are spread over)",
     [](const TorchTitanJob& j) {
       const std::int64_t experts = j.expert() * j.expert_tensor();
       return experts >= 1 && (j.shard() * j.context() * j.tensor()) % experts == 0;
     }},
    {"torchtitan/train.py:202 Trainer.__init__ (verify batch sizes)",
     "global_batch_size (-1: local x data-parallel) is a multiple of local_batch_size x replicate x shard",
     [](const TorchTitanJob& j) {
       const std::int64_t per_step = j.local_batch() * j.replicate() * j.shard();
       const std::int64_t global = j.integer("training.global_batch_size", -1);
       return per_step > 0 && (global < 0 || (global > 0 && global % per_step == 0));
     }},
    {"torchtitan/distributed/pipeline_parallel.py:189 build_pipeline_schedule",
     "with a pipeline, local_batch_size is a multiple of pipeline_parallel_microbatch_size",
     [](const TorchTitanJob& j) {
       const std::int64_t micro = j.integer("parallelism.pipeline_parallel_microbatch_size", 1);
       return j.pipeline() == 1 || (micro >= 1 && j.local_batch() % micro == 0);
     }},
    {"torch/distributed/pipelining/schedules.py get_schedule_class (called by pipeline_llm and "
     "build_pipeline_schedule)",
     "pipeline_parallel_schedule names one of torch's schedule classes (any case)",
     [](const TorchTitanJob& j) {
       return j.pipeline() == 1 || std::find(kTorchScheduleNames.begin(), kTorchScheduleNames.end(), j.schedule()) !=
                                       kTorchScheduleNames.end();
     }},
    {"torchtitan/distributed/pipeline_parallel.py:85 pipeline_llm",
     "the virtual stages pipeline_parallel_layers_per_stage makes (blocks plus the first and last "
     "stages' less_layers, rounded up) are a multiple of the pipeline degree",
     [](const TorchTitanJob& j) {
       return j.pipeline() == 1 || (j.pipeline() > 1 && j.virtual_stages() % j.pipeline() == 0);
     }},
    {"torchtitan/distributed/pipeline_parallel.py:96-110 pipeline_llm",
     "a single-stage schedule (1F1B, GPipe, PipelineScheduleSingle) builds exactly one stage per rank, "
     "any other at least two",
     [](const TorchTitanJob& j) {
       return j.pipeline() == 1 || (j.single_stage() ? j.stages_per_rank() == 1 : j.stages_per_rank() >= 2);
     }},
    {"torchtitan/distributed/pipeline_parallel.py:463 pipeline_module_split (_get_stage_indices)",
     "a V schedule (ZBVZeroBubble, DualPipeV) builds exactly two stages per rank",
     [](const TorchTitanJob& j) {
       const bool v_shaped = j.schedule() == "zbvzerobubble" || j.schedule() == "dualpipev";
       return j.pipeline() == 1 || !v_shaped || j.stages_per_rank() == 2;
     }},
    {"torchtitan/distributed/pipeline_parallel.py:279-295 generate_llm_fqn_per_model_part",
     "every stage gets at least one block, and the first and last stages' less_layers are at most that",
     [](const TorchTitanJob& j) {
       if (j.pipeline() == 1) return true;
       const std::int64_t first = j.integer("parallelism.pipeline_parallel_first_stage_less_layers", 1);
       const std::int64_t last = j.integer("parallelism.pipeline_parallel_last_stage_less_layers", 1);
       const std::int64_t stages = j.virtual_stages();
       if (stages < 1) return false;
       const std::int64_t per_stage = (j.layers + first + last) / stages;
       return per_stage >= 1 && first <= per_stage && last <= per_stage;
     }},
    {"torchtitan/config/job_config.py:336 Parallelism (a Literal)",
     "fsdp_reshard_after_forward is default, always or never",
     [](const TorchTitanJob& j) {
       return is_one_of(j.text("parallelism.fsdp_reshard_after_forward", "default"), {"default", "always", "never"});
     }},
    {"torchtitan/config/job_config.py:446 Parallelism (a Literal)",
     "context_parallel_rotate_method is allgather or alltoall",
     [](const TorchTitanJob& j) {
       return is_one_of(j.text("parallelism.context_parallel_rotate_method", "allgather"), {"allgather", "alltoall"});
     }},
    {"torchtitan/config/job_config.py:282, 290 Training (Literals)",
     "mixed_precision_param is bfloat16 or float32, mixed_precision_reduce float32",
     [](const TorchTitanJob& j) {
       return is_one_of(j.text("training.mixed_precision_param", "bfloat16"), {"bfloat16", "float32"}) &&
              j.text("training.mixed_precision_reduce", "float32") == "float32";
     }},
    {"torchtitan/config/job_config.py:652 ActivationCheckpoint (a Literal)",
     "activation_checkpoint.mode is selective, full, memory_budget or none",
     [](const TorchTitanJob& j) {
       return is_one_of(j.text("activation_checkpoint.mode", "selective"),
                        {"selective", "full", "memory_budget", "none"});
     }},
    {"torchtitan/distributed/activation_checkpoint.py:177-183 _apply_ac_to_transformer_block",
     "selective checkpointing takes selective_ac_option \"op\" or a block frequency of digits",
     [](const TorchTitanJob& j) {
       if (j.text("activation_checkpoint.mode", "selective") != "selective") return true;
       const std::string option = j.text("activation_checkpoint.selective_ac_option", "2");
       return option == "op" || (!option.empty() && std::all_of(option.begin(), option.end(),
                                                                [](unsigned char c) { return std::isdigit(c) != 0; }));
     }},
    {"torchtitan/distributed/activation_checkpoint.py:226 apply_ac",
     "memory_budget checkpointing needs the model compiled",
     [](const TorchTitanJob& j) {
       return j.text("activation_checkpoint.mode", "selective") != "memory_budget" || j.flag("compile.enable");
     }},
    {"torchtitan/protocols/model_converter.py:62 ModelConvertersContainer (the registry of register_model_converter)",
     "every model.converters entry is a registered converter",
     [](const TorchTitanJob& j) {
       for (const std::string& c : j.toml.string_list("model.converters").value_or(std::vector<std::string>{})) {
         if (std::find(kConverters.begin(), kConverters.end(), c) == kConverters.end()) return false;
       }
       return true;
     }},
    {"torchtitan/components/quantization/__init__.py:51 QuantizationConverter._validate",
     "the quantizing converters are all float8 or all mx",
     [](const TorchTitanJob& j) {
       const auto converters = j.toml.string_list("model.converters").value_or(std::vector<std::string>{});
       const auto kind = [](const std::string& c) { return c.substr(c.rfind('.') + 1); };
       return std::all_of(converters.begin(), converters.end(),
                          [&](const std::string& c) { return kind(c) == kind(converters.front()); });
     }},
    {"torchtitan/config/job_config.py:738 Float8Linear (a Literal)",
     "quantize.linear.float8.recipe_name is tensorwise, rowwise or rowwise_with_gw_hp (or unset)",
     [](const TorchTitanJob& j) {
       const auto recipe = j.toml.text("quantize.linear.float8.recipe_name");
       return !recipe || is_one_of(*recipe, {"tensorwise", "rowwise", "rowwise_with_gw_hp"});
     }},
    {"torchtitan/components/quantization/float8.py:66 Float8LinearConverter.__init__",
     "enable_fsdp_float8_all_gather is not combined with a float8 recipe_name",
     [](const TorchTitanJob& j) {
       return !j.toml.has("quantize.linear.float8.recipe_name") ||
              !j.flag("quantize.linear.float8.enable_fsdp_float8_all_gather");
     }},
};

std::vector<std::string_view> torchtitan_failed_rules(const TorchTitanJob& job) {
  return testing::failed_rules(kTorchTitanRules, job);
}

class TorchTitanRules : public ::testing::TestWithParam<ExportCase> {};

TEST_P(TorchTitanRules, TorchTitanAcceptsTheJob) {
  const ResolvedPlan r = testing::resolve(GetParam());
  const std::optional<std::string> toml =
      testing::export_or_refusal(r, Framework::TorchTitan, GetParam().torchtitan_refuses);
  if (!toml) return;
  ASSERT_TRUE(r.model.shape.has_value());
  const TorchTitanJob job{TomlValues::parse(*toml, "job.toml"), r.plan.gpus(), r.model.shape->layers};
  testing::expect_every_rule_holds(kTorchTitanRules, job, *toml);
}

INSTANTIATE_TEST_SUITE_P(Exports, TorchTitanRules, ::testing::ValuesIn(testing::kExportCases),
                         [](const ::testing::TestParamInfo<ExportCase>& info) { return info.param.name; });

// The rules can fail: jobs with the mistakes they describe fail the rules they break.
TEST(TorchTitanRuleTable, CatchesBrokenJobs) {
  const auto job = [](std::string_view toml, std::int64_t world, std::int64_t layers) {
    return TorchTitanJob{TomlValues::parse(toml, "job.toml"), world, layers};
  };
  // Degrees that do not fill 16 GPUs, an expert-tensor degree of neither 1 nor TP, and a global batch
  // that is no multiple of local x data-parallel.
  EXPECT_EQ(
      torchtitan_failed_rules(job("[parallelism]\ndata_parallel_replicate_degree = 1\ndata_parallel_shard_degree = 3\n"
                                  "tensor_parallel_degree = 4\nexpert_parallel_degree = 2\n"
                                  "expert_tensor_parallel_degree = 2\n"
                                  "[training]\nlocal_batch_size = 2\nglobal_batch_size = 16\n",
                                  16, 32)),
      (std::vector<std::string_view>{kTorchTitanRules[1].rule, kTorchTitanRules[2].rule, kTorchTitanRules[4].rule}));
  // A looped schedule with one stage per rank, an unknown schedule, and a batch that is no multiple of
  // the pipeline microbatch.
  EXPECT_EQ(torchtitan_failed_rules(
                job("[parallelism]\ndata_parallel_shard_degree = -1\npipeline_parallel_degree = 4\n"
                    "pipeline_parallel_schedule = \"Interleaved1F1B\"\npipeline_parallel_layers_per_stage = 8\n"
                    "pipeline_parallel_first_stage_less_layers = 0\npipeline_parallel_last_stage_less_layers = 0\n"
                    "pipeline_parallel_microbatch_size = 3\n[training]\nlocal_batch_size = 8\n",
                    8, 32)),
            (std::vector<std::string_view>{kTorchTitanRules[5].rule, kTorchTitanRules[8].rule}));
  EXPECT_EQ(torchtitan_failed_rules(
                job("[parallelism]\npipeline_parallel_degree = 2\npipeline_parallel_schedule = \"zb-h1\"\n", 2, 8)),
            (std::vector<std::string_view>{kTorchTitanRules[6].rule}));
  // Megatron's words for checkpointing and an FP8 recipe beside the FSDP float8 all-gather.
  EXPECT_EQ(
      torchtitan_failed_rules(
          job("[activation_checkpoint]\nmode = \"selective\"\nselective_ac_option = \"core_attn\"\n"
              "[model]\nconverters = [\"float8\"]\n"
              "[quantize.linear.float8]\nrecipe_name = \"tensorwise\"\nenable_fsdp_float8_all_gather = true\n",
              8, 32)),
      (std::vector<std::string_view>{kTorchTitanRules[15].rule, kTorchTitanRules[17].rule, kTorchTitanRules[20].rule}));
}

}  // namespace
}  // namespace mpsim::interop
