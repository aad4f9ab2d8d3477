#include "sim/plan/plan_json.h"

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mpsim::plan {

nlohmann::ordered_json plan_json(const Plan& p) {
  using nlohmann::ordered_json;
  const auto word = [](std::string_view w) { return std::string(w); };
  ordered_json out;
  out["parallelism"] = {{"tensor", p.degrees[Axis::Tensor]},
                        {"pipeline", p.degrees[Axis::Pipeline]},
                        {"data", p.degrees[Axis::Data]},
                        {"virtual_stages", p.virtual_stages},
                        {"context", p.degrees[Axis::Context]},
                        {"expert", p.degrees[Axis::Expert]},
                        {"expert_tensor", p.degrees[Axis::ExpertTensor]}};
  out["batch"] = {{"global", p.global_batch}, {"micro", p.micro_batch}, {"microbatches", p.microbatches}};
  out["schedule"] = word(to_string(p.schedule));
  // A schedule's own parameter, only where the schedule has it (the loader refuses it elsewhere).
  switch (traits(p.schedule).rule) {
    case ShapeRule::MicrobatchGroup: out["microbatch_group_size_per_vp_stage"] = p.microbatch_group_size; break;
    case ShapeRule::ActiveCap: out["active_microbatches"] = p.active_microbatches; break;
    case ShapeRule::MemoryLimit: out["zb_memory_limit"] = p.zb_memory_limit; break;
    case ShapeRule::None:
    case ShapeRule::VShape: break;
  }
  out["partition"] = p.partition;
  out["placement"] = to_string(p.placement);
  out["recompute"] = word(model::to_string(p.recompute));
  std::vector<std::string> modules;
  for (const std::string_view name : model::module_names(p.recompute_modules)) modules.emplace_back(name);
  out["recompute_modules"] = modules;
  out["activation_offload_layers"] = p.activation_offload_layers;
  out["sequence_parallel"] = p.sequence_parallel;
  out["cp_comm_type"] = word(name_of(kContextCommNames, p.context_comm));
  out["precision"] = word(to_string(p.precision));
  out["fp8_param_gather"] = p.fp8_param_gather;
  out["attention"] = word(to_string(p.attention));
  if (p.attention_kernel) out["attention_kernel"] = word(topology::to_string(*p.attention_kernel));
  out["overlap"] = {{"grad_reduce", p.overlap_grad_reduce},
                    {"param_gather", p.overlap_param_gather},
                    {"tensor_comm", p.overlap_tensor_comm},
                    {"moe_expert_comm", p.overlap_moe_expert_comm}};
  out["zero"] = p.zero;
  out["shard_groups"] = p.degrees[Axis::DataReplica];
  out["grad_reduce_in_fp32"] = p.grad_reduce_in_fp32;
  out["optimizer"] = word(name_of(kOptimizerNames, p.optimizer));
  out["routing_imbalance"] = p.routing_imbalance;
  if (p.expert_capacity_factor) {
    out["moe_expert_capacity_factor"] = *p.expert_capacity_factor;
    out["moe_pad_expert_input_to_capacity"] = p.pad_expert_input_to_capacity;
  }
  out["moe_token_dispatcher_type"] = deduplicates_tokens(p.dispatcher) ? "flex" : "alltoall";
  if (deduplicates_tokens(p.dispatcher)) {
    out["moe_flex_dispatcher_backend"] = word(name_of(kFlexBackendNames, p.dispatcher));
    if (p.flex_dispatcher_sms) out[word(name_of(kFlexDispatcherSmsKeys, p.dispatcher))] = *p.flex_dispatcher_sms;
  }
  out["optimize"] = word(to_string(p.optimize));
  out["allow_tensor_across_nodes"] = p.allow_tensor_across_nodes;
  return out;
}

}  // namespace mpsim::plan
