#include "cli/measured_step.h"

#include <algorithm>
#include <fstream>
#include <iterator>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "interop/trace/framework_trace.h"
#include "sim/core/gzip.h"
#include "sim/core/input_error.h"
#include "sim/trace/trace_reader.h"

namespace mpsim::cli {
namespace {

std::string read_whole_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError({path, 0, 0}, "", "cannot open the file");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw InputError({path, 0, 0}, "", "cannot read the file");
  // Traces and PyTorch profiler traces are often gzipped (.json.gz): recognised by content, not name.
  try {
    return gunzip_if_gzip(std::move(text));
  } catch (const GzipError& e) {
    throw InputError({path, 0, 0}, "", e.what());
  }
}


/// The GPUs per node of the predicted devices' names (node0/gpu0, node0/gpu1, ...): 8 when it names none.
int predicted_gpus_per_node(const trace::Report& predicted) {
  const auto on_node0 = std::count_if(predicted.devices.begin(), predicted.devices.end(),
                                      [](const trace::DeviceReport& d) { return d.id.rfind("node0/", 0) == 0; });
  return on_node0 > 0 ? static_cast<int>(on_node0) : 8;
}

}  // namespace

trace::StepRecord load_measured_step(const std::vector<std::string>& measured, std::optional<int> gpus_per_node,
                                     const trace::Report& predicted, interop::TraceKernels* kernels,
                                     std::vector<interop::RankMemory>* memory) {
  const std::string first = read_whole_file(measured.front());
  const bool kineto = interop::is_kineto_trace(first);
  if (!kineto && measured.size() > 1) {
    throw InputError({measured[1], 0, 0}, "",
                     "several measured files are the ranks of one PyTorch profiler (Kineto) run; " + measured.front() +
                         " is not one");
  }
  try {
    if (kineto) {
      std::vector<interop::KinetoFile> ranks;
      for (const std::string& path : measured) ranks.push_back({path, path == measured.front() ? first : read_whole_file(path)});
      const trace::PlanSummary& p = predicted.plan;
      // Megatron's rank order puts a stage's tensor x context x data ranks together.
      const int ranks_per_stage = p.pipeline > 1 ? p.tensor * p.context * p.data : 0;
      return interop::read_kineto_step(ranks, gpus_per_node.value_or(predicted_gpus_per_node(predicted)),
                                       ranks_per_stage, kernels, memory);
    }
    if (interop::is_step_time_log(first)) return interop::read_step_time_log(first, measured.front());
  } catch (const trace::TraceReadError& e) {
    throw InputError({measured.front(), 0, 0}, "", e.what());
  }
  return load_step(measured.front());
}

const trace::DeviceReport* predicted_device_of_rank(const trace::Report& predicted, int rank,
                                                   std::optional<int> gpus_per_node) {
  if (rank < 0) return nullptr;
  const int per_node = gpus_per_node.value_or(predicted_gpus_per_node(predicted));
  const std::string id = fmt::format("node{}/gpu{}", rank / per_node, rank % per_node);
  const auto at = std::find_if(predicted.devices.begin(), predicted.devices.end(),
                               [&](const trace::DeviceReport& d) { return d.id == id; });
  return at == predicted.devices.end() ? nullptr : &*at;
}

std::optional<interop::StepLog> load_step_log(const std::vector<std::string>& measured) {
  if (measured.size() != 1) return std::nullopt;
  const std::string text = read_whole_file(measured.front());
  if (!interop::is_step_time_log(text)) return std::nullopt;
  try {
    return interop::read_step_log(text, measured.front());
  } catch (const trace::TraceReadError& e) {
    throw InputError({measured.front(), 0, 0}, "", e.what());
  }
}

trace::StepRecord load_step(const std::string& path) {
  const std::string text = read_whole_file(path);
  trace::StepRecord step;
  try {
    if (text.find("\"traceEvents\"") != std::string::npos) {
      trace::TraceFile file = trace::parse_trace(text, path);
      if (file.report) {
        step.report = std::move(*file.report);
      } else {
        // A trace without the report: the step spans the whole timeline; devices are unknown.
        step.report.step_time_s = trace::timeline_extent_s(file.timeline);
      }
      step.timeline = std::move(file.timeline);
      return step;
    }
    const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
    if (doc.is_discarded()) throw InputError({path, 0, 0}, "", "not JSON: expected a trace or a report");
    if (!doc.is_object() || !doc.contains("step_time_s")) {
      throw InputError({path, 0, 0}, "",
                       "neither a trace (no \"traceEvents\") nor a report (no \"step_time_s\"); give the output "
                       "of `simulate --trace` or `simulate --json`");
    }
    step.report = trace::parse_report(doc);
  } catch (const trace::TraceReadError& e) {
    // parse_trace's messages already start with the file name; parse_report's do not.
    const std::string what = e.what();
    if (what.rfind(path + ": ", 0) == 0) throw InputError({path, 0, 0}, "", what.substr(path.size() + 2));
    throw InputError({path, 0, 0}, "", what);
  }
  return step;
}

}  // namespace mpsim::cli
