// mpsim compare: a predicted step against a measured one (step time, devices, instruction kinds), or against
// a framework's step log (what a log knows: step time, throughput, memory).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <iostream>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/inputs.h"
#include "cli/measured_step.h"
#include "cli/report_text.h"
#include "cli/table.h"
#include "interop/trace/framework_trace.h"
#include "sim/core/gzip.h"
#include "sim/core/input_error.h"
#include "sim/core/units.h"
#include "sim/engine/simulator.h"
#include "sim/engine/traced_simulation.h"
#include "sim/trace/compare.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::cli {
namespace {

struct CompareArgs {
  std::string predicted;
  std::vector<std::string> measured;  ///< one mpsim trace or report, a step-time log, or a Kineto trace per rank
  std::optional<int> gpus_per_node;
  bool json = false;
  /// With --topology, --model and --plan, compare simulates the prediction itself (with --profile, --set
  /// and --gpus as simulate takes them), and every positional file is measured.
  InputFiles files;
  std::vector<std::string> sets;
  std::optional<int> gpus;
};

bool simulates(const CompareArgs& args) {
  return !args.files.topology.empty() || !args.files.model.empty() || !args.files.plan.empty();
}

/// The prediction compare holds the run to: the PREDICTED file, or, given the run's inputs, a simulation of
/// them here (so that a software profile fitted since, --profile, applies: a PREDICTED file keeps the
/// rates it was simulated with). Moves the positional files to `args.measured` in that case.
trace::StepRecord predicted_step(CompareArgs& args) {
  if (!simulates(args)) {
    if (!args.files.profile.empty()) {
      throw InputError({"--profile", 0, 0}, "",
                       "a PREDICTED file keeps the rates it was simulated with; to compare with a profile, give the "
                       "run's --topology, --model and --plan instead of PREDICTED (or simulate it with --profile)");
    }
    if (!args.sets.empty()) throw InputError({"--set", 0, 0}, "", "--set changes inputs compare simulates: give --topology, --model and --plan");
    if (args.gpus) throw InputError({"--gpus", 0, 0}, "", "--gpus selects GPUs compare simulates on: give --topology, --model and --plan");
    if (args.measured.empty()) {
      throw InputError({"MEASURED", 0, 0}, "", "expected PREDICTED and MEASURED files (or --topology, --model, --plan and MEASURED)");
    }
    return load_step(args.predicted);
  }
  for (const auto& [flag, path] : {std::pair{"--topology", &args.files.topology}, std::pair{"--model", &args.files.model},
                                   std::pair{"--plan", &args.files.plan}}) {
    if (path->empty()) throw InputError({flag, 0, 0}, "", "compare simulates the run from --topology, --model and --plan: give all three");
  }
  args.measured.insert(args.measured.begin(), args.predicted);
  std::vector<Override> overrides;
  for (const auto& s : args.sets) overrides.push_back(parse_override(s, "--set"));
  const Inputs in = load_inputs_on_gpus(args.files, overrides, {args.gpus, args.gpus ? args.gpus_per_node : std::nullopt});
  args.predicted = fmt::format("simulate --plan {}{}", args.files.plan,
                               !args.files.profile.empty() ? " --profile " + args.files.profile
                               : in.profile               ? " (the topology's profile, " + in.profile->name + ")"
                                                          : "");
  engine::EngineOptions options;
  options.record_memory_timeline = true;  // as simulate --trace records it
  engine::Prediction prediction = engine::simulate_traced(in.cluster, in.model, *in.plan, options, link_lanes_named("busiest"));
  return {std::move(prediction.report), std::move(prediction.timeline)};
}

std::string seconds_or_dash(const std::optional<double>& s) { return s ? cli::seconds(*s) : "-"; }
std::string percent_or_dash(const std::optional<double>& fraction) { return fraction ? cli::percent(*fraction) : "-"; }
std::string ratio(const std::optional<double>& r) { return r ? fmt::format("{:.2f}", *r) : "-"; }

void print_comparison(const CompareArgs& args, const trace::Comparison& c) {
  std::cout << fmt::format("predicted {}\nmeasured  {}\n\n", args.predicted, fmt::join(args.measured, " "));
  Table summary;
  summary.add_row({"", "predicted", "measured", "error"});
  summary.add_row({"step time", seconds_or_dash(c.predicted_step_time_s), seconds_or_dash(c.measured_step_time_s),
                   percent_or_dash(c.step_time_error)});
  summary.add_row(
      {"idle", percent_or_dash(c.predicted_bubble_fraction), percent_or_dash(c.measured_bubble_fraction), ""});
  std::cout << summary.render();
  if (!c.devices.empty()) {
    std::cout << "\n";
    Table devices;
    devices.add_row({"device", "stage", "busy pred", "busy meas", "idle pred", "idle meas"});
    for (const auto& d : c.devices) {
      devices.add_row({d.id, std::to_string(d.stage), seconds_or_dash(d.predicted_busy_s),
                       seconds_or_dash(d.measured_busy_s), percent_or_dash(d.predicted_bubble_fraction),
                       percent_or_dash(d.measured_bubble_fraction)});
    }
    std::cout << devices.render();
  }
  if (!c.stages.empty()) {
    std::cout << "\nper stage (the mean over its devices):\n";
    Table stages;
    stages.add_row({"stage", "devices pred", "devices meas", "busy pred", "busy meas", "idle pred", "idle meas"});
    for (const auto& st : c.stages) {
      stages.add_row({std::to_string(st.stage), std::to_string(st.predicted_devices), std::to_string(st.measured_devices),
                      seconds_or_dash(st.predicted_busy_s), seconds_or_dash(st.measured_busy_s),
                      percent_or_dash(st.predicted_idle_fraction), percent_or_dash(st.measured_idle_fraction)});
    }
    std::cout << stages.render();
  }
  if (!c.per_kind.empty()) {
    std::cout << "\nper instruction kind (ratio = predicted / measured):\n";
    Table kinds;
    kinds.add_row({"kind", "count pred", "count meas", "mean pred", "mean meas", "ratio", "median pred", "median meas",
                   "ratio"});
    for (const auto& k : c.per_kind) {
      const auto mean = [](const trace::DurationStats& s) { return s.count > 0 ? seconds_or_dash(s.mean_s) : "-"; };
      const auto median = [](const trace::DurationStats& s) { return s.count > 0 ? seconds_or_dash(s.median_s) : "-"; };
      kinds.add_row({std::string(trace::to_string(k.kind)), std::to_string(k.predicted.count),
                     std::to_string(k.measured.count), mean(k.predicted), mean(k.measured), ratio(k.mean_ratio),
                     median(k.predicted), median(k.measured), ratio(k.median_ratio)});
    }
    std::cout << kinds.render();
  }
  if (c.matched_ops > 0) {
    std::cout << fmt::format("\nper op: {} ops in both traces, median ratio {}; the largest differences:\n", c.matched_ops,
                             ratio(c.op_median_ratio));
    Table ops;
    ops.add_row({"device", "op", "kind", "mb", "chunk", "predicted", "measured"});
    for (const auto& o : c.worst_ops) {
      const auto or_dash = [](std::int32_t v) { return v >= 0 ? std::to_string(v) : std::string("-"); };
      ops.add_row({o.device, std::to_string(o.op), std::string(trace::to_string(o.kind)), or_dash(o.microbatch),
                   or_dash(o.chunk), seconds_or_dash(o.predicted_s), seconds_or_dash(o.measured_s)});
    }
    std::cout << ops.render();
  }
}

/// |predicted - measured| / measured, or nothing when the measured value is not positive.
std::optional<double> relative_error(double predicted, double measured) {
  if (measured <= 0) return std::nullopt;
  return std::abs(predicted - measured) / measured;
}

std::string bytes_text(std::int64_t bytes) { return to_string(Bytes::bytes(bytes)); }

nlohmann::ordered_json json_or_null(const std::optional<double>& v) {
  return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json();
}

/// The logged rank's GPU in the prediction, against its memory lines as the measured-memory validation
/// compares them (docs/validation.md, "Memory"): max allocated (PyTorch's live tensors) with the GPU's
/// predicted peak less its runtime part (CUDA context, workspaces, NCCL buffers, ZeRO 3's
/// collective-stream pools: the report's `memory.reserved`), max reserved with the whole peak.
/// The errors are signed, predicted / measured - 1: below 0, the prediction is under the measurement,
/// the direction that lets a plan run out of memory.
struct RankPeaks {
  const trace::DeviceReport* device = nullptr;
  std::int64_t allocated_bytes = 0;
  std::optional<double> allocated_error;
  std::optional<double> reserved_error;
  explicit operator bool() const { return device != nullptr; }
};
RankPeaks rank_peaks(const trace::DeviceReport* device, std::optional<std::int64_t> max_allocated_bytes,
                     std::optional<std::int64_t> max_reserved_bytes) {
  const auto signed_error = [](std::int64_t predicted_bytes, std::int64_t measured_bytes) -> std::optional<double> {
    if (measured_bytes <= 0) return std::nullopt;
    return static_cast<double>(predicted_bytes) / static_cast<double>(measured_bytes) - 1;
  };
  RankPeaks out;
  out.device = device;
  if (!device || !max_allocated_bytes) return out;
  out.allocated_bytes = device->peak_memory_bytes - device->memory.reserved;
  out.allocated_error = signed_error(out.allocated_bytes, *max_allocated_bytes);
  if (max_reserved_bytes) out.reserved_error = signed_error(device->peak_memory_bytes, *max_reserved_bytes);
  return out;
}
RankPeaks rank_peaks(const trace::Report& predicted, const interop::StepLog& log) {
  return rank_peaks(predicted_device_of_rank(predicted, log.max_allocated_rank), log.max_allocated_bytes,
                    log.max_reserved_bytes);
}

/// The fields of one rank's memory in `compare --json` (the step log's `memory` object and each of a
/// profiler run's `memory_by_rank`): its GPU, the predicted tensors and whole peak there, the errors.
void add_rank_peaks_json(const RankPeaks& rank, bool has_reserved, nlohmann::ordered_json& out) {
  out["measured_rank_device"] = rank.device->id;
  out["predicted_rank_allocated_bytes"] = rank.allocated_bytes;
  out["allocated_error"] = json_or_null(rank.allocated_error);
  if (has_reserved) {
    out["predicted_rank_peak_bytes"] = rank.device->peak_memory_bytes;
    out["reserved_error"] = json_or_null(rank.reserved_error);
  }
}

/// `compare --json` against a step log: what a log can know, and nothing else (no devices, idle time
/// or instruction kinds; a figure the log does not print is absent, not zero).
nlohmann::ordered_json log_comparison_json(const trace::Report& predicted, const interop::StepLog& log) {
  nlohmann::ordered_json out;
  out["measured_kind"] = "step log";
  const auto error = relative_error(predicted.step_time_s, log.step_time_s);
  out["step_time_error"] = error ? nlohmann::ordered_json(*error) : nlohmann::ordered_json();
  out["predicted_step_time_s"] = predicted.step_time_s;
  out["measured_step_time_s"] = log.step_time_s;
  out["measured_steps"] = log.steps;
  if (log.tflops_per_gpu) {
    const auto tflops_error = relative_error(predicted.tflops_per_gpu, *log.tflops_per_gpu);
    out["tflops_per_gpu"] = {{"predicted", predicted.tflops_per_gpu},
                             {"measured", *log.tflops_per_gpu},
                             {"error", tflops_error ? nlohmann::ordered_json(*tflops_error) : nlohmann::ordered_json()}};
  }
  if (log.max_allocated_bytes) {
    nlohmann::ordered_json memory;
    memory["predicted_peak_bytes"] = predicted.peak_memory_bytes;
    memory["measured_max_allocated_bytes"] = *log.max_allocated_bytes;
    if (log.max_reserved_bytes) memory["measured_max_reserved_bytes"] = *log.max_reserved_bytes;
    memory["measured_rank"] = log.max_allocated_rank;
    const auto memory_error =
        relative_error(static_cast<double>(predicted.peak_memory_bytes), static_cast<double>(*log.max_allocated_bytes));
    memory["error"] = memory_error ? nlohmann::ordered_json(*memory_error) : nlohmann::ordered_json();
    if (const RankPeaks rank = rank_peaks(predicted, log)) add_rank_peaks_json(rank, log.max_reserved_bytes.has_value(), memory);
    out["memory"] = std::move(memory);
  }
  return out;
}

void print_log_comparison(const CompareArgs& args, const trace::Report& predicted, const interop::StepLog& log) {
  std::cout << fmt::format("predicted {}\nmeasured  {} (a step log: its step time, throughput and memory; a log "
                           "cannot know devices, idle time or kernels)\n\n",
                           args.predicted, args.measured.front());
  Table table;
  table.add_row({"", "predicted", "measured", "error"});
  table.add_row({fmt::format("step time (median of {} steps)", log.steps), cli::seconds(predicted.step_time_s),
                 cli::seconds(log.step_time_s), percent_or_dash(relative_error(predicted.step_time_s, log.step_time_s))});
  if (log.tflops_per_gpu) {
    table.add_row({"TFLOP/s per GPU", fmt::format("{:.4g}", predicted.tflops_per_gpu),
                   fmt::format("{:.4g}", *log.tflops_per_gpu),
                   percent_or_dash(relative_error(predicted.tflops_per_gpu, *log.tflops_per_gpu))});
  }
  const RankPeaks rank = rank_peaks(predicted, log);
  if (rank) {
    table.add_row({fmt::format("memory of rank {} ({}): tensors / max allocated", log.max_allocated_rank, rank.device->id),
                   bytes_text(rank.allocated_bytes), bytes_text(*log.max_allocated_bytes),
                   percent_or_dash(rank.allocated_error)});
    if (log.max_reserved_bytes) {
      table.add_row({"  its whole peak / max reserved", bytes_text(rank.device->peak_memory_bytes),
                     bytes_text(*log.max_reserved_bytes), percent_or_dash(rank.reserved_error)});
    }
  } else if (log.max_allocated_bytes) {
    table.add_row({fmt::format("memory: predicted peak / max allocated (rank {})", log.max_allocated_rank),
                   bytes_text(predicted.peak_memory_bytes), bytes_text(*log.max_allocated_bytes),
                   percent_or_dash(relative_error(static_cast<double>(predicted.peak_memory_bytes),
                                                  static_cast<double>(*log.max_allocated_bytes)))});
    if (log.max_reserved_bytes) {
      table.add_row({"  max reserved (the allocator's cache too)", "", bytes_text(*log.max_reserved_bytes), ""});
    }
  }
  std::cout << table.render();
  if (!log.tflops_per_gpu || !log.max_allocated_bytes) {
    std::cout << fmt::format("\nNot in the log: {}{}{}.\n", log.tflops_per_gpu ? "" : "throughput (Megatron-LM prints it with --log-throughput)",
                             !log.tflops_per_gpu && !log.max_allocated_bytes ? "; " : "",
                             log.max_allocated_bytes ? "" : "memory (Megatron-LM's \"memory (MB)\" lines)");
  }
  if (rank) {
    std::cout << fmt::format("\nThe logged rank's GPU as the prediction names it ({}): max allocated (PyTorch's live "
                             "tensors) against its predicted peak less the CUDA context, workspaces, NCCL buffers and "
                             "ZeRO 3's collective-stream pools, max reserved against its whole peak. Frameworks log "
                             "memory from some ranks only: the fullest GPU may be another.\n",
                             rank.device->id);
  } else if (log.max_allocated_bytes) {
    std::cout << "\nThe predicted peak is all a GPU holds at its fullest (the CUDA context, workspaces, NCCL "
                 "buffers and ZeRO 3's collective-stream pools too); max allocated is PyTorch's allocator alone.\n";
  }
}

}  // namespace

/// `memory_by_rank`: each profiled rank's allocator peaks against its GPU's prediction.
nlohmann::ordered_json memory_by_rank_json(const trace::Report& predicted, const std::vector<interop::RankMemory>& memory,
                                           std::optional<int> gpus_per_node) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (const interop::RankMemory& m : memory) {
    nlohmann::ordered_json rank;
    rank["rank"] = m.rank;
    rank["measured_max_allocated_bytes"] = m.max_allocated_bytes;
    rank["measured_max_reserved_bytes"] = m.max_reserved_bytes;
    const RankPeaks peaks =
        rank_peaks(predicted_device_of_rank(predicted, m.rank, gpus_per_node), m.max_allocated_bytes, m.max_reserved_bytes);
    if (peaks) add_rank_peaks_json(peaks, true, rank);
    out.push_back(std::move(rank));
  }
  return out;
}

void print_memory_by_rank(const trace::Report& predicted, const std::vector<interop::RankMemory>& memory,
                          std::optional<int> gpus_per_node) {
  Table table;
  table.add_row({"rank", "GPU", "tensors", "max allocated", "error", "peak", "max reserved", "error"});
  for (const interop::RankMemory& m : memory) {
    const RankPeaks peaks =
        rank_peaks(predicted_device_of_rank(predicted, m.rank, gpus_per_node), m.max_allocated_bytes, m.max_reserved_bytes);
    table.add_row({std::to_string(m.rank), peaks ? peaks.device->id : "-",
                   peaks ? bytes_text(peaks.allocated_bytes) : "-", bytes_text(m.max_allocated_bytes),
                   percent_or_dash(peaks.allocated_error), peaks ? bytes_text(peaks.device->peak_memory_bytes) : "-",
                   bytes_text(m.max_reserved_bytes), percent_or_dash(peaks.reserved_error)});
  }
  std::cout << "\nMemory by rank (the profiler's memory events inside the profiled steps; predicted tensors: the GPU's "
               "peak less the CUDA context, workspaces, NCCL buffers and ZeRO 3's collective-stream pools; errors "
               "predicted / measured - 1, below 0 under):\n"
            << table.render();
}

void add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "Hold a prediction to account: a predicted step against a measured one");
  cmd->add_option("PREDICTED", args->predicted,
                  "Predicted trace (simulate --trace) or report (simulate --json); with --topology, --model and "
                  "--plan, the first measured file")
      ->required();
  cmd->add_option("MEASURED", args->measured,
                  "Measured trace (execute --trace) or report (execute --json); a PyTorch profiler (Kineto) trace "
                  "per rank of a Megatron-LM / NeMo / TorchTitan run; or a Megatron-LM / NeMo step-time log");
  cmd->add_option("--topology", args->files.topology, "Simulate the prediction here: the run's topology YAML");
  cmd->add_option("--model", args->files.model, "Simulate the prediction here: the run's model YAML");
  cmd->add_option("--plan", args->files.plan, "Simulate the prediction here: the run's plan YAML");
  add_profile_option(*cmd, args->files.profile);
  // One value per --set, so that the measured files may follow it.
  cmd->add_option("--set", args->sets, "With --topology: override an input field, as simulate --set (repeatable)")
      ->allow_extra_args(false);
  cmd->add_option("--gpus", args->gpus, "With --topology: simulate on the first N GPUs, as simulate --gpus")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--gpus-per-node", args->gpus_per_node,
                  "With Kineto traces: GPUs per node, to name rank r's GPU (default: as the prediction names them); "
                  "with --gpus, also the GPUs used of each node")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--json", args->json, "Print the comparison as JSON");
  cmd->footer(
      "The step time error is |predicted - measured| / measured. Per instruction kind, the ratio is\n"
      "predicted / measured of the mean and of the median span duration (above 1: the prediction is slower).\n"
      "Example:\n"
      "  mpsim simulate --topology T --model M --plan P --trace pred.json\n"
      "  mpsim execute --topology T --model M --plan P --ranks 2 --trace meas.json\n"
      "  mpsim compare pred.json meas.json\n"
      "  mpsim compare pred.json rank0.pt.trace.json rank1.pt.trace.json   (PyTorch profiler traces of a real run)\n"
      "  mpsim compare pred.json train.log                                  (a Megatron-LM or NeMo log: step time, throughput, memory)\n"
      "  mpsim compare --topology T --model M --plan P --profile mine.yaml train.log   (simulated here, with a profile)");
  cmd->callback([args] {
    const trace::StepRecord predicted = predicted_step(*args);
    if (const auto log = load_step_log(args->measured)) {
      if (args->json) {
        nlohmann::ordered_json out = log_comparison_json(predicted.report, *log);
        out["predicted_from"] = args->predicted;
        std::cout << out.dump(2) << "\n";
      } else {
        print_log_comparison(*args, predicted.report, *log);
      }
      return;
    }
    std::vector<interop::RankMemory> memory;  // from PyTorch profiler traces' memory events
    const trace::StepRecord measured =
        load_measured_step(args->measured, args->gpus_per_node, predicted.report, nullptr, &memory);
    const trace::Comparison c = trace::compare(predicted, measured);
    if (args->json) {
      nlohmann::ordered_json out = trace::comparison_json(c);
      // The PREDICTED file, or the simulation compare ran (`simulate --plan P [--profile F]`).
      out["predicted_from"] = args->predicted;
      if (!memory.empty()) out["memory_by_rank"] = memory_by_rank_json(predicted.report, memory, args->gpus_per_node);
      std::cout << out.dump(2) << "\n";
    } else {
      print_comparison(*args, c);
      if (!memory.empty()) print_memory_by_rank(predicted.report, memory, args->gpus_per_node);
    }
  });
}

}  // namespace mpsim::cli
