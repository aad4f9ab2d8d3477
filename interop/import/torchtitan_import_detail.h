#pragma once
/// The parts of import_torchtitan (torchtitan_import.h) that its two files share: the plan being written
/// and the pipeline settings, read in torchtitan_pipeline_import.cpp.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "interop/formats/toml_values.h"
#include "interop/import/torchtitan_import.h"

namespace mpsim::interop::detail {

/// The imported plan's YAML: top-level keys and the `parallelism`, `batch` and `overlap` mappings, each
/// value commented with where it came from.
class PlanYaml {
 public:
  /// `section` "" is the top level; `comment` (may be empty) follows the value after "#".
  void put(std::string_view section, std::string_view key, const std::string& value, const std::string& comment);
  /// A comment line at the top level (after the header).
  void comment(const std::string& text);
  [[nodiscard]] std::string text(const std::string& header) const;

 private:
  struct Line {
    std::string section;
    std::string text;
  };
  std::vector<Line> lines_;
  std::vector<std::string> comments_;
};

/// "job.toml:12" for a key's value (the file's name only), or the file alone when the key is absent.
[[nodiscard]] std::string line_of(const TomlValues& toml, std::string_view key);

/// A positive whole number at `key`, or `fallback` when absent (TorchTitan's default).
[[nodiscard]] int count(const TomlValues& toml, std::string_view key, int fallback);

/// What the job's degrees say that the pipeline reading needs.
struct PipelineInput {
  int pipeline = 1;
  int local_batch = 8;  ///< training.local_batch_size
};

/// What it gives back beside the plan lines.
struct PipelineRead {
  int micro_batch = 1;    ///< pipeline_parallel_microbatch_size (pipeline > 1)
  int microbatches = 1;   ///< per pipeline step: local_batch_size / micro_batch
};

/// Reads the [parallelism] pipeline_* keys (and, for a CSV, the CSV) into `plan`: the schedule and its
/// parameters, virtual stages and the layer split; `notes` gets what the plan cannot say. With
/// pipeline 1 the keys are read and nothing is written (TorchTitan ignores them).
[[nodiscard]] PipelineRead read_pipeline(const TomlValues& toml, const PipelineInput& in,
                                         const TorchTitanImportOptions& options, PlanYaml& plan,
                                         std::vector<std::string>& notes);

}  // namespace mpsim::interop::detail
