#include "interop/import/sagemaker_import.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/core/input_error.h"

namespace mpsim::interop {
namespace {

using InputJson = nlohmann::json;

/// Line and column (1-based) of byte `offset` in `text`.
SourceLocation location_of(std::string_view text, std::size_t offset, const std::string& file) {
  SourceLocation at{file, 1, 1};
  for (std::size_t i = 0; i < std::min(offset, text.size()); ++i) {
    if (text[i] == '\n') {
      ++at.line;
      at.column = 1;
    } else {
      ++at.column;
    }
  }
  return at;
}

/// Where `"key"` is first written in the text, for errors about its value (whole file when absent).
SourceLocation location_of_key(std::string_view text, std::string_view key, const std::string& file) {
  const auto at = text.find(fmt::format("\"{}\"", key));
  return at == std::string_view::npos ? SourceLocation{file, 0, 0} : location_of(text, at, file);
}

class Parameters {
 public:
  Parameters(const InputJson& parameters, std::string_view text, const std::string& file)
      : parameters_(parameters), text_(text), file_(file) {}

  [[nodiscard]] const InputJson* find(std::string_view key) const {
    const auto it = parameters_.find(std::string(key));
    return it == parameters_.end() ? nullptr : &*it;
  }
  [[noreturn]] void fail(std::string_view key, const std::string& message) const {
    throw InputError(location_of_key(text_, key, file_), fmt::format("parameters.{}", key), message);
  }
  [[nodiscard]] std::optional<long long> count(std::string_view key) const {
    const InputJson* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_number_integer() || v->get<long long>() < 1) fail(key, fmt::format("a positive integer, not {}", v->dump()));
    return v->get<long long>();
  }
  [[nodiscard]] std::optional<bool> flag(std::string_view key) const {
    const InputJson* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_boolean()) fail(key, fmt::format("true or false, not {}", v->dump()));
    return v->get<bool>();
  }
  [[nodiscard]] std::optional<std::string> word(std::string_view key) const {
    const InputJson* v = find(key);
    if (v == nullptr) return std::nullopt;
    if (!v->is_string()) fail(key, fmt::format("a string, not {}", v->dump()));
    return v->get<std::string>();
  }

 private:
  const InputJson& parameters_;
  std::string_view text_;
  const std::string& file_;
};

}  // namespace

ImportedLaunch import_sagemaker(std::string_view json_text, const std::string& file, std::optional<int> gpus) {
  InputJson root;
  try {
    root = InputJson::parse(json_text);
  } catch (const InputJson::parse_error& e) {
    throw InputError(location_of(json_text, e.byte == 0 ? 0 : e.byte - 1, file), "",
                     fmt::format("not JSON: {}", e.what()));
  }
  const InputJson* parameters = nullptr;
  if (root.is_object() && root.contains("smdistributed") && root["smdistributed"].is_object() &&
      root["smdistributed"].contains("modelparallel") && root["smdistributed"]["modelparallel"].is_object()) {
    const InputJson& modelparallel = root["smdistributed"]["modelparallel"];
    if (modelparallel.contains("parameters") && modelparallel["parameters"].is_object()) parameters = &modelparallel["parameters"];
  }
  if (parameters == nullptr) {
    throw InputError(SourceLocation{file, 0, 0}, "smdistributed.modelparallel.parameters",
                     "no SageMaker model parallelism parameters (the estimator's distribution: "
                     "{\"smdistributed\": {\"modelparallel\": {\"enabled\": true, \"parameters\": {...}}}})");
  }
  const Parameters p(*parameters, json_text, file);

  ImportedLaunch out;
  out.gpus = gpus;
  std::string plan = fmt::format(
      "# Imported by `mpsim plan import --from sagemaker` from {}; SageMaker model parallelism's names\n",
      std::filesystem::path(file).filename().string());
  const auto line = [&](std::string_view key, const std::string& value) { plan += fmt::format("{}: {}\n", key, value); };
  const long long pipeline = p.count("pipeline_parallel_degree").value_or(p.count("partitions").value_or(1));
  const long long tensor = p.count("tensor_parallel_degree").value_or(1);
  line("pipeline_parallel_degree", std::to_string(pipeline));
  line("tensor_parallel_degree", std::to_string(tensor));
  if (const auto m = p.count("microbatches")) line("microbatches", std::to_string(*m));
  if (const auto schedule = p.word("pipeline")) {
    if (*schedule != "simple" && *schedule != "interleaved") {
      p.fail("pipeline", fmt::format("SageMaker's pipeline is \"simple\" or \"interleaved\", not \"{}\"", *schedule));
    }
    line("pipeline", *schedule);
  }
  if (const auto active = p.count("active_microbatches")) line("active_microbatches", std::to_string(*active));
  if (const auto placement = p.word("placement_strategy")) line("placement_strategy", *placement);
  if (const auto optimize = p.word("optimize")) line("optimize", *optimize);
  if (const auto ddp = p.flag("ddp")) line("ddp", *ddp ? "true" : "false");
  if (p.flag("bf16").value_or(false)) line("bf16", "true");
  if (p.flag("fp16").value_or(false)) line("fp16", "true");
  if (p.flag("shard_optimizer_state").value_or(false)) line("zero", "1  # shard_optimizer_state");
  if (const auto sharded = p.count("sharded_data_parallel_degree")) {
    // Sharded data parallelism shards within groups of this many data-parallel ranks: HSDP's shard
    // groups are the rest of the data-parallel size, which needs the job's GPU count.
    if (!gpus) p.fail("sharded_data_parallel_degree", "needs the job's GPU count (--gpus) to give the shard groups");
    const long long data = *gpus / (pipeline * tensor);
    if (data < 1 || *gpus % (pipeline * tensor) != 0 || data % *sharded != 0) {
      p.fail("sharded_data_parallel_degree",
             fmt::format("{} does not divide the data-parallel size {} ({} GPUs over pipeline {} x tensor {})", *sharded,
                         data, *gpus, pipeline, tensor));
    }
    line("zero", fmt::format("3  # sharded_data_parallel_degree {}", *sharded));
    if (data / *sharded > 1) line("shard_groups", std::to_string(data / *sharded));
  }
  // Everything else (memory_weight, prescaled_batch, delayed_parameter_initialization, ...) sets neither.
  for (const auto& [key, value] : parameters->items()) {
    static constexpr std::string_view kRead[] = {
        "pipeline_parallel_degree", "partitions", "tensor_parallel_degree", "microbatches", "pipeline",
        "active_microbatches", "placement_strategy", "optimize", "ddp", "bf16", "fp16", "shard_optimizer_state",
        "sharded_data_parallel_degree"};
    if (std::find(std::begin(kRead), std::end(kRead), key) == std::end(kRead)) out.ignored.push_back(key);
  }
  out.plan_yaml = plan;
  return out;
}

}  // namespace mpsim::interop
