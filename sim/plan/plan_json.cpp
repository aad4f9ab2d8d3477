#include "sim/plan/plan_json.h"

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/plan/plan_fields.h"

namespace mpsim::plan {
namespace {

using nlohmann::ordered_json;

std::string word(std::string_view w) { return std::string(w); }

/// The value of a field that is neither a degree nor a plain setting, in the plan file's spelling;
/// null where the plan leaves it out (a schedule's parameter under another schedule, an unset option).
ordered_json own_value(std::string_view path, const Plan& p) {
  const bool flex = deduplicates_tokens(p.dispatcher);
  if (path == "batch.global") return p.global_batch;
  if (path == "batch.microbatches") return p.microbatches;
  if (path == "schedule") return word(to_string(p.schedule));
  // A schedule's own parameter, only where the schedule has it (the loader refuses it elsewhere).
  if (path == "microbatch_group_size_per_vp_stage") {
    return traits(p.schedule).rule == ShapeRule::MicrobatchGroup ? ordered_json(p.microbatch_group_size) : nullptr;
  }
  if (path == "active_microbatches") {
    return traits(p.schedule).rule == ShapeRule::ActiveCap ? ordered_json(p.active_microbatches) : nullptr;
  }
  if (path == "zb_memory_limit") {
    return traits(p.schedule).rule == ShapeRule::MemoryLimit ? ordered_json(p.zb_memory_limit) : nullptr;
  }
  if (path == "partition") return p.partition;
  if (path == "replica_microbatches") return p.replica_microbatches.empty() ? ordered_json(nullptr) : ordered_json(p.replica_microbatches);
  if (path == "placement") return to_string(p.placement);
  if (path == "recompute") return word(model::to_string(p.recompute));
  if (path == "recompute_modules") {
    std::vector<std::string> modules;
    for (const std::string_view name : model::module_names(p.recompute_modules)) modules.emplace_back(name);
    return modules;
  }
  // Full recomputation's choice of layers; the TorchTitan option is read into it and into `recompute`.
  if (path == "recompute_method") {
    return p.recompute == Recompute::Full ? ordered_json(word(model::to_string(p.recompute_method))) : nullptr;
  }
  if (path == "selective_ac_option") return nullptr;
  if (path == "cp_comm_type") return word(name_of(kContextCommNames, p.context_comm));
  if (path == "precision") return word(to_string(p.precision));
  if (path == "attention") return word(to_string(p.attention));
  if (path == "attention_kernel") {
    return p.attention_kernel ? ordered_json(word(topology::to_string(*p.attention_kernel))) : nullptr;
  }
  if (path == "zero") return p.zero;
  if (path == "optimizer") return word(name_of(kOptimizerNames, p.optimizer));
  if (path == "exp_avg_dtype") return word(name_of(kStateDtypeNames, p.exp_avg_dtype));
  if (path == "exp_avg_sq_dtype") return word(name_of(kStateDtypeNames, p.exp_avg_sq_dtype));
  if (path == "cross_entropy") return word(name_of(kCrossEntropyNames, p.cross_entropy));
  if (path == "moe_expert_capacity_factor") {
    return p.expert_capacity_factor ? ordered_json(*p.expert_capacity_factor) : nullptr;
  }
  if (path == "moe_pad_expert_input_to_capacity") {
    return p.expert_capacity_factor ? ordered_json(p.pad_expert_input_to_capacity) : nullptr;
  }
  if (path == "moe_token_dispatcher_type") return flex ? "flex" : "alltoall";
  if (path == "moe_flex_dispatcher_backend") {
    return flex ? ordered_json(word(name_of(kFlexBackendNames, p.dispatcher))) : nullptr;
  }
  if (path == "moe_deepep_num_sms" || path == "moe_hybridep_num_sms") {
    const bool mine = flex && name_of(kFlexDispatcherSmsKeys, p.dispatcher) == path;
    return mine && p.flex_dispatcher_sms ? ordered_json(*p.flex_dispatcher_sms) : nullptr;
  }
  if (path == "optimize") return word(to_string(p.optimize));
  throw std::logic_error("plan_json: no value for the plan field " + std::string(path));
}

}  // namespace

nlohmann::ordered_json plan_json(const Plan& p) {
  ordered_json out = ordered_json::object();
  for (const PlanField& field : kPlanFields) {
    ordered_json value;
    if (field.axis) {
      value = p.degrees[*field.axis];
    } else if (!std::holds_alternative<std::monostate>(field.setting)) {
      visit_setting(field, p, [&](auto v, auto) { value = v; });
    } else {
      value = own_value(field.path, p);
    }
    if (value.is_null()) continue;
    const std::size_t dot = field.path.find('.');
    if (dot == std::string_view::npos) {
      out[word(field.path)] = std::move(value);
    } else {
      out[word(field.path.substr(0, dot))][word(field.path.substr(dot + 1))] = std::move(value);
    }
  }
  return out;
}

}  // namespace mpsim::plan
