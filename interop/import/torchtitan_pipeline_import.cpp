// The pipeline half of import_torchtitan: which schedule (by torch.distributed.pipelining's class
// name, or from a CSV), how many stages each rank builds and where, and TorchTitan's layer split.
// TorchTitan decides stages per rank and their placement from pipeline_parallel_schedule's class
// even when a CSV gives the order (torchtitan/distributed/pipeline_parallel.py: pipeline_llm,
// pipeline_module_split), so the name is read in both cases.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/formats/torch_csv.h"
#include "interop/import/schedule_match.h"
#include "interop/import/torchtitan_import_detail.h"
#include "sim/core/ascii_case.h"
#include "sim/plan/plan_check.h"

namespace mpsim::interop::detail {
namespace {

constexpr std::string_view kSchedule = "parallelism.pipeline_parallel_schedule";
constexpr std::string_view kCsv = "parallelism.pipeline_parallel_schedule_csv";
constexpr std::string_view kLayersPerStage = "parallelism.pipeline_parallel_layers_per_stage";
constexpr std::string_view kFirstLess = "parallelism.pipeline_parallel_first_stage_less_layers";
constexpr std::string_view kLastLess = "parallelism.pipeline_parallel_last_stage_less_layers";

/// What a schedule class name tells: the mpsim schedule (none for the classes that only run a CSV),
/// and how the stages sit.
struct ScheduleClass {
  std::optional<plan::ScheduleKind> kind;
  bool single_stage = true;  ///< PipelineScheduleSingle's subclasses: one stage per rank
  bool v_shaped = false;     ///< the V classes (ChunkLayout::V): two stages per rank in a V
};

/// get_schedule_class's names, compared without case as it does.
ScheduleClass schedule_class(const TomlValues& toml, const std::string& written) {
  const std::string name = ascii_lower(written);
  for (const plan::ScheduleTraits& t : plan::kScheduleTraits) {
    if (t.torchtitan_run == plan::TorchTitanRun::ByName && ascii_lower(t.torchtitan) == name) {
      return {t.kind, t.chunks == plan::ChunkLayout::One, t.chunks == plan::ChunkLayout::V};
    }
  }
  if (name == "pipelineschedulesingle") return {std::nullopt, true, false};
  if (name == "pipelineschedulemulti") return {std::nullopt, false, false};
  if (name == "loopedbfs" || name == "interleavedzerobubble") {
    toml.fail(kSchedule, fmt::format("mpsim has no counterpart of torch.distributed.pipelining's {} (its zb-h1 and "
                                     "zb-h2 are not interleaved); export the order as a schedule CSV instead",
                                     written));
  }
  std::vector<std::string_view> known;
  for (const plan::ScheduleTraits& t : plan::kScheduleTraits) {
    if (t.torchtitan_run == plan::TorchTitanRun::ByName) known.push_back(t.torchtitan);
  }
  toml.fail(kSchedule, fmt::format("'{}' is not a schedule torch.distributed.pipelining knows ({}, LoopedBFS, "
                                   "InterleavedZeroBubble, PipelineScheduleSingle, PipelineScheduleMulti)",
                                   written, fmt::join(known, ", ")));
}

/// The highest stage any action of the CSV names (its leading number), for a looped multi-stage
/// schedule whose stages per rank the TOML does not fix; the reader checks the rest.
int highest_stage(std::string_view csv) {
  int highest = 0;
  int number = -1;
  bool at_cell_start = true;
  for (const char c : csv) {
    if (at_cell_start && std::isdigit(static_cast<unsigned char>(c))) {
      number = std::max(number, 0) * 10 + (c - '0');
      if (number > 1'000'000) number = 1'000'000;
      continue;
    }
    if (number >= 0) highest = std::max(highest, number);
    number = -1;
    at_cell_start = c == ',' || c == ';' || c == '(' || c == '\n' || c == '\r';
  }
  return std::max(highest, number);
}

std::string pipeline_partition_text(const std::vector<int>& blocks) {
  std::vector<int> bounds{0};
  for (const int b : blocks) bounds.push_back(bounds.back() + b);
  return fmt::format("[{}]", fmt::join(bounds, ", "));
}

/// TorchTitan's split of `layers` blocks over `stages` (generate_llm_fqn_per_model_part): the blocks
/// plus the embedding counted as `first_less` layers and the output as `last_less`, spread evenly with
/// the remainder on the first stages, then the embedding's and the output's share taken off the end
/// stages.
std::vector<int> torchtitan_split(const TomlValues& toml, int layers, int stages, int first_less, int last_less) {
  if (stages == 1) return {layers};
  const int effective = layers + first_less + last_less;
  const int per_stage = effective / stages;
  if (per_stage < std::max(first_less, last_less) || per_stage == 0) {
    toml.fail(per_stage < first_less ? kFirstLess : kLastLess,
              fmt::format("{} stages over {} blocks (+{} +{} for the embedding and the output) hold {} layers each, "
                          "fewer than the end stages give up: TorchTitan refuses this split",
                          stages, layers, first_less, last_less, per_stage));
  }
  std::vector<int> blocks;
  for (int s = 0; s < stages; ++s) blocks.push_back(per_stage + (s < effective % stages ? 1 : 0));
  blocks.front() -= first_less;
  blocks.back() -= last_less;
  return blocks;
}

/// Stages per rank for a looped multi-stage class: from the layers per stage and the model's blocks
/// (pipeline_llm's ceiling division), else from the CSV's stages, else TorchTitan's default of two.
int looped_chunks(const TomlValues& toml, std::optional<int> layers_per_stage, std::optional<int> blocks, int pipeline,
                  int first_less, int last_less, const std::optional<ScheduleCsvFile>& csv) {
  if (layers_per_stage && blocks) {
    const int stages = (*blocks + first_less + last_less + *layers_per_stage - 1) / *layers_per_stage;
    if (stages % pipeline != 0 || stages / pipeline < 2) {
      toml.fail(kLayersPerStage, fmt::format("{} blocks at {} per stage make {} stages: a looped schedule needs a "
                                             "multiple of the pipeline degree {}, at least two per rank",
                                             *blocks, *layers_per_stage, stages, pipeline));
    }
    return stages / pipeline;
  }
  if (csv) return std::max(1, (highest_stage(csv->text) + 1 + pipeline - 1) / pipeline);
  if (layers_per_stage) {
    toml.fail(kLayersPerStage, "the stages per rank of a looped schedule follow from the model's blocks: give the "
                               "model (--model)");
  }
  return 2;
}

}  // namespace

PipelineRead read_pipeline(const TomlValues& toml, const PipelineInput& in, const TorchTitanImportOptions& options,
                           PlanYaml& plan, std::vector<std::string>& notes) {
  PipelineRead out;
  out.micro_batch = count(toml, "parallelism.pipeline_parallel_microbatch_size", 1);
  const std::string name = toml.text(kSchedule).value_or("1F1B");
  const std::string csv_name = toml.text(kCsv).value_or("");
  const std::optional<int> layers_per_stage =
      toml.has(kLayersPerStage) ? std::optional<int>(count(toml, kLayersPerStage, 1)) : std::nullopt;
  const auto less = [&](std::string_view key) {
    const std::int64_t n = toml.integer(key).value_or(1);  // TorchTitan's default: one layer's worth
    if (n < 0 || n > 1'000'000) toml.fail(key, fmt::format("{} is a layer count (0 or more), not {}", key, n));
    return static_cast<int>(n);
  };
  const int first_less = less(kFirstLess);
  const int last_less = less(kLastLess);
  if (in.pipeline == 1) return out;  // TorchTitan builds no pipeline: the keys set nothing

  if (in.local_batch % out.micro_batch != 0) {
    toml.fail("training.local_batch_size",
              fmt::format("local_batch_size {} is not a multiple of pipeline_parallel_microbatch_size {} (TorchTitan "
                          "refuses it)",
                          in.local_batch, out.micro_batch));
  }
  out.microbatches = in.local_batch / out.micro_batch;
  plan.put("batch", "micro", std::to_string(out.micro_batch), line_of(toml, "parallelism.pipeline_parallel_microbatch_size"));

  const ScheduleClass cls = schedule_class(toml, name);
  std::optional<ScheduleCsvFile> csv;
  if (!csv_name.empty()) {
    if (!options.read_csv) toml.fail(kCsv, "this import reads no schedule CSV");
    try {
      csv = options.read_csv(csv_name);
    } catch (const InputError& e) {
      toml.fail(kCsv, fmt::format("the schedule CSV '{}' cannot be read: {}", csv_name, e.message()));
    }
  } else if (!cls.kind) {
    toml.fail(kSchedule, fmt::format("{} runs the order of a schedule CSV: set pipeline_parallel_schedule_csv", name));
  }

  const std::optional<int> blocks =
      options.model != nullptr ? std::optional<int>(plan::partitionable_layer_count(*options.model)) : std::nullopt;
  const int chunks = cls.v_shaped       ? 2
                     : cls.single_stage ? 1
                                        : looped_chunks(toml, layers_per_stage, blocks, in.pipeline, first_less,
                                                        last_less, csv);
  const int stages = in.pipeline * chunks;
  if (layers_per_stage && blocks && (cls.v_shaped || cls.single_stage)) {
    const int built = (*blocks + first_less + last_less + *layers_per_stage - 1) / *layers_per_stage;
    if (built != stages) {
      toml.fail(kLayersPerStage,
                fmt::format("{} blocks at {} per stage make {} stages, but {} builds {} per rank on {} ranks", *blocks,
                            *layers_per_stage, built, name, chunks, in.pipeline));
    }
  }

  // The schedule: the class's own, or the mpsim schedule whose order the CSV holds.
  plan::ScheduleKind kind = cls.kind.value_or(plan::ScheduleKind::OneFOneB);
  std::string schedule_comment = line_of(toml, kSchedule);
  if (csv) {
    schedule::PipelineShape shape;
    shape.stages = in.pipeline;
    shape.microbatches = out.microbatches;
    shape.chunks = chunks;
    shape.kind = cls.v_shaped ? plan::ScheduleKind::ZbV
                 : chunks > 1 ? plan::ScheduleKind::Interleaved1F1B
                              : plan::ScheduleKind::OneFOneB;
    shape.microbatch_group_size = chunks > 1 ? in.pipeline : 1;
    // Every microbatch passes forward and backward through every stage, at most two passes a cell: a CSV
    // with fewer cells cannot hold the schedule, and the reader need not size one that large.
    const auto cells = static_cast<std::int64_t>(std::count(csv->text.begin(), csv->text.end(), ',') +
                                                 std::count(csv->text.begin(), csv->text.end(), '\n') + 1);
    if (static_cast<std::int64_t>(stages) * out.microbatches > cells) {
      throw InputError({csv->path, 1, 1}, "",
                       fmt::format("{} cells cannot hold {} microbatches through {} stages (a forward and a backward "
                                   "each)",
                                   cells, out.microbatches, stages));
    }
    const schedule::Program order = interop::from_torch_csv(csv->text, csv->path, shape);
    const std::string csv_file = std::filesystem::path(csv->path).filename().string();
    if (const std::optional<schedule::PipelineShape> match = matching_schedule(order)) {
      kind = match->kind;
      schedule_comment = fmt::format("{}, the order of {}", line_of(toml, kCsv), csv_file);
      if (kind == plan::ScheduleKind::ZbAuto) {
        plan.put("", "zb_memory_limit", std::to_string(match->memory_limit), "the limit that gives the CSV's order");
      }
      if (kind == plan::ScheduleKind::SageMakerInterleaved) {
        plan.put("", "active_microbatches", std::to_string(match->active_microbatches),
                 "the cap that gives the CSV's order");
      }
      if (kind == plan::ScheduleKind::Interleaved1F1B && match->microbatch_group_size != in.pipeline) {
        plan.put("", "microbatch_group_size_per_vp_stage", std::to_string(match->microbatch_group_size),
                 "the group size that gives the CSV's order");
      }
    } else {
      kind = shape.kind;
      schedule_comment = fmt::format("{}: {} places the stages as the CSV does; its order is none of mpsim's",
                                     line_of(toml, kCsv), plan::to_string(kind));
      notes.push_back(fmt::format("the order in {} is none of mpsim's schedules: the plan runs {}, which places the "
                                  "stages as it does; `mpsim schedule import {} --topology T --model M --plan PLAN` "
                                  "simulates the CSV's own order",
                                  csv->path, plan::to_string(kind), csv->path));
    }
  }
  plan.put("", "schedule", std::string(plan::name_of(plan::kScheduleNames, kind)), schedule_comment);
  if (chunks > 1 && !plan::is_v_shaped(kind)) {
    plan.put("parallelism", "virtual_stages", std::to_string(chunks), line_of(toml, csv ? kCsv : kSchedule));
  }

  // The layer split. With no layers counted for the embedding and the output, TorchTitan spreads the
  // blocks evenly with the remainder on the first stages: mpsim's balanced split.
  if (first_less != 0 || last_less != 0) {
    if (blocks) {
      plan.put("", "partition", pipeline_partition_text(torchtitan_split(toml, *blocks, stages, first_less, last_less)),
               fmt::format("TorchTitan's split: {} and {}", line_of(toml, kFirstLess), line_of(toml, kLastLess)));
    } else {
      notes.push_back(fmt::format(
          "TorchTitan splits the blocks counting the embedding as {} and the output as {} layers "
          "(pipeline_parallel_first_stage_less_layers / last_stage_less_layers); without the model (--model) the "
          "plan keeps mpsim's balanced split",
          first_less, last_less));
    }
  }
  return out;
}

}  // namespace mpsim::interop::detail
