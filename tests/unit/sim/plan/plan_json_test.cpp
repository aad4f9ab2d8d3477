// The plan object of the JSON reports, saved as a file, is a plan file that resolves to the same plan.
#include "sim/plan/plan_json.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "plan_test_support.h"

namespace mpsim::plan {
namespace {

using testing::repo_path;
using testing::spec_from;

Plan resolved(const std::string& yaml, const std::string& topology, const std::string& model) {
  return resolve_plan(spec_from(yaml), topology::load_topology_file(repo_path(topology)),
                      model::load_model_file(repo_path(model)));
}

/// The plan's JSON, read back as a plan file (JSON is YAML) against the same cluster and model.
Plan round_trip(const Plan& p, const std::string& topology, const std::string& model) {
  return resolved(plan_json(p).dump(2), topology, model);
}

struct Case {
  const char* name;
  const char* plan;
  const char* topology;
  const char* model;
};

// Every field away from its default somewhere, every schedule parameter, a derived data degree, and
// the names of Megatron and SageMaker on the way in.
const Case kCases[] = {
    {"megatron-interleaved", "parallelism: { tensor: 8, pipeline: 4, virtual_stages: 3 }\nbatch: { global: 512 }\n"
                             "microbatch_group_size_per_vp_stage: 8\nrecompute: selective\nrecompute_modules: [mlp]\n"
                             "sequence_parallel: true\nzero: 1\noverlap: { grad_reduce: true, param_gather: true }\n"
                             "precision: fp8\nfp8_param_gather: true\nattention_kernel: fa3\ngrad_reduce_in_fp32: false\n"
                             "placement: tp-pp-dp\n",
     "topologies/16x-dgx-h100.yaml", "configs/models/gpt3-175b.yaml"},
    {"sagemaker", "partitions: 2\nmicrobatches: 8\npipeline: interleaved\nactive_microbatches: 3\n"
                  "tensor_parallel_degree: 2\noptimize: memory\nplacement_strategy: spread\n",
     "topologies/p4d.24xlarge.yaml", "configs/models/gpt3-1.3b.yaml"},
    {"zb-auto", "parallelism: { pipeline: 4, data: 2 }\nbatch: { global: 64, micro: 2 }\nschedule: zb-auto\n"
                "zb_memory_limit: 6\npartition: [0, 6, 12, 18, 24]\nrecompute: full\nattention: standard\n"
                "replica_microbatches: [20, 12]\n",
     "topologies/dgx-a100.yaml", "configs/models/gpt3-1.3b.yaml"},
    {"moe-flex", "parallelism: { tensor: 2, pipeline: 2, expert: 8, expert_tensor: 1, context: 2 }\n"
                 "batch: { global: 256 }\nmoe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep\n"
                 "moe_hybridep_num_sms: 24\nrouting_imbalance: 1.25\nmoe_expert_capacity_factor: 1.5\n"
                 "moe_pad_expert_input_to_capacity: true\ncp_comm_type: a2a\noptimizer: muon\ncross_entropy: pytorch\nshard_groups: 2\n"
                 "zero: 1\n",
     "topologies/16x-dgx-h100.yaml", "configs/models/qwen3-30b-a3b.yaml"},
    {"dualpipe", "parallelism: { pipeline: 4, expert: 8 }\nbatch: { global: 512, micro: 1 }\nschedule: dualpipe\n"
                 "overlap: { moe_expert_comm: false }\n",
     "topologies/16x-dgx-h100.yaml", "configs/models/qwen3-30b-a3b.yaml"},
    {"distributed-checkpoints", "parallelism: { tensor: 2 }\nrecompute: full\nrecompute_method: block\n"
                                "recompute_num_layers: 2\ndistribute_saved_activations: true\n",
     "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml"},
    {"offload", "activation_offload_layers: 4\nbatch: { global: 16 }\nallow_tensor_across_nodes: true\n"
                "precision_aware_optimizer: true\nexp_avg_dtype: bf16\nexp_avg_sq_dtype: fp8\n",
     "topologies/dgx-h100.yaml", "configs/models/llama3-8b.yaml"},
};

TEST(PlanJson, SavedAsAFileItResolvesToTheSamePlan) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const Plan p = resolved(c.plan, c.topology, c.model);
    EXPECT_EQ(round_trip(p, c.topology, c.model), p) << plan_json(p).dump(2);
  }
}

TEST(PlanJson, StatesTheDerivedValues) {
  const Plan p = resolved(kCases[0].plan, kCases[0].topology, kCases[0].model);
  const nlohmann::ordered_json j = plan_json(p);
  EXPECT_EQ(j["parallelism"]["data"], 128 / (8 * 4));  // the GPUs left to data parallelism
  EXPECT_EQ(j["batch"]["microbatches"], 512 / (1 * 4));
  EXPECT_EQ(j["batch"]["micro"], 1);
  EXPECT_EQ(j["partition"].size(), 4u * 3 + 1);  // balanced, written out
  EXPECT_EQ(j["schedule"], "interleaved-1f1b");  // implied by the virtual stages
  EXPECT_EQ(j["parallelism"]["expert_tensor"], 8);  // Megatron's default: the tensor degree
}

TEST(PlanJson, WritesAScheduleParameterOnlyWithItsSchedule) {
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    const Plan p = resolved(c.plan, c.topology, c.model);
    const nlohmann::ordered_json j = plan_json(p);
    const ShapeRule rule = traits(p.schedule).rule;
    EXPECT_EQ(j.contains("microbatch_group_size_per_vp_stage"), rule == ShapeRule::MicrobatchGroup);
    EXPECT_EQ(j.contains("active_microbatches"), rule == ShapeRule::ActiveCap);
    EXPECT_EQ(j.contains("zb_memory_limit"), rule == ShapeRule::MemoryLimit);
  }
}

}  // namespace
}  // namespace mpsim::plan
