#include "interop/import/megatron_import.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <filesystem>
#include <map>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "interop/formats/shell_script.h"
#include "sim/core/ascii_case.h"
#include "sim/core/input_error.h"
#include "sim/plan/plan.h"

namespace mpsim::interop {
namespace {

/// pretrain_gpt.py's arguments that take no value (store_true / store_false).
const std::set<std::string, std::less<>> kSwitches = {
    "--sequence-parallel", "--use-distributed-optimizer", "--overlap-grad-reduce", "--overlap-param-gather",
    "--tp-comm-overlap", "--bf16", "--fp16", "--fp8-param-gather", "--grad-reduce-in-bf16",
    "--accumulate-allreduce-grads-in-fp32", "--use-flash-attn", "--recompute-activations", "--use-megatron-fsdp",
    "--use-torch-fsdp2", "--torch-fsdp2-no-reshard-after-forward", "--use-tp-pp-dp-mapping", "--cpu-offloading",
    "--moe-pad-expert-input-to-capacity", "--group-query-attention", "--swiglu", "--squared-relu",
    "--disable-bias-linear", "--untie-embeddings-and-output-weights", "--qk-layernorm", "--multi-latent-attention",
    "--moe-router-enable-expert-bias", "--moe-grouped-gemm", "--add-bias-linear", "--add-qkv-bias",
    "--moe-enable-deepep", "--no-gradient-accumulation-fusion", "--use-rope-scaling"};

/// One argument as the command line gives it: its values (none for a switch) and where it is written.
struct Argument {
  std::vector<ShellWord> values;
  SourceLocation where;
};

class Arguments {
 public:
  explicit Arguments(const std::vector<ShellWord>& words) {
    for (std::size_t i = 0; i < words.size(); ++i) {
      const ShellWord& w = words[i];
      if (w.text.rfind("--", 0) != 0) continue;
      Argument a{{}, w.where};
      std::string name = w.text;
      if (const auto eq = name.find('='); eq != std::string::npos) {
        a.values.push_back({name.substr(eq + 1), w.where, w.missing});
        name.resize(eq);
      } else if (!kSwitches.contains(name)) {
        while (i + 1 < words.size() && words[i + 1].text.rfind("--", 0) != 0) a.values.push_back(words[++i]);
      }
      args_[name] = std::move(a);  // argparse keeps the last
    }
  }

  [[nodiscard]] bool has(std::string_view name) const {
    used_.emplace(name);
    return args_.find(name) != args_.end();
  }
  [[nodiscard]] const Argument* find(std::string_view name) const {
    used_.emplace(name);
    const auto it = args_.find(name);
    return it == args_.end() ? nullptr : &it->second;
  }
  [[noreturn]] static void fail(const SourceLocation& where, std::string_view name, const std::string& message) {
    throw InputError(where, std::string(name), message);
  }
  /// The one value of `name`, expanded.
  [[nodiscard]] std::optional<ShellWord> value(std::string_view name) const {
    const Argument* a = find(name);
    if (a == nullptr) return std::nullopt;
    if (a->values.size() != 1) {
      fail(a->where, name, fmt::format("{} takes one value here, not {}", name, a->values.size()));
    }
    const ShellWord& v = a->values.front();
    if (v.missing) {
      fail(v.where, name,
           fmt::format("{} is given as '{}', which the script does not set: set it in the script before this line, "
                       "or write the value",
                       name, *v.missing));
    }
    return v;
  }
  [[nodiscard]] std::optional<std::int64_t> integer(std::string_view name, std::int64_t min = 1) const {
    const auto v = value(name);
    if (!v) return std::nullopt;
    std::int64_t n = 0;
    const auto [end, ec] = std::from_chars(v->text.data(), v->text.data() + v->text.size(), n);
    if (ec != std::errc() || end != v->text.data() + v->text.size() || n < min || n > 1'000'000'000) {
      fail(v->where, name, fmt::format("{} expects a whole number of at least {}, not '{}'", name, min, v->text));
    }
    return n;
  }
  [[nodiscard]] std::optional<double> number(std::string_view name) const {
    const auto v = value(name);
    if (!v) return std::nullopt;
    try {
      std::size_t used = 0;
      const double x = std::stod(v->text, &used);
      if (used == v->text.size()) return x;
    } catch (const std::exception&) {
    }
    fail(v->where, name, fmt::format("{} expects a number, not '{}'", name, v->text));
  }
  /// Every argument the import did not read.
  [[nodiscard]] std::vector<std::string> unused() const {
    std::vector<std::string> out;
    for (const auto& [name, a] : args_) {
      if (!used_.contains(name)) out.push_back(name);
    }
    return out;
  }

 private:
  std::map<std::string, Argument, std::less<>> args_;
  mutable std::set<std::string, std::less<>> used_;
};

/// YAML lines, each value commented with the script line it came from.
class YamlOut {
 public:
  explicit YamlOut(std::string header) : text_(std::move(header)) {}
  template <typename T>
  void put(std::string_view key, const T& value, const SourceLocation& where) {
    text_ += fmt::format("{}: {}", key, value);
    if (where.line > 0) text_ += fmt::format("   # {}:{}", std::filesystem::path(where.file).filename().string(), where.line);
    text_ += "\n";
  }
  void raw(std::string_view line) { (text_ += line) += "\n"; }
  [[nodiscard]] const std::string& text() const { return text_; }

 private:
  std::string text_;
};

/// Megatron's --pipeline-model-parallel-layout: stages split by |, `(...)*n` and `x*n` repeat, commas are
/// spacing. The transformer blocks of each stage, in virtual-stage order.
std::vector<int> layout_blocks(const ShellWord& layout) {
  const std::string& text = layout.text;
  auto bad = [&](const std::string& why) {
    Arguments::fail(layout.where, "--pipeline-model-parallel-layout", fmt::format("'{}': {}", text, why));
  };
  // Expands repetitions from the innermost out.
  std::function<std::string(std::size_t&, int)> expand = [&](std::size_t& i, int depth) -> std::string {
    std::string out;
    while (i < text.size()) {
      const char c = text[i];
      std::string unit;
      if (c == '(') {
        if (depth >= 64) bad("parentheses nest too deep");
        ++i;
        unit = expand(i, depth + 1);
        if (i >= text.size() || text[i] != ')') bad("a '(' is never closed");
        ++i;
      } else if (c == ')') {
        if (depth == 0) bad("a ')' closes nothing");
        return out;
      } else if (c == ',' || c == ' ') {
        ++i;
        continue;
      } else if (c == 'E' || c == 't' || c == 'm' || c == 'L' || c == '|') {
        unit = std::string(1, c);
        ++i;
      } else {
        bad(fmt::format("'{}' is not a layout letter (E, t, m, L, |)", c));
      }
      if (i < text.size() && text[i] == '*') {
        ++i;
        int n = 0;
        const std::size_t from = i;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 100000) n = n * 10 + (text[i++] - '0');
        if (i == from) bad("'*' needs a count");
        if (unit.size() * static_cast<std::size_t>(n) > 1'000'000) bad("it repeats to more than a million layers");
        std::string repeated;
        for (int k = 0; k < n; ++k) repeated += unit;
        unit = repeated;
      }
      out += unit;
      if (out.size() > 1'000'000) bad("too long");
    }
    return out;
  };
  std::size_t i = 0;
  const std::string flat = expand(i, 0);
  std::vector<int> blocks{0};
  for (std::size_t k = 0; k < flat.size(); ++k) {
    const char c = flat[k];
    if (c == '|') {
      blocks.push_back(0);
    } else if (c == 't') {
      ++blocks.back();
    } else if (c == 'E' && blocks.size() != 1) {
      bad("the embedding (E) belongs to the first stage");
    } else if (c == 'L' && flat.find('|', k) != std::string::npos) {
      bad("the loss (L) belongs to the last stage");
    }
  }
  return blocks;
}

std::string partition_text(const std::vector<int>& blocks) {
  std::vector<int> bounds{0};
  for (const int b : blocks) bounds.push_back(bounds.back() + b);
  return fmt::format("[{}]", fmt::join(bounds, ", "));
}

/// Megatron's vocabulary after padding: rounded up to a multiple of --make-vocab-size-divisible-by (default
/// 128) x tensor, as _vocab_size_with_padding does (megatron/training/tokenizer/tokenizer.py; now
/// vocab_size_with_padding in megatron/core/tokenizers/utils/build_tokenizer.py).
std::int64_t padded_vocab(std::int64_t vocab, std::int64_t divisible_by, std::int64_t tensor) {
  const std::int64_t multiple = divisible_by * tensor;
  return (vocab + multiple - 1) / multiple * multiple;
}

void plan_fields(const Arguments& args, YamlOut& plan, std::optional<int> gpus, const SourceLocation& launcher,
                 std::vector<std::string>& notes) {
  const auto where = [&](std::string_view name) { return args.find(name)->where; };
  const std::int64_t tensor = args.integer("--tensor-model-parallel-size").value_or(1);
  const std::int64_t pipeline = args.integer("--pipeline-model-parallel-size").value_or(1);
  const std::int64_t context = args.integer("--context-parallel-size").value_or(1);
  if (args.has("--tensor-model-parallel-size")) plan.put("tensor_model_parallel_size", tensor, where("--tensor-model-parallel-size"));
  if (args.has("--pipeline-model-parallel-size")) plan.put("pipeline_model_parallel_size", pipeline, where("--pipeline-model-parallel-size"));
  if (args.has("--context-parallel-size")) plan.put("context_parallel_size", context, where("--context-parallel-size"));
  if (gpus) {
    if (*gpus % (tensor * pipeline * context) != 0) {
      Arguments::fail(launcher, "--nnodes",
                      fmt::format("{} GPUs do not divide into tensor {} x pipeline {} x context {}", *gpus, tensor,
                                  pipeline, context));
    }
    // Megatron-LM has no data-parallel argument: validate_args derives it, world size // (tensor x pipeline x
    // context) (megatron/training/arguments.py). The plan leaves it to the cluster as well, so that it follows
    // another cluster or a sweep of the other degrees instead of pinning the script's.
    plan.raw(fmt::format("# data_parallel_size {} on the script's {} GPUs: left to the cluster, as Megatron-LM "
                         "derives it",
                         *gpus / (tensor * pipeline * context), *gpus));
  }
  for (const auto& [flag, key] : {std::pair{"--expert-model-parallel-size", "expert_model_parallel_size"},
                                  {"--expert-tensor-parallel-size", "expert_tensor_parallel_size"},
                                  {"--micro-batch-size", "micro_batch_size"},
                                  {"--global-batch-size", "global_batch_size"},
                                  {"--microbatch-group-size-per-virtual-pipeline-stage", "microbatch_group_size_per_vp_stage"},
                                  {"--num-distributed-optimizer-instances", "num_distributed_optimizer_instances"}}) {
    if (const auto n = args.integer(flag)) plan.put(key, *n, where(flag));
  }
  if (const auto n = args.integer("--cpu-offloading-num-layers", 0)) plan.put("cpu_offloading_num_layers", *n, where("--cpu-offloading-num-layers"));

  // Virtual stages and the layer split.
  const auto layers = args.integer("--num-layers");
  auto need_layers = [&](std::string_view flag) {
    if (!layers) Arguments::fail(where(flag), flag, fmt::format("{} needs --num-layers to split the blocks", flag));
    return *layers;
  };
  std::int64_t virtual_stages = 1;
  SourceLocation virtual_stages_at;
  if (const auto per_stage = args.integer("--num-layers-per-virtual-pipeline-stage")) {
    const std::int64_t l = need_layers("--num-layers-per-virtual-pipeline-stage");
    if (l % (pipeline * *per_stage) != 0) {
      Arguments::fail(where("--num-layers-per-virtual-pipeline-stage"), "--num-layers-per-virtual-pipeline-stage",
                      fmt::format("{} layers do not split into {} pipeline stages of chunks of {}", l, pipeline, *per_stage));
    }
    virtual_stages = l / (pipeline * *per_stage);
    virtual_stages_at = where("--num-layers-per-virtual-pipeline-stage");
  }
  for (const char* flag : {"--num-virtual-stages-per-pipeline-rank", "--virtual-pipeline-model-parallel-size"}) {
    if (const auto v = args.integer(flag)) {
      virtual_stages = *v;
      virtual_stages_at = where(flag);
    }
  }
  std::optional<std::vector<int>> blocks;
  if (const auto layout = args.value("--pipeline-model-parallel-layout")) {
    blocks = layout_blocks(*layout);
    if (static_cast<std::int64_t>(blocks->size()) % pipeline != 0) {
      Arguments::fail(layout->where, "--pipeline-model-parallel-layout",
                      fmt::format("{} stages do not spread over pipeline {}", blocks->size(), pipeline));
    }
    virtual_stages = static_cast<std::int64_t>(blocks->size()) / pipeline;
    virtual_stages_at = layout->where;
  }
  const auto first = args.integer("--decoder-first-pipeline-num-layers", 0);
  const auto last = args.integer("--decoder-last-pipeline-num-layers", 0);
  if (first || last) {
    const char* flag = first ? "--decoder-first-pipeline-num-layers" : "--decoder-last-pipeline-num-layers";
    if (virtual_stages > 1) {
      Arguments::fail(where(flag), flag, "with virtual stages, write the split as --pipeline-model-parallel-layout");
    }
    const std::int64_t l = need_layers(flag);
    const std::int64_t ends = (first ? 1 : 0) + (last ? 1 : 0);
    const std::int64_t middle_stages = pipeline - ends;
    const std::int64_t middle_layers = l - first.value_or(0) - last.value_or(0);
    if (middle_stages < 0 || (middle_stages == 0 && middle_layers != 0) ||
        (middle_stages > 0 && (middle_layers < middle_stages || middle_layers % middle_stages != 0))) {
      Arguments::fail(where(flag), flag,
                      fmt::format("{} layers do not leave an even split over the other {} stages", l, middle_stages));
    }
    virtual_stages_at = where(flag);  // where the split is written
    blocks = std::vector<int>();
    if (first) blocks->push_back(static_cast<int>(*first));
    for (std::int64_t s = 0; s < middle_stages; ++s) blocks->push_back(static_cast<int>(middle_layers / middle_stages));
    if (last) blocks->push_back(static_cast<int>(*last));
  }
  if (virtual_stages > 1) plan.put("virtual_pipeline_model_parallel_size", virtual_stages, virtual_stages_at);
  if (blocks) plan.put("partition", partition_text(*blocks), virtual_stages_at);

  if (args.has("--sequence-parallel") && tensor > 1) plan.put("sequence_parallel", "true", where("--sequence-parallel"));
  if (const auto cp = args.find("--cp-comm-type")) {
    std::set<std::string> kinds;
    for (const ShellWord& w : cp->values) kinds.insert(w.text == "allgather" ? "all_gather" : w.text);
    if (kinds.size() != 1) {
      Arguments::fail(cp->where, "--cp-comm-type", "mpsim runs one context-parallel exchange for every layer");
    }
    plan.put("cp_comm_type", *kinds.begin(), cp->where);
  }

  // Recomputation.
  const auto granularity = args.value("--recompute-granularity");
  const std::string_view full = model::traits(model::Recompute::Full).megatron;
  const std::string_view selective = model::traits(model::Recompute::Selective).megatron;
  if (granularity && granularity->text == full) {
    // transformer_config.py requires both under full granularity: uniform groups of N layers, or the
    // first N layers of each chunk (block).
    const auto method = args.value("--recompute-method");
    if (!method) {
      Arguments::fail(granularity->where, "--recompute-method",
                      "Megatron-LM's full recomputation needs --recompute-method uniform or block");
    }
    const auto* found = std::find_if(model::kMegatronRecomputeMethodNames.begin(),
                                     model::kMegatronRecomputeMethodNames.end(),
                                     [&](const auto& m) { return m.first == method->text; });
    if (found == model::kMegatronRecomputeMethodNames.end()) {
      Arguments::fail(method->where, "--recompute-method",
                      fmt::format("expected uniform or block, not '{}'", method->text));
    }
    const auto count = args.integer("--recompute-num-layers");
    if (!count || *count < 1) {
      Arguments::fail(method->where, "--recompute-num-layers",
                      "Megatron-LM's full recomputation needs --recompute-num-layers N >= 1");
    }
    plan.put("recompute_granularity", full, granularity->where);
    plan.put("recompute_method", std::string(model::to_string(found->second)), method->where);
    plan.put("recompute_num_layers", *count, method->where);
  } else if (granularity || args.has("--recompute-activations")) {
    if (granularity && granularity->text != selective) {
      Arguments::fail(granularity->where, "--recompute-granularity",
                      fmt::format("expected full or selective, not '{}'", granularity->text));
    }
    plan.put("recompute_granularity", selective, granularity ? granularity->where : where("--recompute-activations"));
    if (const auto modules = args.find("--recompute-modules")) {
      std::vector<std::string> names;
      for (const ShellWord& w : modules->values) names.push_back(w.text);
      plan.put("recompute_modules", fmt::format("[{}]", fmt::join(names, ", ")), modules->where);
    }
  }

  // The data-parallel sharding.
  int zero = args.has("--use-distributed-optimizer") ? 1 : 0;
  if (args.has("--use-megatron-fsdp")) {
    const auto strategy = args.value("--data-parallel-sharding-strategy");
    const std::string s = strategy ? strategy->text : "no_shard";
    constexpr std::pair<std::string_view, int> kStrategies[] = {
        {"no_shard", 0}, {"optim", 1}, {"optim_grads", 2}, {"optim_grads_params", 3}};
    const auto it = std::find_if(std::begin(kStrategies), std::end(kStrategies), [&](const auto& p) { return p.first == s; });
    if (it == std::end(kStrategies)) {
      Arguments::fail(strategy->where, "--data-parallel-sharding-strategy", fmt::format("unknown strategy '{}'", s));
    }
    zero = std::max(zero, it->second);
  }
  if (args.has("--use-torch-fsdp2")) zero = args.has("--torch-fsdp2-no-reshard-after-forward") ? 2 : 3;
  if (const auto optimizer = args.value("--optimizer")) {
    if (optimizer->text == "muon" || optimizer->text == "dist_muon") {
      plan.put("optimizer", "muon", optimizer->where);
      if (optimizer->text == "dist_muon") zero = std::max(zero, 1);
    } else if (optimizer->text != "adam") {
      Arguments::fail(optimizer->where, "--optimizer", fmt::format("mpsim models Adam and Muon, not '{}'", optimizer->text));
    }
  }
  if (zero > 0) plan.put("zero", zero, SourceLocation{});
  for (const auto& [flag, key] : {std::pair{"--overlap-grad-reduce", "overlap_grad_reduce"},
                                  {"--overlap-param-gather", "overlap_param_gather"},
                                  {"--tp-comm-overlap", "tp_comm_overlap"},
                                  {"--overlap-moe-expert-parallel-comm", "overlap_moe_expert_parallel_comm"},
                                  {"--fp8-param-gather", "fp8_param_gather"},
                                  {"--moe-pad-expert-input-to-capacity", "moe_pad_expert_input_to_capacity"},
                                  {"--use-precision-aware-optimizer", "use_precision_aware_optimizer"},
                                  {"--distribute-saved-activations", "distribute_saved_activations"}}) {
    if (args.has(flag)) plan.put(key, "true", where(flag));
  }
  // The moments' dtypes (fp32, fp16, bf16, fp8: Megatron-LM's choices, the plan's words).
  for (const std::string_view key : mpsim::plan::kMomentDtypeKeys) {
    if (const auto dtype = args.value(mpsim::plan::command_line_flag(key))) plan.put(key, dtype->text, dtype->where);
  }
  if (args.has("--use-tp-pp-dp-mapping")) plan.put("placement", "tp-pp-dp", where("--use-tp-pp-dp-mapping"));
  // The all-to-all and flex dispatchers are modelled; Megatron's default, allgather, is read and
  // simulated as all-to-all (what Megatron recommends with expert parallelism).
  if (const auto type = args.value("--moe-token-dispatcher-type"); type && type->text != "allgather") {
    plan.put("moe_token_dispatcher_type", type->text, type->where);
  }
  const auto flex_backend = args.value("--moe-flex-dispatcher-backend");
  if (flex_backend) plan.put("moe_flex_dispatcher_backend", flex_backend->text, flex_backend->where);
  if (args.has("--moe-enable-deepep")) plan.put("moe_enable_deepep", "true", where("--moe-enable-deepep"));
  // Each backend reads its own SM count (Megatron ignores the other's): the backend the script runs.
  const std::string backend_name = flex_backend ? flex_backend->text : std::string("deepep");
  for (const auto& [key, backend] : mpsim::plan::kFlexDispatcherSmsKeys) {
    const std::string flag = mpsim::plan::command_line_flag(key);
    if (const auto sms = args.number(flag); sms && mpsim::plan::name_of(mpsim::plan::kFlexBackendNames, backend) == backend_name) {
      plan.put(std::string(key), static_cast<std::int64_t>(*sms), where(flag));
    }
  }
  if (const auto factor = args.number("--moe-expert-capacity-factor")) {
    plan.put("moe_expert_capacity_factor", *factor, where("--moe-expert-capacity-factor"));
  }

  // Precision.
  if (args.has("--bf16")) plan.put("bf16", "true", where("--bf16"));
  if (args.has("--fp16")) plan.put("fp16", "true", where("--fp16"));
  if (const auto format = args.value("--fp8-format")) {
    plan.put("fp8", format->text, format->where);
    if (const auto recipe = args.value("--fp8-recipe")) plan.put("fp8_recipe", recipe->text, recipe->where);
  }
  if (args.has("--grad-reduce-in-bf16")) {
    plan.put("accumulate_allreduce_grads_in_fp32", "false", where("--grad-reduce-in-bf16"));
  } else if (args.has("--accumulate-allreduce-grads-in-fp32")) {
    plan.put("accumulate_allreduce_grads_in_fp32", "true", where("--accumulate-allreduce-grads-in-fp32"));
  } else if (args.has("--fp16")) {
    // Megatron reduces 16-bit gradients in fp32 by default for bf16 only.
    plan.put("accumulate_allreduce_grads_in_fp32", "false", SourceLocation{});
  }
  // Megatron-Core runs Transformer Engine's loss kernel only with the fusion switch on
  // (GPTModel.compute_language_model_loss); otherwise its native vocabulary-parallel kernel, the default.
  if (const auto impl = args.value("--cross-entropy-fusion-impl"); impl && args.has("--cross-entropy-loss-fusion")) {
    plan.put("cross_entropy_fusion_impl", impl->text, impl->where);
  }
  // Two arguments name the attention kernel, and Megatron-LM does not reconcile them (validate_args in
  // megatron/training/arguments.py checks only that --attention-backend local comes with --spec local):
  // --use-flash-attn was read by the legacy models alone (megatron/legacy/model/transformer.py, since
  // removed), while Megatron-Core models run the kernel --attention-backend picks (default auto;
  // TransformerConfig.attention_backend, LanguageModule._set_attention_backend). So the backend wins, and
  // the plan gets one of the two, never both (the plan file would have `attention` twice).
  const auto backend = args.value("--attention-backend");
  const bool flash_switch = args.has("--use-flash-attn");
  if (backend) {
    plan.put("attention_backend", backend->text, backend->where);
    if (flash_switch) {
      notes.push_back(fmt::format("--use-flash-attn (line {}) is read only by Megatron-LM's legacy models; "
                                  "Megatron-Core runs the kernel of --attention-backend {} (line {}), which the plan "
                                  "takes",
                                  where("--use-flash-attn").line, backend->text, backend->where.line));
    }
  } else if (flash_switch) {
    plan.put("use_flash_attn", "true", where("--use-flash-attn"));
  }
}

/// A HuggingFace model whose tokenizer the import knows: the name as the Hub gives it (the organisation
/// left out; a name ending in '-' is a prefix for the family) and the vocabulary its config.json gives
/// (vocab_size). Megatron-LM sizes a HuggingFaceTokenizer by len(tokenizer), the same number for the Llama,
/// Mistral and Mixtral rows; Qwen3 and DeepSeek-V3 pad their embedding beyond it, so the model is the
/// checkpoint's, slightly larger than one built from the tokenizer alone (docs/export.md).
struct HuggingFaceVocabulary {
  std::string_view name;
  std::int64_t vocab;
};
// Sources, each the model's released config.json: Meta-Llama-3-8B / -70B and Llama-3.1-405B (every Llama 3
// and 3.1 model shares the one 128K tokenizer); Llama-2-7b-hf and Llama-2-70b-hf; Mixtral-8x7B-v0.1,
// Mixtral-8x22B-v0.1 and its instruct model (32768); Qwen3-30B-A3B and Qwen3-235B-A22B; DeepSeek-V3;
// gpt-oss-120b (each also cited by the shipped model in configs/models/). Mistral-7B-v0.1: transformers'
// MistralConfig, whose defaults are that model's (vocab_size 32000); Mistral-7B-v0.3: its model card
// ("Extended vocabulary to 32768").
constexpr HuggingFaceVocabulary kHuggingFaceVocabularies[] = {
    {"meta-llama-3-", 128256},
    {"llama-3.1-", 128256},
    {"meta-llama-3.1-", 128256},
    {"llama-2-", 32000},
    {"mistral-7b-v0.1", 32000},
    {"mistral-7b-instruct-v0.1", 32000},
    {"mistral-7b-v0.3", 32768},
    {"mistral-7b-instruct-v0.3", 32768},
    {"mixtral-8x7b-v0.1", 32000},
    {"mixtral-8x22b-v0.1", 32000},
    {"mixtral-8x22b-instruct-v0.1", 32768},
    {"qwen3-30b-a3b", 151936},
    {"qwen3-235b-a22b", 151936},
    {"deepseek-v3", 129280},
    {"gpt-oss-120b", 201088},
};

/// GPT-2's BPE vocabulary: 50257 tokens (Radford et al., "Language Models are Unsupervised Multitask
/// Learners", 2019, section 2.3; the entries of its encoder.json, gpt2-vocab.json), which Megatron-LM's
/// GPT2BPETokenizer counts (vocab_size: len(encoder), megatron/training/tokenizer/tokenizer.py).
constexpr std::int64_t kGpt2Vocabulary = 50257;

/// The tokenizer's vocabulary as the script gives it, or the error that asks for it.
struct Vocabulary {
  std::int64_t tokens = 0;
  SourceLocation where;
};

Vocabulary script_vocabulary(const Arguments& args, const std::string& file, std::vector<std::string>& notes) {
  const auto type = args.value("--tokenizer-type");
  const Argument* model = args.find("--tokenizer-model");
  const Argument* vocab_file = args.find("--vocab-file");
  const Argument* merge_file = args.find("--merge-file");
  const auto written = [](const Argument* a) -> std::optional<std::string> {
    if (a == nullptr || a->values.size() != 1 || a->values.front().missing) return std::nullopt;
    return a->values.front().text;
  };
  const auto vocab_size = args.integer("--vocab-size");
  // Megatron-LM's example GPT scripts give GPT-2's two files without a type.
  const bool gpt2 = type ? type->text == "GPT2BPETokenizer" : vocab_file != nullptr && merge_file != nullptr;
  std::optional<std::int64_t> known;
  SourceLocation known_at;
  if (gpt2) {
    known = kGpt2Vocabulary;
    known_at = type ? type->where : vocab_file->where;
    const std::optional<std::string> name = written(vocab_file);
    if (vocab_file != nullptr && ascii_lower(name.value_or("")).find("gpt2") == std::string::npos) {
      notes.push_back(fmt::format("the model's vocabulary is GPT-2's {} tokens: the import does not read "
                                  "--vocab-file{} (plan import --vocab-size N gives another)",
                                  kGpt2Vocabulary, name ? " " + *name : ""));
    }
  } else if (type) {
    known = known_vocabulary(type->text, written(model).value_or(""));
    known_at = model != nullptr ? model->where : type->where;
  }
  if (known) {
    if (vocab_size && *vocab_size != *known) {
      notes.push_back(fmt::format("--vocab-size {} is not read by Megatron-LM's {} tokenizer, whose {} tokens the "
                                  "model takes",
                                  *vocab_size, gpt2 ? "GPT2BPETokenizer" : type->text, *known));
    }
    return {*known, known_at};
  }
  // NullTokenizer and TikTokenizer read --vocab-size, and so does every script `plan export` writes.
  if (vocab_size) return {*vocab_size, args.find("--vocab-size")->where};
  const std::string tokenizer =
      type ? fmt::format("--tokenizer-type {}{}", type->text,
                         written(model) ? " --tokenizer-model " + *written(model) : std::string())
           : std::string("the tokenizer's files");
  throw InputError(SourceLocation{file, 0, 0}, "--vocab-size",
                   fmt::format("the model's vocabulary comes from {}, whose size the import does not know: give it "
                               "with `plan import --vocab-size N` (the tokenizer's, before Megatron pads it)",
                               tokenizer));
}

void model_fields(const Arguments& args, YamlOut& model, const std::string& name, const std::string& file,
                  std::optional<std::int64_t> vocab_override, std::vector<std::string>& notes) {
  const auto where = [&](std::string_view flag) { return args.find(flag)->where; };
  const auto required = [&](std::string_view flag) {
    const auto v = args.integer(flag);
    if (!v) {
      throw InputError(SourceLocation{file, 0, 0}, std::string(flag),
                       fmt::format("the model needs {} (the script does not give it)", flag));
    }
    return *v;
  };
  const bool rms = args.value("--normalization").value_or(ShellWord{"LayerNorm", {}, {}}).text == "RMSNorm";
  const auto position_type = args.value("--position-embedding-type");
  const std::string positions = position_type ? position_type->text : "learned_absolute";
  if (positions != "rope" && positions != "learned_absolute") {
    Arguments::fail(position_type->where, "--position-embedding-type",
                    fmt::format("mpsim's models take rope or learned_absolute positions, not '{}'", positions));
  }
  model.raw("model:");
  model.put("  name", name, SourceLocation{});
  model.put("  family", rms && positions == "rope" ? "llama" : "gpt", SourceLocation{});
  const std::int64_t layers = required("--num-layers");
  const std::int64_t hidden = required("--hidden-size");
  const std::int64_t heads = required("--num-attention-heads");
  model.put("  layers", layers, where("--num-layers"));
  model.put("  hidden", hidden, where("--hidden-size"));
  model.put("  heads", heads, where("--num-attention-heads"));
  const bool mla = args.has("--multi-latent-attention");
  if (!mla) {
    if (args.has("--group-query-attention")) {
      model.put("  kv_heads", args.integer("--num-query-groups").value_or(1), where("--group-query-attention"));
    } else {
      model.put("  kv_heads", heads, SourceLocation{});
    }
    if (const auto kv = args.integer("--kv-channels")) model.put("  head_dim", *kv, where("--kv-channels"));
  }
  const bool swiglu = args.has("--swiglu");
  // Megatron's default MLP width: 4h, or two thirds of it rounded down to 64 with SwiGLU.
  const std::int64_t ffn = args.integer("--ffn-hidden-size").value_or(swiglu ? 4 * hidden * 2 / 3 / 64 * 64 : 4 * hidden);
  model.put("  ffn", ffn, args.has("--ffn-hidden-size") ? where("--ffn-hidden-size") : SourceLocation{});
  const std::int64_t seq = required("--seq-length");
  model.put("  seq_len", seq, where("--seq-length"));
  Vocabulary vocab;
  if (vocab_override) {
    vocab.tokens = *vocab_override;  // plan import --vocab-size: no line of the script
    for (const char* flag : {"--tokenizer-type", "--tokenizer-model", "--vocab-file", "--merge-file", "--vocab-size"}) {
      (void)args.has(flag);  // read, and replaced
    }
  } else {
    vocab = script_vocabulary(args, file, notes);
  }
  const std::int64_t divisible_by = args.integer("--make-vocab-size-divisible-by").value_or(128);
  const std::int64_t tensor = args.integer("--tensor-model-parallel-size").value_or(1);
  model.put("  vocab", padded_vocab(vocab.tokens, divisible_by, tensor), vocab.where);
  // Read either way: rotary positions have no table, and mpsim times routed experts as one grouped GEMM.
  (void)args.has("--max-position-embeddings");
  (void)args.has("--moe-grouped-gemm");
  if (positions == "learned_absolute") {
    model.put("  max_positions", args.integer("--max-position-embeddings").value_or(seq),
              args.has("--max-position-embeddings") ? where("--max-position-embeddings") : SourceLocation{});
  }
  model.put("  positions", positions == "rope" ? "rotary" : "learned", SourceLocation{});
  model.put("  norm", rms ? "rmsnorm" : "layernorm", SourceLocation{});
  if (positions == "rope") {
    if (const auto base = args.integer("--rotary-base")) model.put("  rotary_base", *base, where("--rotary-base"));
    // Llama 3.1's scaling: Megatron-Core's RotaryEmbedding fixes the band edges and the original context.
    if (args.has("--use-rope-scaling")) {
      model.put("  rope_scaling",
                fmt::format("{{ type: llama3, factor: {}, low_freq_factor: 1, high_freq_factor: 4, "
                            "original_max_position_embeddings: 8192 }}",
                            args.number("--rope-scaling-factor").value_or(8.0)),
                where("--use-rope-scaling"));
    }
  }
  if (const auto eps = args.value("--norm-epsilon")) model.put("  norm_epsilon", eps->text, eps->where);
  model.put("  activation", swiglu ? "swiglu" : args.has("--squared-relu") ? "squared_relu" : "gelu", SourceLocation{});
  model.put("  biases", args.has("--disable-bias-linear") ? "false" : "true", SourceLocation{});
  model.put("  tied_embeddings", args.has("--untie-embeddings-and-output-weights") ? "false" : "true", SourceLocation{});
  const auto attention_dropout = args.number("--attention-dropout");
  const auto hidden_dropout = args.number("--hidden-dropout");
  model.put("  dropout", attention_dropout.value_or(0.1) == 0 && hidden_dropout.value_or(0.1) == 0 ? "false" : "true",
            SourceLocation{});
  if (args.has("--qk-layernorm")) model.put("  qk_norm", "true", where("--qk-layernorm"));
  if (const auto experts = args.integer("--num-experts")) {
    std::string moe = fmt::format("{{ experts: {}, top_k: {}, expert_ffn: {}", *experts,
                                  args.integer("--moe-router-topk").value_or(2),
                                  args.integer("--moe-ffn-hidden-size").value_or(ffn));
    if (const auto shared = args.integer("--moe-shared-expert-intermediate-size")) {
      moe += fmt::format(", shared_experts: 1, shared_expert_ffn: {}", *shared);
    }
    if (const auto freq = args.value("--moe-layer-freq")) {
      // N, or a run-length list of dense (0) and MoE (1) blocks: dense ones first, then every block MoE.
      std::int64_t every = 0;
      const auto [end, ec] = std::from_chars(freq->text.data(), freq->text.data() + freq->text.size(), every);
      if (ec == std::errc() && end == freq->text.data() + freq->text.size() && every >= 1) {
        moe += fmt::format(", frequency: {}", every);
      } else {
        int dense = 0;
        int moe_blocks = 0;
        std::string t = freq->text;
        std::erase_if(t, [](char c) { return c == ' ' || c == '(' || c == ')'; });
        std::size_t i = 0;
        bool ok = !t.empty();
        while (ok && i < t.size()) {
          ok = t.compare(i, 4, "[0]*") == 0 || t.compare(i, 4, "[1]*") == 0;
          if (!ok) break;
          const bool is_moe = t[i + 1] == '1';
          i += 4;
          int n = 0;
          while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) n = n * 10 + (t[i++] - '0');
          ok = n > 0 && (is_moe || moe_blocks == 0);  // dense blocks first
          (is_moe ? moe_blocks : dense) += n;
          if (i < t.size()) ok = ok && t[i++] == '+';
        }
        if (!ok || dense + moe_blocks != layers) {
          Arguments::fail(freq->where, "--moe-layer-freq",
                          fmt::format("mpsim reads N or dense blocks then MoE blocks such as \"([0]*3+[1]*58)\" "
                                      "over all {} layers, not '{}'",
                                      layers, freq->text));
        }
        moe += fmt::format(", dense_layers: {}", dense);
      }
    }
    if (args.has("--moe-router-enable-expert-bias")) moe += ", router_bias: true";
    model.put("  moe", moe + " }", where("--num-experts"));
  }
  if (mla) {
    model.put("  mla",
              fmt::format("{{ q_lora_rank: {}, kv_lora_rank: {}, qk_nope_head_dim: {}, qk_rope_head_dim: {}, v_head_dim: {} }}",
                          args.integer("--q-lora-rank", 0).value_or(0), args.integer("--kv-lora-rank").value_or(32),
                          args.integer("--qk-head-dim").value_or(128), args.integer("--qk-pos-emb-head-dim").value_or(64),
                          args.integer("--v-head-dim").value_or(128)),
              where("--multi-latent-attention"));
    // YaRN as latent attention runs it: the factor and temperature scales are flags (their argparse
    // defaults), the original context and betas MLATransformerConfig's defaults.
    if (const auto rope = args.value("--rope-type"); rope && rope->text == "yarn") {
      model.put("  rope_scaling",
                fmt::format("{{ type: yarn, factor: {}, original_max_position_embeddings: 4096, beta_fast: 32, "
                            "beta_slow: 1, mscale: {}, mscale_all_dim: {} }}",
                            args.number("--rotary-scaling-factor").value_or(1.0), args.number("--mscale").value_or(1.0),
                            args.number("--mscale-all-dim").value_or(0.0)),
                rope->where);
    }
  }
  if (const auto mtp = args.integer("--mtp-num-layers", 0)) model.put("  mtp_layers", *mtp, where("--mtp-num-layers"));
  model.put("  dtype", args.has("--bf16") || args.has("--fp8-format") ? "bf16" : args.has("--fp16") ? "fp16" : "fp32",
            SourceLocation{});
}

/// Whether `word` is the Megatron training script.
bool is_pretrain_script(const std::string& word) {
  const std::string base = std::filesystem::path(word).filename().string();
  return base.rfind("pretrain_", 0) == 0 && base.size() > 3 && base.ends_with(".py");
}

}  // namespace

std::optional<std::int64_t> known_vocabulary(std::string_view tokenizer_type, std::string_view model) {
  if (tokenizer_type == "GPT2BPETokenizer") return kGpt2Vocabulary;
  if (tokenizer_type != "HuggingFaceTokenizer") return std::nullopt;
  // A Hub name (meta-llama/Meta-Llama-3-8B) or a local copy named after it (/models/Meta-Llama-3-8B/).
  while (!model.empty() && model.back() == '/') model.remove_suffix(1);
  const std::string name =
      ascii_lower(model.substr(model.rfind('/') == std::string_view::npos ? 0 : model.rfind('/') + 1));
  for (const HuggingFaceVocabulary& v : kHuggingFaceVocabularies) {
    const bool family = v.name.ends_with('-');
    if (family ? name.starts_with(v.name) : name == v.name) return v.vocab;
  }
  return std::nullopt;
}

ImportedLaunch import_megatron(std::string_view script, const std::string& file, std::optional<int> gpus,
                               bool with_model, std::optional<std::int64_t> vocab_size) {
  const std::vector<ShellCommand> commands = read_shell_commands(script, file);
  const ShellCommand* training = nullptr;
  std::size_t script_at = 0;
  for (const ShellCommand& c : commands) {
    for (std::size_t i = 0; i < c.words.size(); ++i) {
      if (is_pretrain_script(c.words[i].text)) {
        training = &c;
        script_at = i;
      }
    }
  }
  if (training == nullptr) {
    throw InputError(SourceLocation{file, 0, 0}, "",
                     "no command runs Megatron-LM's pretrain_*.py (torchrun ... pretrain_gpt.py ...)");
  }
  const std::vector<ShellWord> launcher_words(training->words.begin(), training->words.begin() + static_cast<std::ptrdiff_t>(script_at));
  const std::vector<ShellWord> megatron_words(training->words.begin() + static_cast<std::ptrdiff_t>(script_at) + 1, training->words.end());
  const SourceLocation launcher_at = training->words.front().where;

  ImportedLaunch out;
  if (gpus) {
    out.gpus = gpus;
  } else {
    // torchrun / python -m torch.distributed.run: --nnodes x --nproc_per_node (or --nproc-per-node).
    std::vector<ShellWord> renamed = launcher_words;
    for (ShellWord& w : renamed) {
      if (w.text.rfind("--nproc-per-node", 0) == 0) w.text.replace(0, 16, "--nproc_per_node");
    }
    const Arguments launcher(renamed);
    const auto per_node = launcher.integer("--nproc_per_node");
    if (per_node) out.gpus = static_cast<int>(*per_node * launcher.integer("--nnodes").value_or(1));
  }

  const Arguments args(megatron_words);
  const std::string source = std::filesystem::path(file).filename().string();
  YamlOut plan(fmt::format("# Imported by `mpsim plan import --from megatron` from {}; Megatron-LM's names\n", source));
  plan_fields(args, plan, out.gpus, launcher_at, out.notes);
  out.plan_yaml = plan.text();
  YamlOut model(fmt::format("# Imported by `mpsim plan import --from megatron` from {}'s shape arguments\n", source));
  std::vector<std::string> model_notes;
  try {
    model_fields(args, model, std::filesystem::path(file).stem().string(), file, vocab_size, model_notes);
    out.model_yaml = model.text();
    // What the model assumed matters only where it is written.
    if (with_model) out.notes.insert(out.notes.end(), model_notes.begin(), model_notes.end());
  } catch (const InputError&) {
    if (with_model) throw;  // otherwise the shape arguments are only marked as read
  }
  out.ignored = args.unused();
  return out;
}

}  // namespace mpsim::interop
