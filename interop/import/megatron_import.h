#pragma once
/// Reading a Megatron-LM launch script (a torchrun or python command of pretrain_gpt.py, with its
/// arguments in bash arrays and sizes in shell variables) into a plan and, from the shape arguments,
/// a model. Both come out as YAML in the names mpsim reads (docs/formats.md), each value commented
/// with the script line it came from.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace mpsim::interop {

struct ImportedLaunch {
  std::string plan_yaml;
  std::string model_yaml;  ///< the shape arguments as a model file (with_model only)
  std::optional<int> gpus;  ///< torchrun's --nnodes x --nproc_per_node, or the caller's; unset: not known
  std::vector<std::string> ignored;  ///< the arguments that set neither (data, optimizer, logging, ...)
  std::vector<std::string> notes;    ///< what the user should know about the plan (one line each)
};

/// The tokenizer's vocabulary, before Megatron pads it, for a tokenizer the import knows by name: GPT-2's
/// BPE files, or a HuggingFace tokenizer of a model in the import's table (docs/export.md). Nothing for
/// another. `tokenizer_type` is --tokenizer-type (empty when absent), `model` --tokenizer-model.
[[nodiscard]] std::optional<std::int64_t> known_vocabulary(std::string_view tokenizer_type, std::string_view model);

/// `gpus` is the job's GPU count where the script does not say it (it is checked against the degrees and
/// noted; the plan leaves the data-parallel size to the cluster either way, as Megatron-LM derives it);
/// `with_model` asks for the model too (then the shape arguments it needs are required); `vocab_size`
/// stands in for the tokenizer's vocabulary (`plan import --vocab-size`), padded as Megatron pads it.
/// Throws InputError at the script's line and column: an argument mpsim cannot represent
/// (--recompute-method block, per-layer --cp-comm-type), a value it needs that names a variable the script
/// never sets (the error names the variable), no pretrain_*.py command.
[[nodiscard]] ImportedLaunch import_megatron(std::string_view script, const std::string& file, std::optional<int> gpus,
                                             bool with_model, std::optional<std::int64_t> vocab_size = std::nullopt);

}  // namespace mpsim::interop
