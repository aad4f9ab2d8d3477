// A TorchTitan job TOML into a plan: the mirror of torchtitan_export.cpp, key for key
// (torchtitan/config/job_config.py). Keys left out take TorchTitan's defaults, as its config does.
#include "interop/import/torchtitan_import.h"

#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/import/torchtitan_import_detail.h"
#include "sim/core/text_file.h"
#include "sim/model/recompute.h"

namespace mpsim::interop {

namespace detail {

void PlanYaml::put(std::string_view section, std::string_view key, const std::string& value,
                   const std::string& comment) {
  std::string line = fmt::format("{}{}: {}", section.empty() ? "" : "  ", key, value);
  if (!comment.empty()) line += "   # " + comment;
  lines_.push_back({std::string(section), std::move(line)});
}

void PlanYaml::comment(const std::string& text) { comments_.push_back("# " + text); }

std::string PlanYaml::text(const std::string& header) const {
  std::string out = header;
  for (const std::string& c : comments_) out += c + "\n";
  std::vector<std::string> sections;
  for (const Line& l : lines_) {
    if (!l.section.empty() && std::find(sections.begin(), sections.end(), l.section) == sections.end()) {
      sections.push_back(l.section);
    }
  }
  for (const std::string& section : sections) {
    out += section + ":\n";
    for (const Line& l : lines_) {
      if (l.section == section) out += l.text + "\n";
    }
  }
  for (const Line& l : lines_) {
    if (l.section.empty()) out += l.text + "\n";
  }
  return out;
}

std::string line_of(const TomlValues& toml, std::string_view key) {
  const SourceLocation at = toml.where(key);
  const std::string name = std::filesystem::path(toml.file()).filename().string();
  return at.line > 0 && toml.has(key) ? fmt::format("{}:{}", name, at.line) : fmt::format("{} (default)", key);
}

int count(const TomlValues& toml, std::string_view key, int fallback) {
  const std::int64_t n = toml.integer(key).value_or(fallback);
  if (n < 1 || n > 1'000'000) toml.fail(key, fmt::format("{} is a whole number from 1 to a million, not {}", key, n));
  return static_cast<int>(n);
}

}  // namespace detail

namespace {

using detail::count;
using detail::line_of;
using detail::PlanYaml;

constexpr std::string_view kShard = "parallelism.data_parallel_shard_degree";
constexpr std::string_view kReplicate = "parallelism.data_parallel_replicate_degree";

/// The data-parallel size where the job's degrees or GPUs give it, and whether the plan writes it.
struct DataParallel {
  std::optional<int> size;
  bool written = false;
};

/// The data-parallel degrees and what they make of ZeRO: DDP (zero 0) when nothing is sharded, FSDP2
/// otherwise, with HSDP's replicas as shard groups.
DataParallel data_parallel(const TomlValues& toml, std::int64_t model_parallel, int pipeline, std::optional<int> gpus,
                           PlanYaml& plan, std::optional<int>& job_gpus) {
  const int replicate = count(toml, kReplicate, 1);
  const std::int64_t shard_written = toml.integer(kShard).value_or(-1);
  if (shard_written != -1 && (shard_written < 1 || shard_written > 1'000'000)) {
    toml.fail(kShard, fmt::format("{} is -1 (the ranks left over) or a positive whole number, not {}", kShard,
                                  shard_written));
  }
  std::optional<int> shard;
  if (shard_written > 0) shard = static_cast<int>(shard_written);
  const std::int64_t others = model_parallel * replicate;
  if (!shard && gpus) {
    if (*gpus % others != 0) {
      toml.fail(kShard, fmt::format("{} GPUs do not divide into the other degrees' {} (tensor x context x pipeline "
                                    "x replicate), so no shard degree fills them",
                                    *gpus, others));
    }
    shard = static_cast<int>(*gpus / others);
  }
  if (shard) {
    const std::int64_t total = others * *shard;
    if (total > 1'000'000'000) {
      toml.fail(kShard, fmt::format("the degrees multiply to {} GPUs, more than any job runs on", total));
    }
    if (gpus && total != *gpus) {
      toml.fail(kShard, fmt::format("the degrees multiply to {} GPUs (tensor x context x pipeline x replicate {} x "
                                    "shard {}), not the job's {}",
                                    total, others, *shard, *gpus));
    }
    job_gpus = static_cast<int>(total);
  }

  const std::string reshard = toml.text("parallelism.fsdp_reshard_after_forward").value_or("default");
  if (reshard != "default" && reshard != "always" && reshard != "never") {
    toml.fail("parallelism.fsdp_reshard_after_forward",
              fmt::format("fsdp_reshard_after_forward is \"default\", \"always\" or \"never\", not \"{}\"", reshard));
  }
  const bool sharded = !shard || *shard > 1;
  if (sharded) {
    const std::string fsdp = fmt::format("{}, fsdp_reshard_after_forward {}", line_of(toml, kShard), reshard);
    if (pipeline > 1) {
      // torch.distributed.pipelining turns FSDP2's gradient sync and resharding off for every
      // microbatch's backward but the last (backward_maybe_with_nosync): whole weights, and whole fp32
      // gradients accumulated over the microbatches, with the optimizer state sharded.
      plan.put("", "zero", "1", "FSDP2 under pipelining (whole weights and fp32 gradients until the last backward): " + fsdp);
    } else {
      const bool reshards = reshard == "always" || reshard == "default";
      plan.put("", "zero", reshards ? "3" : "2", "FSDP2: " + fsdp);
    }
    if (replicate > 1) plan.put("", "shard_groups", std::to_string(replicate), "HSDP: " + line_of(toml, kReplicate));
  } else {
    plan.put("", "zero", "0", fmt::format("DDP: {}", line_of(toml, kShard)));
  }
  if (!shard) return {};
  const int data = replicate * *shard;
  // A shard degree of -1 takes the ranks left over: TorchTitan derives it from the world size, and so does
  // the plan (from the cluster), so that it follows another cluster or a sweep of the other degrees.
  if (shard_written == -1) {
    plan.comment(fmt::format("data {} on the job's {} GPUs: left to the cluster, as {} -1 derives it", data,
                             others * *shard, kShard));
    return {data, false};
  }
  plan.put("parallelism", "data", std::to_string(data),
           fmt::format("{} x {}", line_of(toml, kReplicate), line_of(toml, kShard)));
  return {data, true};
}

/// [training] batch sizes: with a pipeline, local_batch_size holds a step's microbatches; without
/// one it is the micro batch. global_batch_size above local x data-parallel ranks is gradient
/// accumulation, which mpsim runs as more microbatches of one step.
void batch(const TomlValues& toml, int pipeline, int local, const detail::PipelineRead& pipe, const DataParallel& dp,
           PlanYaml& plan, std::vector<std::string>& notes) {
  const std::optional<int> data = dp.size;
  constexpr std::string_view kGlobal = "training.global_batch_size";
  std::int64_t global = toml.integer(kGlobal).value_or(-1);
  if (global != -1 && (global < 1 || global > 1'000'000'000)) {
    toml.fail(kGlobal, fmt::format("{} is -1 (local x data-parallel degree) or a positive whole number, not {}",
                                   kGlobal, global));
  }
  if (pipeline == 1) plan.put("batch", "micro", std::to_string(local), line_of(toml, "training.local_batch_size"));
  if (data) {
    const std::int64_t per_step = static_cast<std::int64_t>(local) * *data;
    if (global == -1) global = per_step;
    if (global % per_step != 0) {
      toml.fail(kGlobal, fmt::format("global_batch_size {} is not a multiple of local_batch_size {} x data-parallel "
                                     "degree {} (TorchTitan refuses it)",
                                     global, local, *data));
    }
    if (dp.written || toml.has(kGlobal)) {
      plan.put("batch", "global", std::to_string(global),
               line_of(toml, toml.has(kGlobal) ? kGlobal : "training.local_batch_size"));
    } else {
      // The default global batch, local x data-parallel degree, grows with the derived degree: the plan
      // says the per-rank part (the same microbatches each step) and lets the cluster give the rest.
      plan.put("batch", "microbatches", std::to_string(pipeline > 1 ? pipe.microbatches : 1),
               line_of(toml, "training.local_batch_size"));
    }
    if (pipeline > 1 && global > per_step) {
      notes.push_back(fmt::format("TorchTitan runs {} pipeline steps of {} microbatches per optimizer step "
                                  "(global_batch_size {} over local_batch_size {} x {} ranks); the plan runs them as "
                                  "one step of {} microbatches",
                                  global / per_step, pipe.microbatches, global, local, *data,
                                  global / per_step * pipe.microbatches));
    }
  } else if (global != -1) {
    plan.put("batch", "global", std::to_string(global), line_of(toml, kGlobal));
  } else {
    plan.put("batch", "microbatches", std::to_string(pipeline > 1 ? pipe.microbatches : 1),
             line_of(toml, "training.local_batch_size"));
  }
}

/// mixed_precision_param and the float8 / MX converters.
void precision(const TomlValues& toml, PlanYaml& plan) {
  const std::string param = toml.text("training.mixed_precision_param").value_or("bfloat16");
  if (param != "bfloat16" && param != "float32") {
    toml.fail("training.mixed_precision_param",
              fmt::format("mixed_precision_param is \"bfloat16\" or \"float32\", not \"{}\"", param));
  }
  const std::string reduce = toml.text("training.mixed_precision_reduce").value_or("float32");
  if (reduce != "float32") {
    toml.fail("training.mixed_precision_reduce",
              fmt::format("mixed_precision_reduce takes only \"float32\" in TorchTitan, not \"{}\"", reduce));
  }
  bool fp8 = false;
  bool mx = false;
  for (const std::string& c : toml.string_list("model.converters").value_or(std::vector<std::string>{})) {
    if (c == "quantize.linear.float8" || c == "float8") {
      fp8 = true;
    } else if (c == "quantize.linear.mx" || c == "mx") {
      mx = true;
    } else {
      toml.fail("model.converters", fmt::format("mpsim models no '{}' converter (it reads quantize.linear.float8 and "
                                                "quantize.linear.mx)",
                                                c));
    }
  }
  if (fp8 && mx) toml.fail("model.converters", "float8 and MX converters both swap the same linear layers: give one");
  // The config section moved from [float8] / [mx] to [quantize.linear.*]; either is read.
  const auto either = [&](std::string_view now, std::string_view before) {
    return toml.has(now) ? std::string(now) : toml.has(before) ? std::string(before) : std::string(now);
  };
  const std::string fp8_recipe = either("quantize.linear.float8.recipe_name", "float8.recipe_name");
  const std::string fp8_gather = either("quantize.linear.float8.enable_fsdp_float8_all_gather",
                                        "float8.enable_fsdp_float8_all_gather");
  (void)toml.flag(either("quantize.linear.float8.precompute_float8_dynamic_scale_for_fsdp",
                         "float8.precompute_float8_dynamic_scale_for_fsdp"));  // a speed-up of the same gather
  const std::string mx_recipe = either("quantize.linear.mx.recipe_name", "mx.recipe_name");
  if (fp8) {
    const std::string recipe = toml.text(fp8_recipe).value_or("tensorwise");
    if (recipe != "tensorwise") {
      toml.fail(fp8_recipe, fmt::format("mpsim's fp8 is tensorwise scaling (Megatron's current scaling); it has no "
                                        "'{}' recipe",
                                        recipe));
    }
    plan.put("", "precision", "fp8", line_of(toml, "model.converters"));
    if (toml.flag(fp8_gather).value_or(false)) plan.put("", "fp8_param_gather", "true", line_of(toml, fp8_gather));
  } else if (mx) {
    const std::string recipe = toml.text(mx_recipe).value_or("mxfp8");
    if (recipe.rfind("mxfp8", 0) != 0) {
      toml.fail(mx_recipe, fmt::format("mpsim's MX precision is mxfp8, not '{}'", recipe));
    }
    plan.put("", "precision", "mxfp8", line_of(toml, "model.converters"));
  } else {
    plan.put("", "precision", param == "float32" ? "fp32" : "bf16", line_of(toml, "training.mixed_precision_param"));
  }
}

/// [activation_checkpoint]: TorchTitan's modes none and full are mpsim's; its selective mode (the
/// default, with selective_ac_option "2") is per-op checkpointing ("op", Recompute::Op) or full
/// checkpointing of every Nth block (a number N: recompute_method every), read as the plan's
/// `selective_ac_option` (torchtitan/distributed/activation_checkpoint.py).
void activation_checkpoint(const TomlValues& toml, PlanYaml& plan) {
  constexpr std::string_view kMode = "activation_checkpoint.mode";
  constexpr std::string_view kOption = "activation_checkpoint.selective_ac_option";
  const std::string mode = toml.text(kMode).value_or("selective");
  const std::string option = toml.text(kOption).value_or("2");  // read either way: it applies to selective only
  if (mode == model::traits(model::Recompute::Op).torchtitan) {
    const std::string at = fmt::format("{}, {}", line_of(toml, kMode), line_of(toml, kOption));
    const bool digits = !option.empty() && option.size() <= 9 &&
                        std::all_of(option.begin(), option.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (option != model::traits(model::Recompute::Op).torchtitan_option && !digits) {
      toml.fail(kOption, fmt::format("selective_ac_option is \"op\" or a whole number (checkpoint every nth block), "
                                     "not \"{}\" (TorchTitan refuses it)",
                                     option));
    }
    // TorchTitan wraps block k (counting from 1) in full checkpointing when `not ac_freq or k % ac_freq == 0`:
    // every block for 0 and 1, which is mpsim's full recomputation.
    if (digits && std::stoll(option) <= 1) {
      plan.put("", "recompute", std::string(model::to_string(model::Recompute::Full)), at);
      return;
    }
    plan.put("", "recompute", std::string(model::to_string(model::Recompute::Selective)), at);
    plan.put("", "selective_ac_option", option, at);
    return;
  }
  constexpr auto kModes = core::column_words<model::kRecomputeTraits, &model::RecomputeTraits::torchtitan>();
  const auto found = std::find_if(kModes.begin(), kModes.end(), [&](const auto& m) { return m.first == mode; });
  if (found == kModes.end()) {
    toml.fail(kMode, fmt::format("TorchTitan's \"{}\" checkpointing has no mpsim counterpart; set mode = \"full\", "
                                 "\"selective\" or \"none\"",
                                 mode));
  }
  plan.put("", "recompute", std::string(model::to_string(found->second)), line_of(toml, kMode));
}

/// What else the plan models: the optimizer and CPU offload.
void training_rest(const TomlValues& toml) {
  const std::string optimizer = toml.text("optimizer.name").value_or("AdamW");
  if (optimizer != "AdamW" && optimizer != "Adam") {
    toml.fail("optimizer.name", fmt::format("mpsim models Adam(W) and Muon's memory; '{}' is neither", optimizer));
  }
  if (toml.flag("training.enable_cpu_offload").value_or(false)) {
    toml.fail("training.enable_cpu_offload",
              "mpsim does not model FSDP's CPU offload of parameters, gradients and optimizer state");
  }
}

}  // namespace

ScheduleCsvReader csv_beside(const std::string& job_file) {
  return [job_file](const std::string& written) {
    std::filesystem::path path(written);
    if (path.is_relative()) path = std::filesystem::path(job_file).parent_path() / path;
    return ScheduleCsvFile{path.string(), read_text_file(path)};
  };
}

ImportedLaunch import_torchtitan(std::string_view text, const std::string& file, const TorchTitanImportOptions& options) {
  const TomlValues toml = TomlValues::parse(text, file);
  PlanYaml plan;
  ImportedLaunch out;

  const int tensor = count(toml, "parallelism.tensor_parallel_degree", 1);
  const int context = count(toml, "parallelism.context_parallel_degree", 1);
  const int pipeline = count(toml, "parallelism.pipeline_parallel_degree", 1);
  plan.put("parallelism", "tensor", std::to_string(tensor), line_of(toml, "parallelism.tensor_parallel_degree"));
  plan.put("parallelism", "pipeline", std::to_string(pipeline), line_of(toml, "parallelism.pipeline_parallel_degree"));
  if (context > 1) {
    plan.put("parallelism", "context", std::to_string(context), line_of(toml, "parallelism.context_parallel_degree"));
  }
  const DataParallel data =
      data_parallel(toml, static_cast<std::int64_t>(tensor) * context * pipeline, pipeline, options.gpus, plan, out.gpus);
  if (!out.gpus) out.gpus = options.gpus;

  // Expert parallelism regroups the data-parallel (and context) ranks; etp is TorchTitan's default 1.
  const int expert = count(toml, "parallelism.expert_parallel_degree", 1);
  const int expert_tensor = count(toml, "parallelism.expert_tensor_parallel_degree", 1);
  if (expert > 1) {
    plan.put("parallelism", "expert", std::to_string(expert), line_of(toml, "parallelism.expert_parallel_degree"));
    plan.put("parallelism", "expert_tensor", std::to_string(expert_tensor),
             line_of(toml, "parallelism.expert_tensor_parallel_degree"));
  }
  // TorchTitan's tensor-parallel plans always split the norms over the sequence.
  if (tensor > 1) plan.put("", "sequence_parallel", "true", line_of(toml, "parallelism.tensor_parallel_degree"));
  if (toml.flag("parallelism.enable_async_tensor_parallel").value_or(false)) {
    plan.put("overlap", "tensor_comm", "true", line_of(toml, "parallelism.enable_async_tensor_parallel"));
  }
  const std::string rotate = toml.text("parallelism.context_parallel_rotate_method").value_or("allgather");
  if (rotate != "allgather" && rotate != "alltoall") {
    toml.fail("parallelism.context_parallel_rotate_method",
              fmt::format("context_parallel_rotate_method is \"allgather\" or \"alltoall\", not \"{}\"", rotate));
  }
  if (context > 1) {
    plan.put("", "cp_comm_type", rotate == "alltoall" ? "p2p" : "all_gather",
             line_of(toml, "parallelism.context_parallel_rotate_method"));
  }

  const int local = count(toml, "training.local_batch_size", 8);
  const detail::PipelineRead pipe = detail::read_pipeline(toml, {pipeline, local}, options, plan, out.notes);
  batch(toml, pipeline, local, pipe, data, plan, out.notes);

  constexpr std::string_view kSeqLen = "training.seq_len";
  const int seq_len = count(toml, kSeqLen, 2048);
  if (options.model != nullptr && options.model->shape && toml.has(kSeqLen) &&
      options.model->shape->seq_len != seq_len) {
    toml.fail(kSeqLen, fmt::format("TorchTitan trains on sequences of {} tokens, but the model file's seq_len is {}",
                                   seq_len, options.model->shape->seq_len));
  }
  precision(toml, plan);
  // TorchTitan's loss is torch.nn.functional.cross_entropy on the fp32-cast logits (loss_parallel or not).
  plan.put("", "cross_entropy", "pytorch", "TorchTitan's loss");
  activation_checkpoint(toml, plan);
  training_rest(toml);
  out.ignored = toml.unread();

  const std::string source = std::filesystem::path(file).filename().string();
  std::string header = fmt::format("# Imported by `mpsim plan import --from torchtitan` from {}, in mpsim's names.\n",
                                   source);
  header += fmt::format("# TorchTitan trains on sequences of {} tokens ({}): the model file's seq_len must match.\n",
                        seq_len, line_of(toml, kSeqLen));
  header += "# DDP and FSDP2 overlap their collectives with compute; the plan keeps mpsim's defaults (overlap.*).\n";
  for (const std::string& n : out.notes) header += "# Note: " + n + "\n";
  out.plan_yaml = plan.text(header);
  return out;
}

}  // namespace mpsim::interop
