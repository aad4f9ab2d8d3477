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
#include "cli/measured_step.h"
#include "cli/table.h"
#include "interop/trace/framework_trace.h"
#include "sim/core/gzip.h"
#include "sim/core/input_error.h"
#include "sim/core/units.h"
#include "sim/trace/compare.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::cli {
namespace {

struct CompareArgs {
  std::string predicted;
  std::vector<std::string> measured;  ///< one mpsim trace or report, a step-time log, or a Kineto trace per rank
  std::optional<int> gpus_per_node;
  bool json = false;
};

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
  if (log.max_allocated_bytes) {
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
  if (log.max_allocated_bytes) {
    std::cout << "\nThe predicted peak is all a GPU holds at its fullest (the CUDA context, workspaces, NCCL "
                 "buffers and ZeRO 3's collective-stream pools too); max allocated is PyTorch's allocator alone.\n";
  }
}

}  // namespace

void add_compare_command(CLI::App& app) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand("compare", "Hold a prediction to account: a predicted step against a measured one");
  cmd->add_option("PREDICTED", args->predicted, "Predicted trace (simulate --trace) or report (simulate --json)")
      ->required();
  cmd->add_option("MEASURED", args->measured,
                  "Measured trace (execute --trace) or report (execute --json); a PyTorch profiler (Kineto) trace "
                  "per rank of a Megatron-LM / NeMo / TorchTitan run; or a Megatron-LM / NeMo step-time log")
      ->required();
  cmd->add_option("--gpus-per-node", args->gpus_per_node,
                  "With Kineto traces: GPUs per node, to name rank r's GPU (default: as the prediction names them)")
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
      "  mpsim compare pred.json train.log                                  (a Megatron-LM or NeMo log: step time, throughput, memory)");
  cmd->callback([args] {
    const trace::StepRecord predicted = load_step(args->predicted);
    if (const auto log = load_step_log(args->measured)) {
      if (args->json) {
        std::cout << log_comparison_json(predicted.report, *log).dump(2) << "\n";
      } else {
        print_log_comparison(*args, predicted.report, *log);
      }
      return;
    }
    const trace::StepRecord measured = load_measured_step(args->measured, args->gpus_per_node, predicted.report);
    const trace::Comparison c = trace::compare(predicted, measured);
    if (args->json) {
      std::cout << trace::comparison_json(c).dump(2) << "\n";
    } else {
      print_comparison(*args, c);
    }
  });
}

}  // namespace mpsim::cli
