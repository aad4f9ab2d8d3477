#include "sim/plan/plan_loader.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <iterator>
#include <variant>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "sim/core/input_kind.h"
#include "sim/core/yaml_field.h"
#include "sim/plan/plan_fields.h"

namespace mpsim::plan {

std::string_view to_string(Objective o) noexcept { return o == Objective::Speed ? "speed" : "memory"; }

std::string_view to_string(Precision p) noexcept {
  for (const auto& [name, value] : kPrecisionNames) {
    if (value == p) return name;
  }
  return "?";
}

std::string_view to_string(AttentionKernel a) noexcept { return a == AttentionKernel::Flash ? "flash" : "standard"; }

namespace {

constexpr std::pair<std::string_view, Objective> kObjective[] = {{"speed", Objective::Speed},
                                                                  {"memory", Objective::Memory}};
constexpr std::pair<std::string_view, AttentionKernel> kAttention[] = {{"flash", AttentionKernel::Flash},
                                                                       {"standard", AttentionKernel::Standard}};
/// Megatron-Core's `attention_backend`: flash and fused (cuDNN) never materialize the scores; unfused
/// and local are the 2021 path.
constexpr std::pair<std::string_view, AttentionKernel> kMegatronAttention[] = {
    {"auto", AttentionKernel::Flash},
    {"flash", AttentionKernel::Flash},
    {"fused", AttentionKernel::Flash},
    {"unfused", AttentionKernel::Standard},
    {"local", AttentionKernel::Standard}};

/// "tp-dp-pp" or "tp-cp-ep-dp-pp" (fastest first), or SageMaker's "cluster", "spread" or a D/P/T
/// permutation (rightmost fastest).
Placement parse_placement(const Field& f, bool sagemaker) {
  const std::string text = f.as_string();
  if (text == "cluster") return {Axis::Tensor, Axis::Pipeline, Axis::Data};  // SageMaker "DPT"
  if (text == "spread") return {Axis::Data, Axis::Pipeline, Axis::Tensor};   // SageMaker "TPD"
  Placement p;
  if (sagemaker || (text.size() == 3 && text.find('-') == std::string::npos)) {
    if (text.size() != 3) f.fail(fmt::format("'{}' is not a placement (cluster, spread, or a permutation of DPT)", text));
    for (std::size_t i = 0; i < 3; ++i) {
      const char c = text[2 - i];  // rightmost letter varies fastest
      if (c != 'T' && c != 'D' && c != 'P') f.fail(fmt::format("'{}' is not a permutation of D, P and T", text));
      p.push_back(c == 'T' ? Axis::Tensor : c == 'D' ? Axis::Data : Axis::Pipeline);
    }
  } else {
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = std::min(text.find('-', start), text.size());
      const auto a = axis_from_short_name(std::string_view(text).substr(start, end - start));
      if (!a) f.fail(fmt::format("'{}' is not a placement: write the axes fastest first, e.g. tp-dp-pp or tp-cp-ep-dp-pp", text));
      p.push_back(*a);
      start = end + 1;
    }
  }
  if (const auto error = placement_error(p)) f.fail(*error);
  return p;
}

/// Keys a plan file may hold that name no field: SageMaker's switches and a Megatron argument refused
/// with a hint.
constexpr std::string_view kKeysWithoutField[] = {"ddp", "auto_partition", "num_layers_per_virtual_pipeline_stage"};

/// The keys a block of the plan file may hold ("" for the top level): kPlanFields' paths in the
/// table's order, then (at the top level) the other tools' spellings.
std::vector<std::string_view> keys_of_block(std::string_view block) {
  std::vector<std::string_view> keys;
  const auto add = [&](std::string_view key) {
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  };
  for (const PlanField& field : kPlanFields) {
    const std::size_t dot = field.path.find('.');
    const std::string_view head = field.path.substr(0, dot);
    if (block.empty()) {
      add(head);
    } else if (dot != std::string_view::npos && head == block) {
      add(field.path.substr(dot + 1));
    }
  }
  if (!block.empty()) return keys;
  for (const PlanField& field : kPlanFields) {
    for (const std::string_view spelling : field.spellings) {
      if (!spelling.empty()) add(spelling);
    }
  }
  keys.insert(keys.end(), std::begin(kKeysWithoutField), std::end(kKeysWithoutField));
  return keys;
}

/// Reads `key` into `out` and remembers where it was written.
class Reader {
 public:
  explicit Reader(PlanSpec& spec) : spec_(spec) {}

  std::optional<Field> get(const Field& parent, std::string_view key, std::string_view canonical) {
    auto f = parent.get(key);
    if (f) {
      const std::string name(canonical);
      if (spec_.origins.contains(name)) f->fail(fmt::format("'{}' is given twice (under another name)", canonical));
      spec_.origins.emplace(name, f->location());
    }
    return f;
  }
  int count(const Field& parent, std::string_view key, std::string_view canonical, int& out, int min = 1) {
    if (auto f = get(parent, key, canonical)) out = static_cast<int>(f->as_int_in(min, 1'000'000));
    return out;
  }
  void count(const Field& parent, std::string_view key, std::string_view canonical, std::optional<int>& out,
             int min = 1) {
    if (auto f = get(parent, key, canonical)) out = static_cast<int>(f->as_int_in(min, 1'000'000'000));
  }
  /// Reads `field` as the degree of `axis`: under its path, then under each other spelling.
  void degree(const Field& root, const PlanField& field, Axis axis) {
    for_each_spelling(root, field,
                      [&](const Field& f) { spec_.write(axis, static_cast<int>(f.as_int_in(1, 1'000'000))); });
  }
  /// Reads a plain setting (PlanField::setting): under each other spelling, then under its path.
  void setting(const Field& root, const PlanField& field) {
    for_each_spelling(
        root, field,
        [&](const Field& f) {
          if (const auto* flag = std::get_if<bool PlanSettings::*>(&field.setting)) spec_.*(*flag) = f.as_bool();
          if (const auto* count = std::get_if<int PlanSettings::*>(&field.setting)) {
            spec_.*(*count) = static_cast<int>(
                f.as_int_in(static_cast<std::int64_t>(field.min), static_cast<std::int64_t>(field.max)));
          }
          if (const auto* number = std::get_if<double PlanSettings::*>(&field.setting)) {
            spec_.*(*number) = f.as_double_in(field.min, field.max);
          }
        },
        /*path_first=*/false);
  }

 private:
  /// Calls `read` with each spelling of `field` the file gives, recording where (a second one is an
  /// error): the path (in its block, if any) and the other tools' top-level names.
  template <typename Read>
  void for_each_spelling(const Field& root, const PlanField& field, Read&& read, bool path_first = true) {
    const std::string_view canonical = field.shorthand.empty() ? field.path : field.shorthand;
    const auto at_path = [&] {
      const std::size_t dot = field.path.find('.');
      if (dot == std::string_view::npos) {
        if (auto f = get(root, field.path, canonical)) read(*f);
      } else if (auto block = root.get(field.path.substr(0, dot))) {
        if (auto f = get(*block, field.path.substr(dot + 1), canonical)) read(*f);
      }
    };
    if (path_first) at_path();
    for (const std::string_view spelling : field.spellings) {
      if (spelling.empty()) continue;
      if (auto f = get(root, spelling, canonical)) read(*f);
    }
    if (!path_first) at_path();
  }

  PlanSpec& spec_;
};

/// Megatron-Core's token dispatcher: moe_token_dispatcher_type (alltoall | flex), the flex backend
/// (moe_flex_dispatcher_backend; Megatron-Core's default deepep), or the older moe_enable_deepep.
void read_dispatcher(const Field& root, Reader& r, PlanSpec& spec) {
  constexpr std::pair<std::string_view, bool> kTypes[] = {{"alltoall", false}, {"flex", true}};
  std::optional<bool> flex;
  if (auto f = r.get(root, "moe_token_dispatcher_type", "moe_token_dispatcher_type")) {
    if (f->is_scalar() && f->as_string() == "allgather") {
      f->fail("the allgather dispatcher is not modelled; use alltoall or flex");
    }
    flex = f->as_enum(kTypes);
  }
  if (auto f = r.get(root, "moe_enable_deepep", "moe_token_dispatcher_type")) {
    if (f->as_bool()) flex = true;
  }
  spec.dispatcher = flex.value_or(false) ? MoeDispatcher::DeepEp : MoeDispatcher::AllToAll;
  if (auto f = r.get(root, "moe_flex_dispatcher_backend", "moe_flex_dispatcher_backend")) {
    const MoeDispatcher backend = f->as_enum(kFlexBackendNames);
    if (!flex.value_or(false)) f->fail("moe_flex_dispatcher_backend applies to moe_token_dispatcher_type flex");
    spec.dispatcher = backend;
  }
  for (const auto& [key, backend] : kFlexDispatcherSmsKeys) {
    if (auto f = r.get(root, key, key)) {
      const int sms = static_cast<int>(f->as_int_in(1, 1024));
      if (spec.dispatcher != backend) {
        f->fail(fmt::format("{} applies to the flex dispatcher's {} backend", key, name_of(kFlexBackendNames, backend)));
      }
      spec.flex_dispatcher_sms = sms;
    }
  }
}

}  // namespace

PlanSpec load_plan_spec(const Field& root) {
  PlanSpec spec;
  spec.file = root.file();
  expect_input_kind(root, InputKind::Plan);
  root.expect_keys(keys_of_block(""));
  Reader r(spec);

  for (const std::string_view block : {"parallelism", "batch", "overlap"}) {
    if (auto f = root.get(block)) f->expect_keys(keys_of_block(block));
  }
  // Every degree and plain setting under each of its spellings (kPlanFields).
  for (const PlanField& field : kPlanFields) {
    if (field.axis) {
      r.degree(root, field, *field.axis);
    } else if (!std::holds_alternative<std::monostate>(field.setting)) {
      r.setting(root, field);
    }
  }
  if (auto batch = root.get("batch")) {
    r.count(*batch, "global", "global_batch", spec.global_batch);
    r.count(*batch, "microbatches", "microbatches", spec.microbatches);
  }
  // SageMaker's names.
  r.count(root, "microbatches", "microbatches", spec.microbatches);
  if (auto f = r.get(root, "pipeline", "schedule")) {
    constexpr auto kSageMaker = core::column_words<kScheduleTraits, &ScheduleTraits::sagemaker>();
    spec.schedule = f->as_enum(kSageMaker);
  }
  if (auto f = r.get(root, "placement_strategy", "placement")) spec.placement = parse_placement(*f, true);
  if (auto f = root.get("ddp")) (void)f->as_bool();  // SageMaker's switch; data parallelism follows from the degrees
  if (auto f = root.get("auto_partition")) {
    if (!f->as_bool()) f->fail("manual SageMaker partitioning is expressed here as 'partition: [boundaries]'");
  }
  // Megatron's names.
  r.count(root, "global_batch_size", "global_batch", spec.global_batch);
  if (auto f = r.get(root, "recompute_granularity", "recompute")) {
    constexpr auto kMegatron = core::column_words<model::kRecomputeTraits, &model::RecomputeTraits::megatron>();
    spec.recompute = f->as_enum(kMegatron);
  }
  if (auto f = r.get(root, "use_distributed_optimizer", "zero")) spec.zero = f->as_bool() ? 1 : 0;
  if (auto f = r.get(root, "attention_backend", "attention")) spec.attention = f->as_enum(kMegatronAttention);
  if (auto f = r.get(root, "use_flash_attn", "attention")) {
    spec.attention = f->as_bool() ? AttentionKernel::Flash : AttentionKernel::Standard;
  }
  // Megatron's precision flags: --bf16/--fp16 name the 16-bit type, --fp8-format (hybrid, e4m3)
  // switches the GEMMs to FP8 and --fp8-recipe says which scaling.
  std::optional<Precision> sixteen_bit;
  if (auto f = r.get(root, "bf16", "params_dtype")) {
    if (f->as_bool()) sixteen_bit = Precision::Bf16;
  }
  if (auto f = r.get(root, "fp16", "params_dtype")) {
    if (f->as_bool()) sixteen_bit = Precision::Fp16;
  }
  if (auto f = r.get(root, "fp8", "precision")) {
    const std::string format = f->as_string();
    if (format != "hybrid" && format != "e4m3") f->fail("expected 'hybrid' or 'e4m3' (Megatron's --fp8-format)");
    spec.precision = Precision::Fp8;
  }
  if (auto f = r.get(root, "fp8_recipe", "fp8_recipe")) spec.precision = f->as_enum(kMegatronFp8Recipes);
  if (!spec.precision) spec.precision = sixteen_bit;
  if (auto f = root.get("num_layers_per_virtual_pipeline_stage")) {
    f->fail("give 'virtual_pipeline_model_parallel_size' (or parallelism.virtual_stages) instead: the layers per "
            "virtual stage follow from it");
  }

  // mpsim's own names.
  if (auto f = r.get(root, "schedule", "schedule")) spec.schedule = f->as_enum(kScheduleNames);
  if (auto f = r.get(root, "partition", "partition")) {
    if (f->is_scalar()) {
      if (f->as_string() != "balanced") f->fail("expected 'balanced' or a list of layer boundaries like [0, 12, 24]");
    } else {
      for (const Field& b : f->items()) spec.partition.push_back(static_cast<int>(b.as_int_in(0, 1'000'000)));
      if (spec.partition.size() < 2) f->fail("a partition lists at least two boundaries, e.g. [0, 24]");
    }
  }
  if (auto f = r.get(root, "replica_microbatches", "replica_microbatches")) {
    for (const Field& n : f->items()) spec.replica_microbatches.push_back(static_cast<int>(n.as_int_in(1, 1'000'000)));
    if (spec.replica_microbatches.empty()) f->fail("list each data-parallel replica's microbatches, e.g. [6, 2]");
  }
  if (auto f = r.get(root, "recompute", "recompute")) spec.recompute = f->as_enum(model::kRecomputeNames);
  if (auto f = r.get(root, "moe_expert_capacity_factor", "moe_expert_capacity_factor")) {
    spec.expert_capacity_factor = f->as_double_in(0.01, 1000.0);
  }
  if (auto f = r.get(root, "moe_pad_expert_input_to_capacity", "moe_pad_expert_input_to_capacity")) {
    spec.pad_expert_input_to_capacity = f->as_bool();
  }
  read_dispatcher(root, r, spec);
  if (auto f = r.get(root, "recompute_modules", "recompute_modules")) {
    // Megatron-Core's list replaces its default {core_attn}.
    spec.recompute_modules = model::RecomputeModules{0};
    for (const Field& item : f->items()) spec.recompute_modules.add(item.as_enum(model::kRecomputeModuleNames));
  }
  if (auto f = r.get(root, "recompute_method", "recompute_method")) {
    spec.recompute_method = f->as_enum(model::kRecomputeMethodNames);
  }
  // TorchTitan's option of its selective mode: "op" is per-op checkpointing, a number N checkpoints
  // every Nth block whole (activation_checkpoint.py).
  if (auto f = r.get(root, "selective_ac_option", "selective_ac_option")) {
    if (spec.recompute != Recompute::Selective) {
      f->fail(fmt::format("selective_ac_option is an option of TorchTitan's selective mode: it needs recompute: "
                          "selective, not '{}'",
                          model::to_string(spec.recompute)));
    }
    if (spec.origins.contains("recompute_modules") || spec.origins.contains("recompute_method") ||
        spec.origins.contains("recompute_num_layers")) {
      f->fail("selective_ac_option chooses what TorchTitan's selective mode recomputes; leave out recompute_modules "
              "and recompute_method, recompute_num_layers");
    }
    const std::string option = f->as_string();
    const bool digits = !option.empty() && option.size() <= 9 &&
                        std::all_of(option.begin(), option.end(), [](unsigned char c) { return std::isdigit(c) != 0; });
    if (option != model::traits(Recompute::Op).torchtitan_option && !digits) {
      f->fail(fmt::format("selective_ac_option is \"op\" or a whole number N (checkpoint every Nth block), not '{}'",
                          option));
    }
    if (option == model::traits(Recompute::Op).torchtitan_option) {
      spec.recompute = Recompute::Op;
    } else {
      spec.recompute = Recompute::Full;
      spec.recompute_method = model::RecomputeMethod::Every;
      spec.recompute_num_layers = static_cast<int>(f->as_int_in(1, 1'000'000));
    }
  }
  if (auto f = r.get(root, "precision", "precision")) spec.precision = f->as_enum(kPrecisionNames);
  if (auto f = r.get(root, "attention", "attention")) spec.attention = f->as_enum(kAttention);
  if (auto f = r.get(root, "attention_kernel", "attention_kernel")) {
    spec.attention_kernel = f->as_enum(topology::kAttentionGenerationNames);
  }
  if (auto f = r.get(root, "optimizer", "optimizer")) spec.optimizer = f->as_enum(kOptimizerNames);
  if (auto f = r.get(root, "exp_avg_dtype", "exp_avg_dtype")) spec.exp_avg_dtype = f->as_enum(kStateDtypeNames);
  if (auto f = r.get(root, "exp_avg_sq_dtype", "exp_avg_sq_dtype")) spec.exp_avg_sq_dtype = f->as_enum(kStateDtypeNames);
  if (auto f = r.get(root, "cross_entropy_fusion_impl", "cross_entropy")) spec.cross_entropy = f->as_enum(kCrossEntropyNames);
  if (auto f = r.get(root, "cross_entropy", "cross_entropy")) spec.cross_entropy = f->as_enum(kCrossEntropyNames);
  if (auto f = r.get(root, "cp_comm_type", "cp_comm_type")) spec.context_comm = f->as_enum(kContextCommNames);
  if (auto f = r.get(root, "zero", "zero")) spec.zero = static_cast<int>(f->as_int_in(0, 3));
  if (auto f = r.get(root, "placement", "placement")) spec.placement = parse_placement(*f, false);
  r.count(root, "active_microbatches", "active_microbatches", spec.active_microbatches);
  r.count(root, "microbatch_group_size_per_vp_stage", "microbatch_group_size", spec.microbatch_group_size);
  r.count(root, "zb_memory_limit", "zb_memory_limit", spec.zb_memory_limit);
  if (auto f = r.get(root, "optimize", "optimize")) spec.optimize = f->as_enum(kObjective);
  // Virtual stages without a schedule mean Megatron's interleaved one, as virtual_pipeline_model_parallel_size does there.
  if (spec.virtual_stages > 1 && !spec.origins.contains("schedule")) spec.schedule = ScheduleKind::Interleaved1F1B;
  return spec;
}

PlanSpec load_plan_file(const std::filesystem::path& path) {
  const YamlDocument doc = YamlDocument::load(path);
  return load_plan_spec(doc.root());
}

std::string write_plan_yaml(const Plan& p) {
  std::string out;
  out += "# mpsim plan (docs/formats.md, section Plan)\n";
  std::string extra;
  if (p.degrees[Axis::Context] > 1) extra += fmt::format(", context: {}", p.degrees[Axis::Context]);
  if (p.degrees[Axis::Expert] > 1) extra += fmt::format(", expert: {}", p.degrees[Axis::Expert]);
  if (p.degrees[Axis::ExpertTensor] != p.degrees[Axis::Tensor])
    extra += fmt::format(", expert_tensor: {}", p.degrees[Axis::ExpertTensor]);
  out +=
      fmt::format("parallelism: {{ tensor: {}, pipeline: {}, data: {}, virtual_stages: {}{} }}\n",
                  p.degrees[Axis::Tensor], p.degrees[Axis::Pipeline], p.degrees[Axis::Data], p.virtual_stages, extra);
  // The microbatch count follows from the other three; left as a comment so a what-if that changes
  // the micro batch or the global batch (--set, --sweep) keeps the file consistent.
  out += fmt::format("batch: {{ global: {}, micro: {} }}   # {} microbatches per pipeline\n", p.global_batch,
                     p.micro_batch, p.microbatches);
  out += fmt::format("schedule: {}\n", to_string(p.schedule));
  out += fmt::format("partition: [{}]\n", fmt::join(p.partition, ", "));
  if (!p.replica_microbatches.empty()) {
    out += fmt::format("replica_microbatches: [{}]\n", fmt::join(p.replica_microbatches, ", "));
  }
  out += fmt::format("recompute: {}\n", model::to_string(p.recompute));
  if (p.recompute_modules != model::RecomputeModules{}) {
    out += fmt::format("recompute_modules: [{}]\n", fmt::join(model::module_names(p.recompute_modules), ", "));
  }
  if (p.recompute_method != model::RecomputeMethod::Uniform) {
    out += fmt::format("recompute_method: {}\n", model::to_string(p.recompute_method));
  }
  out += fmt::format("precision: {}\n", to_string(p.precision));
  out += fmt::format("attention: {}\n", to_string(p.attention));
  if (p.attention_kernel) out += fmt::format("attention_kernel: {}\n", topology::to_string(*p.attention_kernel));
  out += fmt::format("overlap: {{ grad_reduce: {}, param_gather: {}, tensor_comm: {}{} }}\n", p.overlap_grad_reduce,
                     p.overlap_param_gather, p.overlap_tensor_comm,
                     p.overlap_moe_expert_comm ? ", moe_expert_comm: true" : "");
  out += fmt::format("zero: {}\n", p.zero);
  if (p.expert_capacity_factor) out += fmt::format("moe_expert_capacity_factor: {}\n", *p.expert_capacity_factor);
  if (p.pad_expert_input_to_capacity) out += "moe_pad_expert_input_to_capacity: true\n";
  if (deduplicates_tokens(p.dispatcher)) {
    out += fmt::format("moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: {}\n",
                       name_of(kFlexBackendNames, p.dispatcher));
    if (p.flex_dispatcher_sms) {
      out += fmt::format("{}: {}\n", name_of(kFlexDispatcherSmsKeys, p.dispatcher), *p.flex_dispatcher_sms);
    }
  }
  if (p.optimizer == Optimizer::Muon) out += "optimizer: muon\n";
  for (const auto& [key, dtype] : moment_dtypes(p)) {
    if (dtype != StateDtype::Fp32) out += fmt::format("{}: {}\n", key, name_of(kStateDtypeNames, dtype));
  }
  if (p.cross_entropy != CrossEntropy::Native) {
    out += fmt::format("cross_entropy: {}\n", name_of(kCrossEntropyNames, p.cross_entropy));
  }
  if (p.degrees[Axis::DataReplica] > 1) out += fmt::format("shard_groups: {}\n", p.degrees[Axis::DataReplica]);
  if (p.context_comm != ContextComm::P2p)
    out += fmt::format("cp_comm_type: {}\n", name_of(kContextCommNames, p.context_comm));
  out += fmt::format("placement: {}\n", to_string(p.placement));
  if (p.schedule == ScheduleKind::SageMakerInterleaved) out += fmt::format("active_microbatches: {}\n", p.active_microbatches);
  if (p.schedule == ScheduleKind::ZbAuto) out += fmt::format("zb_memory_limit: {}\n", p.zb_memory_limit);
  if (p.schedule == ScheduleKind::Interleaved1F1B) {
    out += fmt::format("microbatch_group_size_per_vp_stage: {}\n", p.microbatch_group_size);
  }
  out += fmt::format("optimize: {}\n", to_string(p.optimize));
  // Plain top-level settings away from their defaults (kPlanFields; those in a block are written above).
  for (const PlanField& field : kPlanFields) {
    if (field.path.find('.') != std::string_view::npos) continue;
    visit_setting(field, p, [&](auto value, auto default_value) {
      if (value != default_value) out += fmt::format("{}: {}\n", field.path, value);
    });
  }
  return out;
}

}  // namespace mpsim::plan
