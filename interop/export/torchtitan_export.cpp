// TorchTitan's job config TOML (torchtitan/config/job_config.py): [parallelism], [training],
// [activation_checkpoint] and the float8 / MX converters; a schedule TorchTitan has no class for runs
// from the plan's order as a CSV (pipeline_parallel_schedule_csv). ZeRO maps to FSDP2: zero 0 is DDP
// (replicate only), zero 3 FSDP resharding after the forward, zero 2 FSDP keeping the gathered
// parameters until the backward; FSDP2 has no optimizer-only sharding (zero 1) but under pipelining,
// where torch.distributed.pipelining's backward_maybe_with_nosync turns FSDP2's gradient sync and
// resharding off for every microbatch's backward but the last: FSDP2 then holds whole weights and
// accumulates whole fp32 gradients (its reduce dtype) across the microbatches, which is zero 1.
#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/export/export.h"
#include "interop/formats/torch_csv.h"
#include "sim/schedule/generators.h"

namespace mpsim::interop {

namespace {

constexpr std::string_view kTorchTitanTarget = "TorchTitan";

struct Table {
  std::string name;
  std::vector<std::string> lines;
  template <typename T>
  void set(std::string_view key, const T& value) {
    lines.push_back(fmt::format("{} = {}", key, value));
  }
  void text(std::string_view key, std::string_view value) { lines.push_back(fmt::format("{} = \"{}\"", key, value)); }
  void comment(std::string_view text) { lines.push_back(fmt::format("# {}", text)); }
};

/// The schedules TorchTitan runs `how`: its class names, or mpsim's words for those run from a CSV.
std::vector<std::string_view> torchtitan_schedules(plan::TorchTitanRun how) {
  std::vector<std::string_view> out;
  for (const plan::ScheduleTraits& t : plan::kScheduleTraits) {
    if (t.torchtitan_run == how) out.push_back(how == plan::TorchTitanRun::ByName ? t.torchtitan : t.name);
  }
  return out;
}

/// torch.distributed.pipelining's schedule class name for the plan's schedule. For a schedule run from
/// a CSV, the name only tells TorchTitan how many stages each rank builds and where they sit
/// (pipeline_llm, pipeline_module_split): PipelineScheduleSingle for one stage per rank in a line,
/// ZBVZeroBubble for two in a V; the CSV's order then replaces the class's own.
std::string_view schedule_name(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  const plan::ScheduleTraits& schedule = plan::traits(p.schedule);
  switch (schedule.torchtitan_run) {
    case plan::TorchTitanRun::ByName: return schedule.torchtitan;
    case plan::TorchTitanRun::FromCsv:
      if (in.schedule_csv.empty()) {
        cannot_express(in, kTorchTitanTarget, "schedule",
                       fmt::format("TorchTitan runs {} from a schedule CSV written beside the TOML "
                                   "(pipeline_parallel_schedule_csv); write the TOML to a file (-o FILE.toml)",
                                   schedule.name));
      }
      return plan::is_v_shaped(p.schedule) ? "ZBVZeroBubble" : "PipelineScheduleSingle";
    case plan::TorchTitanRun::Never:
      // A bidirectional schedule's microbatches enter at both ends, so each stage lives on two ranks;
      // TorchTitan builds every stage once.
      cannot_express(in, kTorchTitanTarget, "schedule",
                     fmt::format("TorchTitan builds each pipeline stage on one rank and has no {} schedule (it runs "
                                 "{} by name, and {} from a schedule CSV)",
                                 schedule.name, fmt::join(torchtitan_schedules(plan::TorchTitanRun::ByName), ", "),
                                 fmt::join(torchtitan_schedules(plan::TorchTitanRun::FromCsv), ", ")));
  }
  throw std::logic_error("not a TorchTitanRun");  // only a value cast from outside the enum gets here
}

void parallelism(const ExportInput& in, Table& t, std::vector<std::string>& notes) {
  const plan::Plan& p = in.plan;
  int replicate = p.degrees[plan::Axis::Data];
  int shard = 1;
  const bool pipelined = p.degrees[plan::Axis::Pipeline] > 1;
  if (pipelined && p.zero >= 2) {
    cannot_express(in, kTorchTitanTarget, "zero",
                   "under pipelining FSDP2 keeps whole weights and accumulates whole fp32 gradients over the "
                   "microbatches (torch.distributed.pipelining turns its gradient sync and resharding off until "
                   "the last backward): use zero 1");
  }
  switch (p.zero) {
    case 0: break;
    case 1:
      if (!pipelined) {
        cannot_express(in, kTorchTitanTarget, "zero",
                       "FSDP2 has no optimizer-only sharding without pipelining; use zero 2 "
                       "(fsdp_reshard_after_forward \"never\") or zero 3 (FSDP)");
      }
      [[fallthrough]];
    default:
      replicate = p.degrees[plan::Axis::DataReplica];
      shard = p.degrees[plan::Axis::Data] / p.degrees[plan::Axis::DataReplica];
  }
  t.set("data_parallel_replicate_degree", replicate);
  t.set("data_parallel_shard_degree", shard);
  // "default" reshards after the forward except under pipeline parallelism (zero 1 there).
  if (p.zero == 2) t.text("fsdp_reshard_after_forward", "never");
  if (p.zero == 3 || (p.zero == 1 && pipelined)) t.text("fsdp_reshard_after_forward", "default");

  if (p.degrees[plan::Axis::Tensor] > 1 && !p.sequence_parallel) {
    cannot_express(in, kTorchTitanTarget, "sequence_parallel",
                   "TorchTitan's tensor-parallel plans always split the norms over the sequence (sequence "
                   "parallelism); set sequence_parallel: true");
  }
  t.set("tensor_parallel_degree", p.degrees[plan::Axis::Tensor]);
  if (p.overlap_tensor_comm) {
    t.set("enable_async_tensor_parallel", true);
    notes.push_back("enable_async_tensor_parallel takes effect only under torch.compile ([compile] enable = true,");
    notes.push_back("or training.compile = true in older versions).");
  }

  t.set("pipeline_parallel_degree", p.degrees[plan::Axis::Pipeline]);
  if (p.degrees[plan::Axis::Pipeline] > 1) {
    t.text("pipeline_parallel_schedule", schedule_name(in));
    if (torchtitan_runs_from_csv(p)) t.text("pipeline_parallel_schedule_csv", in.schedule_csv);
    if (plan::traits(p.schedule).rule == plan::ShapeRule::MicrobatchGroup &&
        p.microbatch_group_size != p.degrees[plan::Axis::Pipeline]) {
      cannot_express(in, kTorchTitanTarget, "microbatch_group_size",
                     "torch.distributed.pipelining's Interleaved1F1B runs microbatches in rounds of the pipeline "
                     "size; leave microbatch_group_size_per_vp_stage at its default");
    }
    if (!is_uniform_split(p)) {
      cannot_express(in, kTorchTitanTarget, "partition",
                     "the export gives TorchTitan's split as pipeline_parallel_layers_per_stage, which needs the "
                     "same number of blocks in every stage; use a balanced partition");
    }
    t.set("pipeline_parallel_microbatch_size", p.micro_batch);
    t.set("pipeline_parallel_layers_per_stage", blocks_per_stage(p).front());
    // The embedding and the output head count as no layer: every stage holds the same blocks.
    t.set("pipeline_parallel_first_stage_less_layers", 0);
    t.set("pipeline_parallel_last_stage_less_layers", 0);
  }

  t.set("context_parallel_degree", p.degrees[plan::Axis::Context]);
  if (p.degrees[plan::Axis::Context] > 1) {
    switch (p.context_comm) {
      // torch's ring attention passes the key/value shards round the ring (all-to-all rotation), or
      // all-gathers them before the attention.
      case plan::ContextComm::P2p: t.text("context_parallel_rotate_method", "alltoall"); break;
      case plan::ContextComm::AllGather: t.text("context_parallel_rotate_method", "allgather"); break;
      case plan::ContextComm::AllToAll:
        cannot_express(in, kTorchTitanTarget, "cp_comm_type",
                       "TorchTitan's context parallelism is ring attention (rotate_method allgather or alltoall, "
                       "both over the sequence); it has no Ulysses head split (a2a); use p2p or all_gather");
    }
  }

  if (p.degrees[plan::Axis::Expert] > 1) {
    if (p.zero == 0) {
      cannot_express(in, kTorchTitanTarget, "expert",
                     "TorchTitan takes the expert-parallel ranks from the FSDP shard (and context) dimension; use "
                     "zero 2 or 3");
    }
    if (p.degrees[plan::Axis::ExpertTensor] != p.degrees[plan::Axis::Tensor] &&
        p.degrees[plan::Axis::ExpertTensor] != 1) {
      cannot_express(in, kTorchTitanTarget, "expert_tensor",
                     fmt::format("TorchTitan's expert_tensor_parallel_degree is the tensor degree or 1, not {}",
                                 p.degrees[plan::Axis::ExpertTensor]));
    }
    if (p.overlap_moe_expert_comm) {
      cannot_express(in, kTorchTitanTarget, "overlap.moe_expert_comm",
                     "TorchTitan's [parallelism] has no overlap of one microbatch's expert all-to-alls with another's "
                     "compute (Megatron-Core's combined 1F1B)");
    }
    t.set("expert_parallel_degree", p.degrees[plan::Axis::Expert]);
    t.set("expert_tensor_parallel_degree", p.degrees[plan::Axis::ExpertTensor]);
  }

  if (split_order(p, p.placement) != split_order(p, plan::kMegatronPlacement)) {
    cannot_express(in, kTorchTitanTarget, "placement",
                   fmt::format("TorchTitan's device mesh orders ranks tp, cp, dp, pp (fastest first), not {}",
                               plan::to_string(p.placement)));
  }
}

void check_rest(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  if (p.optimizer != plan::Optimizer::Adam) {
    cannot_express(in, kTorchTitanTarget, "optimizer", "the export writes TorchTitan's AdamW ([optimizer] name's default)");
  }
  if (p.precision_aware_optimizer) {
    cannot_express(in, kTorchTitanTarget, "precision_aware_optimizer",
                   "TorchTitan's AdamW keeps fp32 moments beside the fp32 sharded weights; the precision-aware "
                   "optimizer (Transformer Engine's FusedAdam) is Megatron-Core's");
  }
  if (p.expert_capacity_factor || p.pad_expert_input_to_capacity) {
    cannot_express(in, kTorchTitanTarget, "moe_expert_capacity_factor",
                   "the export writes no capacity factor: TorchTitan's MoE layers are dropless");
  }
  if (plan::deduplicates_tokens(p.dispatcher)) {
    cannot_express(in, kTorchTitanTarget, "moe_token_dispatcher_type",
                   "the export writes TorchTitan's all-to-all token exchange, not a flex dispatcher (DeepEP, HybridEP)");
  }
  if (p.activation_offload_layers > 0) {
    cannot_express(in, kTorchTitanTarget, "activation_offload_layers",
                   "TorchTitan offloads parameters, gradients and optimizer state (training.enable_cpu_offload), not "
                   "the stashed activations of the first blocks");
  }
  if (!p.grad_reduce_in_fp32) {
    cannot_express(in, kTorchTitanTarget, "grad_reduce_in_fp32",
                   "TorchTitan reduces gradients in float32 (mixed_precision_reduce takes only \"float32\")");
  }
}

}  // namespace

bool torchtitan_runs_from_csv(const plan::Plan& p) {
  return p.degrees[plan::Axis::Pipeline] > 1 && plan::traits(p.schedule).torchtitan_run == plan::TorchTitanRun::FromCsv;
}

std::string torchtitan_schedule_csv(const plan::Plan& p) {
  return interop::to_torch_csv(schedule::make_program(schedule::shape_of(p)));
}

std::string export_torchtitan(const ExportInput& in) {
  const plan::Plan& p = in.plan;
  std::vector<std::string> notes;
  Table par{"parallelism", {}};
  parallelism(in, par, notes);
  check_rest(in);

  Table model{"model", {}};
  Table quantize{"", {}};
  switch (p.precision) {
    case plan::Precision::Bf16:
    case plan::Precision::Fp32: break;
    case plan::Precision::Fp16:
      cannot_express(in, kTorchTitanTarget, "precision",
                     "TorchTitan's mixed_precision_param is bfloat16 or float32; use bf16 or fp32");
    case plan::Precision::Fp8:
      model.set("converters", "[\"quantize.linear.float8\"]");
      quantize.name = "quantize.linear.float8";
      if (p.fp8_param_gather) {
        if (p.zero == 0) {  // every other zero the export writes is FSDP (parallelism())
          cannot_express(in, kTorchTitanTarget, "fp8_param_gather",
                         "TorchTitan gathers FP8 weights under FSDP only (enable_fsdp_float8_all_gather); use zero "
                         "2 or 3 (1 under a pipeline)");
        }
        // Float8LinearConverter refuses the all-gather beside a recipe_name; without one it builds
        // tensorwise scaling, the same recipe.
        quantize.set("enable_fsdp_float8_all_gather", true);
        quantize.set("precompute_float8_dynamic_scale_for_fsdp", true);
      } else {
        quantize.text("recipe_name", "tensorwise");
      }
      break;
    case plan::Precision::Mxfp8:
      if (p.fp8_param_gather) {
        cannot_express(in, kTorchTitanTarget, "fp8_param_gather", "TorchTitan's MX converter has no FP8 weight all-gather");
      }
      model.set("converters", "[\"quantize.linear.mx\"]");
      quantize.name = "quantize.linear.mx";
      quantize.text("recipe_name", "mxfp8_cublas");
      break;
    case plan::Precision::Fp8Blockwise:
      cannot_express(in, kTorchTitanTarget, "precision",
                     "TorchTitan's float8 recipes are tensorwise, rowwise and rowwise_with_gw_hp, and MX; it has no "
                     "128 x 128 blockwise recipe");
  }

  Table training{"training", {}};
  // With a pipeline, the local batch holds all the step's microbatches (n_microbatches = local_batch_size
  // / pipeline_parallel_microbatch_size); without one, it is a microbatch, and global_batch_size
  // above local x data-parallel ranks is gradient accumulation.
  training.set("local_batch_size",
               p.degrees[plan::Axis::Pipeline] > 1 ? p.micro_batch * p.microbatches : p.micro_batch);
  training.set("global_batch_size", p.global_batch);
  if (in.model.shape) training.set("seq_len", in.model.shape->seq_len);
  training.text("mixed_precision_param", p.precision == plan::Precision::Fp32 ? "float32" : "bfloat16");
  training.text("mixed_precision_reduce", "float32");

  Table checkpoint{"activation_checkpoint", {}};
  switch (p.recompute) {
    case plan::Recompute::None:
    case plan::Recompute::Op:
      checkpoint.text("mode", model::traits(p.recompute).torchtitan);
      if (!model::traits(p.recompute).torchtitan_option.empty()) {
        checkpoint.text("selective_ac_option", model::traits(p.recompute).torchtitan_option);
      }
      break;
    case plan::Recompute::Full:
      // activation_checkpoint.py: full wraps every block; selective with a number N wraps every Nth.
      if (model::traits(p.recompute_method).torchtitan_option) {
        checkpoint.text("mode", model::traits(plan::Recompute::Op).torchtitan);
        checkpoint.text("selective_ac_option", std::to_string(p.recompute_num_layers));
        break;
      }
      if (p.recompute_method != model::RecomputeMethod::Uniform || p.recompute_num_layers != 1) {
        cannot_express(in, kTorchTitanTarget, "recompute_method",
                       fmt::format("TorchTitan checkpoints every block alone (mode full) or every Nth block "
                                   "(selective_ac_option N), not {} with recompute_num_layers {}",
                                   model::to_string(p.recompute_method), p.recompute_num_layers));
      }
      checkpoint.text("mode", model::traits(p.recompute).torchtitan);
      break;
    case plan::Recompute::Selective:
      if (!selective_is_flash_attention(p)) {
        cannot_express(in, kTorchTitanTarget, "recompute",
                       "TorchTitan's selective mode recomputes every nth block or per-op (selective_ac_option), not "
                       "Megatron's recompute_modules; use recompute: full or none");
      }
      checkpoint.comment("recompute: selective of the attention scores alone is FlashAttention's own backward.");
      checkpoint.text("mode", model::traits(plan::Recompute::None).torchtitan);
      break;
  }

  if (p.attention == plan::AttentionKernel::Standard) {
    notes.push_back("The prediction assumed materialized attention scores (attention: standard); TorchTitan's");
    notes.push_back("models run scaled_dot_product_attention.");
  }
  if (p.zero == 0 ? !p.overlap_grad_reduce : (!p.overlap_grad_reduce || !p.overlap_param_gather)) {
    notes.push_back(p.zero == 0 ? "DDP overlaps the gradient all-reduce with the backward; the prediction did not."
                                : "FSDP2 overlaps its all-gathers and reduce-scatters with compute; the prediction "
                                  "did not (overlap.*).");
  }
  if (p.cross_entropy != loss_of(Framework::TorchTitan)) {
    notes.push_back(fmt::format("The prediction assumed Megatron-Core's {} loss kernel (cross_entropy); TorchTitan's",
                                name_of(plan::kCrossEntropyNames, p.cross_entropy)));
    notes.push_back("holds more copies of the logits at its peak (simulate with cross_entropy: pytorch).");
  }
  if (p.routing_imbalance != 1.0) {
    notes.push_back(fmt::format("The prediction assumed the busiest expert rank routes {}x the mean tokens (a",
                                p.routing_imbalance));
    notes.push_back("property of the data and the router, not a launch setting).");
  }

  const std::string plan_name =
      in.spec.file.empty() ? "a plan" : std::filesystem::path(in.spec.file).filename().string();
  std::string out;
  out += fmt::format("# TorchTitan job config for {} ({}), written by `mpsim plan export --to torchtitan`.\n",
                     in.model.name, plan_name);
  out += fmt::format("# TP {} x CP {} x PP {} x DP {} = {} GPUs on {} node(s) of {}; {} microbatches of {} per step.\n",
                     p.degrees[plan::Axis::Tensor], p.degrees[plan::Axis::Context], p.degrees[plan::Axis::Pipeline],
                     p.degrees[plan::Axis::Data], p.gpus(), in.shape.nodes, in.shape.gpus_per_node, p.microbatches,
                     p.micro_batch);
  out += "# Run it with CONFIG_FILE=./this.toml ./run_train.sh (torchrun on every node), or pass\n"
         "# --job.config_file this.toml; --section.key value overrides a setting.\n";
  if (torchtitan_runs_from_csv(p)) {
    out += fmt::format("# The {} order runs from {}, beside this file. TorchTitan opens that path from\n"
                       "# the folder it is launched in: launch there, or give --parallelism.pipeline_parallel_schedule_csv.\n",
                       plan::to_string(p.schedule), in.schedule_csv);
  }
  for (const std::string& note : notes) out += "# " + note + "\n";
  out += "\n[model]\n";
  if (in.model.shape) {
    const model::TransformerShape& s = *in.model.shape;
    out += "# name and flavor: a TorchTitan model whose arguments have this shape:\n";
    out += fmt::format("# {} layers, dim {}, {} heads ({} key/value), ffn {}, vocab {}", s.layers, s.hidden, s.heads,
                       s.kv_heads, s.ffn, s.vocab);
    if (s.moe) out += fmt::format(", {} experts (top {}) of width {}", s.moe->experts, s.moe->top_k, s.moe->expert_ffn);
    out += ".\n";
    // The flavor's arguments also fix RoPE and the norms; the TOML has no setting for them, so they are named
    // here for the choice of flavor rather than left to a default that trains another model.
    if (s.positions == model::PositionKind::Rotary) {
      out += fmt::format("# rope_theta {}", s.rotary_base);
      if (s.rope_scaling) {
        const model::RopeScaling& r = *s.rope_scaling;
        out += r.kind == model::RopeScalingKind::Llama3
                   ? fmt::format(", llama3 RoPE scaling factor {} (low_freq_factor {}, high_freq_factor {}, original "
                                 "context {})",
                                 r.factor, r.low_freq_factor, r.high_freq_factor, r.original_max_position_embeddings)
                   : fmt::format(", YaRN factor {} (original context {}, beta_fast {}, beta_slow {}, mscale {}, "
                                 "mscale_all_dim {})",
                                 r.factor, r.original_max_position_embeddings, r.beta_fast, r.beta_slow, r.mscale,
                                 r.mscale_all_dim);
      }
      out += fmt::format(", norm_eps {}.\n", s.norm_epsilon);
    }
  } else {
    out += "# name and flavor: a TorchTitan model with the layers of the model file.\n";
  }
  for (const std::string& line : model.lines) out += line + "\n";
  for (const Table* t : {&par, &training, &checkpoint, &quantize}) {
    if (t->name.empty()) continue;
    out += fmt::format("\n[{}]\n", t->name);
    for (const std::string& line : t->lines) out += line + "\n";
  }
  return out;
}

}  // namespace mpsim::interop
