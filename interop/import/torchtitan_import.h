#pragma once
/// Reading a TorchTitan job config TOML (what `plan export --to torchtitan` writes: [parallelism],
/// [training], [activation_checkpoint], the float8 / MX converters) into a plan in mpsim's names, each
/// value commented with the TOML line it came from. A schedule run from a CSV
/// (pipeline_parallel_schedule_csv) is read with PyTorch's CSV reader (interop/formats/torch_csv.h) and
/// named by the mpsim schedule that generates its order (schedule_match.h).
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "interop/import/megatron_import.h"
#include "sim/model/model.h"

namespace mpsim::interop {

/// A schedule CSV as read: the path it was found at (errors inside it name that file) and its text.
struct ScheduleCsvFile {
  std::string path;
  std::string text;
};
/// Reads the CSV a job names, given the path as the TOML writes it; throws InputError when it cannot.
using ScheduleCsvReader = std::function<ScheduleCsvFile(const std::string& written)>;

/// The reader `plan import` uses: a relative path from the folder of `job_file`, where `plan export`
/// writes the CSV (TorchTitan itself opens the path from the folder it is launched in).
[[nodiscard]] ScheduleCsvReader csv_beside(const std::string& job_file);

struct TorchTitanImportOptions {
  std::optional<int> gpus;  ///< the job's GPUs (torchrun's world size) when known
  /// The model `[model] name` / `flavor` builds, when known: its blocks give TorchTitan's layer split
  /// (the first and last stages' *_less_layers, a looped schedule's pipeline_parallel_layers_per_stage),
  /// and training.seq_len must be its seq_len.
  const model::Model* model = nullptr;
  ScheduleCsvReader read_csv;  ///< used when the job names a schedule CSV
};

/// Throws InputError at the TOML's line and column naming the key (`parallelism.pipeline_parallel_degree`):
/// not TOML, a value of the wrong type, a setting mpsim cannot represent (memory_budget activation
/// checkpointing, a float8 recipe other than tensorwise, a schedule with no mpsim counterpart), degrees
/// that do not multiply to `gpus`, batch sizes TorchTitan rejects; at the CSV's line and column for a
/// CSV that is not a schedule of the job's shape. Selective activation checkpointing is read as the nearest
/// recomputation mpsim has, with a note in `notes`.
[[nodiscard]] ImportedLaunch import_torchtitan(std::string_view toml, const std::string& file,
                                               const TorchTitanImportOptions& options);

}  // namespace mpsim::interop
