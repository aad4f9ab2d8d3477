#include "sim/plan/plan_check.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "plan_test_support.h"

namespace mpsim::plan {
namespace {

using testing::check_error;
using testing::repo_path;
using testing::spec_from;

constexpr const char* kP4d4 = "topologies/4x-p4d.yaml";        // 32 A100 40GB, 8 per NVSwitch node
constexpr const char* kGpt13b = "configs/models/gpt3-13b.yaml";  // 40 layers, 40 heads

Plan resolve(const std::string& yaml, const char* topology = kP4d4, const char* model = kGpt13b) {
  return resolve_plan(spec_from(yaml), topology::load_topology_file(repo_path(topology)),
                      model::load_model_file(repo_path(model)));
}

TEST(PlanCheck, ShippedPlansResolve) {
  const Plan a = resolve_plan(load_plan_file(repo_path("configs/plans/gpt3-13b-4x-p4d.yaml")),
                              topology::load_topology_file(repo_path(kP4d4)), model::load_model_file(repo_path(kGpt13b)));
  EXPECT_EQ(a.gpus(), 32);
  EXPECT_EQ(a.microbatches, 128);  // 256 / (1 x 2)
  EXPECT_EQ(a.partition, (std::vector<int>{0, 20, 40}));

  const Plan sm = resolve_plan(load_plan_file(repo_path("configs/plans/gpt3-1.3b-sagemaker.yaml")),
                               topology::load_topology_file(repo_path("topologies/p4d.24xlarge.yaml")),
                               model::load_model_file(repo_path("configs/models/gpt3-1.3b.yaml")));
  EXPECT_EQ(sm.degrees[Axis::Data], 2);  // 8 GPUs / 4 partitions
  EXPECT_EQ(sm.global_batch, 16);
  EXPECT_EQ(sm.active_microbatches, 6);

  const Plan mg = resolve_plan(load_plan_file(repo_path("configs/plans/megatron-175b-interleaved.yaml")),
                               topology::load_topology_file(repo_path("topologies/16x-dgx-h100.yaml")),
                               model::load_model_file(repo_path("configs/models/gpt3-175b.yaml")));
  EXPECT_EQ(mg.degrees[Axis::Data], 2);
  EXPECT_EQ(mg.microbatches, 256);
  EXPECT_EQ(mg.stages(), 16);
  EXPECT_EQ(mg.partition.size(), 17u);
  EXPECT_EQ(mg.microbatch_group_size, 8);  // Megatron's default: the pipeline size
}

TEST(PlanCheck, DataDegreeFillsTheClusterAndBatchBalances) {
  const Plan p = resolve("parallelism: { tensor: 8, pipeline: 2 }\nbatch: { global: 64, micro: 2 }\n");
  EXPECT_EQ(p.degrees[Axis::Data], 2);
  EXPECT_EQ(p.microbatches, 16);  // 64 / (2 x 2)
  const Plan q = resolve("parallelism: { tensor: 4, pipeline: 4 }\nbatch: { micro: 1, microbatches: 8 }\n");
  EXPECT_EQ(q.global_batch, 16);
}

TEST(PlanCheck, ErrorsPointAtTheField) {
  EXPECT_EQ(check_error("parallelism: { tensor: 8, pipeline: 2, data: 4 }\n", kP4d4, kGpt13b),
            "plan.yaml:1:46: tensor 8 x pipeline 2 x data 4 = 64 GPUs, but the cluster has 32 (field 'data')");
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 2 }\nbatch: { global: 100, micro: 4 }\n", kP4d4, kGpt13b)
                .find("global batch 100 is not a multiple of micro 4 x data 2 = 8 (field 'global_batch')"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 16, pipeline: 2 }\n", kP4d4, kGpt13b)
                .find("tensor 16 spans more than one NVLink domain (8 GPUs)"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 16, pipeline: 2 }\nallow_tensor_across_nodes: true\n", kP4d4, kGpt13b)
                .find("tensor 16 does not divide the model's 40 attention heads"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4, virtual_stages: 3 }\nschedule: interleaved-1f1b\n",
                        kP4d4, kGpt13b)
                .find("40 layers do not split evenly into pipeline 4 x virtual stages 3"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4, virtual_stages: 2 }\nschedule: 1f1b\n", kP4d4, kGpt13b)
                .find("virtual stages need schedule interleaved-1f1b"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4, virtual_stages: 2 }\nschedule: interleaved-1f1b\n"
                        "batch: { microbatches: 6 }\n",
                        kP4d4, kGpt13b)
                .find("in groups of 4"),
            std::string::npos);
  // Megatron's group rule: groups smaller than the pipeline deadlock (p = 4, N = 2).
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4, virtual_stages: 2 }\nschedule: interleaved-1f1b\n"
                        "batch: { microbatches: 8 }\nmicrobatch_group_size_per_vp_stage: 2\n",
                        kP4d4, kGpt13b)
                .find("need groups of at least 4"),
            std::string::npos);
  EXPECT_EQ(check_error("parallelism: { tensor: 8, pipeline: 4, virtual_stages: 2 }\nschedule: interleaved-1f1b\n"
                        "batch: { microbatches: 10 }\nmicrobatch_group_size_per_vp_stage: 6\n",
                        kP4d4, kGpt13b),
            "<no error>");  // 10 = 6 + 4: the last group holds p microbatches
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 2 }\npartition: [0, 10, 30]\n", kP4d4, kGpt13b)
                .find("end at the model's 40 layers"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4 }\npartition: [0, 10, 10, 20, 40]\n", kP4d4, kGpt13b)
                .find("every stage holds at least one block"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 1, pipeline: 32 }\nactive_microbatches: 4\n", kP4d4, kGpt13b)
                .find("active_microbatches applies to sagemaker-interleaved only"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 1, pipeline: 64 }\n", kP4d4, kGpt13b).find("does not divide"),
            std::string::npos);
  // Megatron's recompute_modules: under selective recomputation, and parts the model has.
  EXPECT_EQ(check_error("parallelism: { tensor: 8, pipeline: 4 }\nrecompute: full\nrecompute_modules: [layernorm]\n",
                        kP4d4, kGpt13b),
            "plan.yaml:3:20: recompute_modules apply to selective recomputation, not 'full' (field 'recompute_modules')");
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4 }\nrecompute: selective\nrecompute_modules: [moe_act]\n",
                        kP4d4, kGpt13b)
                .find("the model has no 'moe_act' to recompute (field 'recompute_modules')"),
            std::string::npos);
  EXPECT_EQ(check_error("parallelism: { tensor: 8, pipeline: 4 }\nrecompute: selective\nrecompute_modules: [layernorm, mlp]\n",
                        kP4d4, kGpt13b),
            "<no error>");
}

// Megatron-LM's rules for --distribute-saved-activations: full recomputation, tensor ranks to split over,
// and inputs whole on each (no sequence parallelism).
TEST(PlanCheck, DistributedCheckpointsFollowMegatronsRules) {
  const auto error = [](const std::string& yaml) { return check_error(yaml, kP4d4, kGpt13b); };
  EXPECT_NE(error("parallelism: { tensor: 8, pipeline: 4 }\nrecompute: selective\ndistribute_saved_activations: true\n")
                .find("it needs recompute: full (field 'distribute_saved_activations')"),
            std::string::npos);
  EXPECT_NE(error("parallelism: { tensor: 1, pipeline: 4 }\nrecompute: full\ndistribute_saved_activations: true\n")
                .find("it needs tensor > 1"),
            std::string::npos);
  EXPECT_NE(error("parallelism: { tensor: 8, pipeline: 4 }\nrecompute: full\nsequence_parallel: true\n"
                  "distribute_saved_activations: true\n")
                .find("already split over the tensor ranks"),
            std::string::npos);
  EXPECT_EQ(error("parallelism: { tensor: 8, pipeline: 4 }\nrecompute: full\npartition_activations: true\n"),
            "<no error>");
}

// Megatron-Core's rules for --overlap-moe-expert-parallel-comm (its TransformerConfig checks).
TEST(PlanCheck, ExpertCommOverlapFollowsMegatronCoresRules) {
  constexpr const char* kMixtral = "configs/models/mixtral-8x7b.yaml";  // 32 layers, 8 experts
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4 }\noverlap: { moe_expert_comm: true }\n", kP4d4, kGpt13b)
                .find("needs expert parallelism (expert > 1) (field 'overlap.moe_expert_comm')"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 4, pipeline: 2, expert: 4 }\noverlap: { moe_expert_comm: true }\n",
                        kP4d4, kMixtral)
                .find("needs interleaved-1f1b with virtual_stages > 1"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 4, pipeline: 1, expert: 8 }\nschedule: zb-h1\n"
                        "overlap: { moe_expert_comm: true }\n",
                        kP4d4, kMixtral)
                .find("runs Megatron-Core's combined 1F1B, not zb-h1"),
            std::string::npos);
  EXPECT_NE(check_error("parallelism: { tensor: 4, pipeline: 1, expert: 8 }\nrecompute: full\n"
                        "overlap: { moe_expert_comm: true }\n",
                        kP4d4, kMixtral)
                .find("does not combine with full recomputation"),
            std::string::npos);
  EXPECT_EQ(check_error("parallelism: { tensor: 4, pipeline: 2, expert: 4, virtual_stages: 2 }\n"
                        "schedule: interleaved-1f1b\noverlap: { moe_expert_comm: true }\n",
                        kP4d4, kMixtral),
            "<no error>");
  // Megatron-LM's flat name, as a plan written from its arguments spells it.
  EXPECT_TRUE(spec_from("overlap_moe_expert_parallel_comm: true\n").overlap_moe_expert_comm);
}

// The flex backend's SMs (moe_hybridep_num_sms) must leave the GPU some to compute beside them: an
// A100 has 108.
TEST(PlanCheck, FlexDispatcherSmsLeaveSomeToCompute) {
  constexpr const char* kMixtral = "configs/models/mixtral-8x7b.yaml";
  const std::string flex = "parallelism: { tensor: 4, pipeline: 1, expert: 8 }\nmoe_token_dispatcher_type: flex\n"
                           "moe_flex_dispatcher_backend: hybridep\n";
  EXPECT_EQ(check_error(flex + "moe_hybridep_num_sms: 32\n", kP4d4, kMixtral), "<no error>");
  EXPECT_EQ(check_error(flex + "moe_hybridep_num_sms: 108\n", kP4d4, kMixtral),
            "plan.yaml:4:23: 108 SMs for the dispatcher leave none of the GPU's 108 to compute "
            "(field 'moe_hybridep_num_sms')");
}

// attention_kernel picks a generation of FlashAttention kernels the GPU kind has a rate for
// (configs/hardware/gpus.yaml attention_kernels): H100 lists fa2 and fa3, A100 fa2 only.
TEST(PlanCheck, AttentionKernelNeedsARateOnTheGpuKind) {
  constexpr const char* kDgxH100 = "topologies/dgx-h100.yaml";
  const Plan h100 = resolve("parallelism: { tensor: 8 }\nattention_kernel: fa2\n", kDgxH100);
  EXPECT_EQ(h100.attention_kernel, topology::AttentionGeneration::Fa2);
  EXPECT_FALSE(resolve("parallelism: { tensor: 8 }\n", kDgxH100).attention_kernel.has_value());
  EXPECT_EQ(check_error("parallelism: { tensor: 8 }\nattention_kernel: fa4\n", kDgxH100, kGpt13b),
            "plan.yaml:2:19: NVIDIA H100 SXM 80GB has no attention rate for fa4 kernels (its attention_kernels); "
            "leave attention_kernel out for its attention_efficiency (field 'attention_kernel')");
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4 }\nattention_kernel: fa3\n", kP4d4, kGpt13b)
                .find("has no attention rate for fa3 kernels"),
            std::string::npos);
  EXPECT_EQ(check_error("parallelism: { tensor: 8, pipeline: 4 }\nattention_kernel: fa2\n", kP4d4, kGpt13b),
            "<no error>");
  EXPECT_NE(check_error("parallelism: { tensor: 8 }\nattention: standard\nattention_kernel: fa2\n", kDgxH100, kGpt13b)
                .find("attention_kernel fa2 names FlashAttention kernels; attention is standard"),
            std::string::npos);
}

TEST(PlanCheck, PcieBoxHasNoNvlinkDomain) {
  // Without NVLink every GPU is its own domain: tensor parallelism over PCIe must be asked for.
  EXPECT_NE(check_error("parallelism: { tensor: 2 }\n", "topologies/pcie-8gpu.yaml", kGpt13b).find("NVLink domain"),
            std::string::npos);
  EXPECT_EQ(check_error("parallelism: { tensor: 2 }\nallow_tensor_across_nodes: true\n", "topologies/pcie-8gpu.yaml",
                        kGpt13b),
            "<no error>");
}

TEST(PlanCheck, EndStagesMayHoldTheEmbeddingOrTheHeadAlone) {
  // Megatron's account_for_embedding/loss_in_pipeline_split with one block per stage: 42 stages for
  // 40 blocks, the first the embedding alone, the last the output head alone.
  std::string bounds = "0, 0";
  for (int b = 1; b <= 40; ++b) bounds += fmt::format(", {}", b);
  bounds += ", 40";
  const topology::Cluster cluster = topology::load_topology_file(repo_path("topologies/dgx-h100.yaml"));
  const model::Model m = model::load_model_file(repo_path(kGpt13b));
  const Plan p = resolve_plan(spec_from(fmt::format("parallelism: {{ pipeline: 2, virtual_stages: 21 }}\n"
                                                    "schedule: interleaved-1f1b\nbatch: {{ microbatches: 4 }}\n"
                                                    "partition: [{}]\n",
                                                    bounds)),
                              cluster, m);
  const std::vector<LayerRange> ranges = virtual_stage_layers(p, m);
  ASSERT_EQ(ranges.size(), 42u);
  EXPECT_EQ(ranges.front().first, 0);  // the embedding
  EXPECT_EQ(ranges.front().last, 1);
  EXPECT_EQ(ranges[1].first, 1);  // block0
  EXPECT_EQ(ranges[1].last, 2);
  EXPECT_EQ(ranges.back().first, 41);  // the output head
  EXPECT_EQ(ranges.back().last, 42);
  EXPECT_EQ(end_stages_without_blocks(m), 2);
  // More stages than that, or an empty stage in the middle, are refused.
  EXPECT_NE(check_error("parallelism: { tensor: 8, pipeline: 4 }\npartition: [0, 0, 0, 20, 40]\n", kP4d4, kGpt13b)
                .find("every stage holds at least one block"),
            std::string::npos);
  EXPECT_EQ(check_error("parallelism: { tensor: 8, pipeline: 4 }\npartition: [0, 0, 20, 40, 40]\n", kP4d4, kGpt13b),
            "<no error>");
}

TEST(PlanCheck, EvenPartition) {
  EXPECT_EQ(even_partition(10, 4), (std::vector<int>{0, 3, 6, 8, 10}));
  EXPECT_EQ(even_partition(96, 8), (std::vector<int>{0, 12, 24, 36, 48, 60, 72, 84, 96}));
}

}  // namespace
}  // namespace mpsim::plan
