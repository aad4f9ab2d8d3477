#pragma once
/// Reading a Megatron-LM launch script (a torchrun or python command of pretrain_gpt.py, with its
/// arguments in bash arrays and sizes in shell variables) into a plan and, from the shape arguments,
/// a model. Both come out as YAML in the names mpsim reads (docs/formats.md), each value commented
/// with the script line it came from.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpsim::interop {

struct ImportedLaunch {
  std::string plan_yaml;
  std::string model_yaml;  ///< the shape arguments as a model file (with_model only)
  std::optional<int> gpus;  ///< torchrun's --nnodes x --nproc_per_node, or the caller's; unset: the plan leaves data to the cluster
  std::vector<std::string> ignored;  ///< the arguments that set neither (data, optimizer, logging, ...)
  std::vector<std::string> notes;    ///< what the user should know about the plan (one line each)
};

/// `gpus` overrides the script's GPU count; `with_model` asks for the model too (then the shape arguments
/// it needs are required). Throws InputError at the script's line and column: an
/// argument mpsim cannot represent (--recompute-method block, per-layer --cp-comm-type), a value it
/// needs that names a variable the script never sets (the error names the variable), no
/// pretrain_*.py command.
[[nodiscard]] ImportedLaunch import_megatron(std::string_view script, const std::string& file, std::optional<int> gpus,
                                             bool with_model);

}  // namespace mpsim::interop
