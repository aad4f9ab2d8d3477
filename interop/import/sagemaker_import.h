#pragma once
/// Reading SageMaker model parallelism v1's `distribution` (the estimator argument `plan export --to
/// sagemaker` writes: smdistributed.modelparallel.parameters and mpi.processes_per_host) into a plan in
/// SageMaker's own names, which the plan loader reads (docs/formats.md).
#include <optional>
#include <string>
#include <string_view>

#include "interop/import/megatron_import.h"

namespace mpsim::interop {

/// `gpus`: the job's GPU count (instance count x processes per host; the distribution does not hold the
/// instance count); without it the plan leaves the data-parallel size to the cluster. Throws InputError
/// at the JSON's line and column: not JSON, no smdistributed.modelparallel.parameters, a parameter of the
/// wrong type or one mpsim cannot represent (`pipeline` other than simple / interleaved), or a
/// sharded_data_parallel_degree without `gpus` or not dividing the data-parallel size.
[[nodiscard]] ImportedLaunch import_sagemaker(std::string_view json_text, const std::string& file, std::optional<int> gpus);

}  // namespace mpsim::interop
