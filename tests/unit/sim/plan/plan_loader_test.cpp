#include "sim/plan/plan_loader.h"

#include <gtest/gtest.h>

#include "plan_test_support.h"

namespace mpsim::plan {
namespace {

using testing::spec_from;

TEST(PlanLoader, InterfaceForm) {
  const PlanSpec s = spec_from(R"(
parallelism: { tensor: 8, pipeline: 4, data: 2, virtual_stages: 1 }
batch: { global: 512, micro: 1 }
schedule: 1f1b
partition: balanced
recompute: none
zero: 0
placement: tp-dp-pp
)");
  EXPECT_EQ(s.degrees[Axis::Tensor], 8);
  EXPECT_EQ(s.degrees[Axis::Pipeline], 4);
  EXPECT_EQ(s.written(Axis::Data), 2);
  EXPECT_EQ(s.global_batch, 512);
  EXPECT_EQ(s.schedule, ScheduleKind::OneFOneB);
  EXPECT_TRUE(s.partition.empty());
  EXPECT_EQ(s.placement, kMegatronPlacement);
  EXPECT_EQ(s.origins.at("tensor").line, 2);
}

TEST(PlanLoader, SageMakerForm) {
  const PlanSpec s = spec_from("partitions: 4\nmicrobatches: 8\npipeline: simple\noptimize: memory\n"
                               "placement_strategy: spread\nactive_microbatches: 6\nddp: true\n");
  EXPECT_EQ(s.degrees[Axis::Pipeline], 4);
  EXPECT_EQ(s.microbatches, 8);
  EXPECT_EQ(s.schedule, ScheduleKind::GPipe);
  EXPECT_EQ(s.optimize, Objective::Memory);
  // SageMaker "spread" = "TPD": D varies fastest, then P, then T.
  EXPECT_EQ(to_string(s.placement), "dp-pp-tp");
  EXPECT_EQ(to_string(spec_from("partitions: 2\nplacement_strategy: cluster\n").placement), "tp-pp-dp");
  EXPECT_EQ(to_string(spec_from("partitions: 2\nplacement_strategy: PTD\n").placement), "dp-tp-pp");
  EXPECT_EQ(spec_from("partitions: 2\npipeline: interleaved\n").schedule, ScheduleKind::SageMakerInterleaved);
}

TEST(PlanLoader, MegatronForm) {
  const PlanSpec s = spec_from(
      "tensor_model_parallel_size: 8\npipeline_model_parallel_size: 8\nvirtual_pipeline_model_parallel_size: 2\n"
      "micro_batch_size: 2\nglobal_batch_size: 2304\nrecompute_granularity: full\nschedule: interleaved-1f1b\n");
  EXPECT_EQ(s.degrees[Axis::Tensor], 8);
  EXPECT_EQ(s.virtual_stages, 2);
  EXPECT_EQ(s.micro_batch, 2);
  EXPECT_EQ(s.global_batch, 2304);
  EXPECT_EQ(s.recompute, Recompute::Full);
}

TEST(PlanLoader, PrecisionAttentionAndOverlap) {
  const PlanSpec s = spec_from("precision: mxfp8\nattention: standard\n"
                               "overlap: { grad_reduce: true, param_gather: true, tensor_comm: true }\n");
  EXPECT_EQ(s.precision, Precision::Mxfp8);
  EXPECT_EQ(s.attention, AttentionKernel::Standard);
  EXPECT_TRUE(s.overlap_grad_reduce);
  EXPECT_TRUE(s.overlap_param_gather);
  EXPECT_TRUE(s.overlap_tensor_comm);
  // Defaults: the model's dtype, FlashAttention, nothing overlapped (Megatron-Core's defaults).
  const PlanSpec d = spec_from("parallelism: { tensor: 2 }\n");
  EXPECT_FALSE(d.precision.has_value());
  EXPECT_EQ(d.attention, AttentionKernel::Flash);
  EXPECT_FALSE(d.overlap_grad_reduce || d.overlap_param_gather || d.overlap_tensor_comm);
  // Megatron's names.
  const PlanSpec m = spec_from("fp8: hybrid\nfp8_recipe: mxfp8\nattention_backend: unfused\n"
                               "overlap_grad_reduce: true\noverlap_param_gather: true\n");
  EXPECT_EQ(m.precision, Precision::Mxfp8);
  EXPECT_EQ(m.attention, AttentionKernel::Standard);
  EXPECT_TRUE(m.overlap_grad_reduce && m.overlap_param_gather);
  EXPECT_EQ(spec_from("fp8: e4m3\n").precision, Precision::Fp8);
  EXPECT_EQ(spec_from("fp8: e4m3\nfp8_recipe: blockwise\n").precision, Precision::Fp8Blockwise);
  EXPECT_EQ(spec_from("precision: fp8-blockwise\n").precision, Precision::Fp8Blockwise);
  EXPECT_EQ(spec_from("use_flash_attn: false\n").attention, AttentionKernel::Standard);
  EXPECT_THROW((void)spec_from("precision: fp4\n"), InputError);
  EXPECT_THROW((void)spec_from("attention: sparse\n"), InputError);
  // The generation of FlashAttention kernels the run's release ships; unset, the GPU kind's default.
  EXPECT_FALSE(d.attention_kernel.has_value());
  EXPECT_EQ(spec_from("attention_kernel: fa2\n").attention_kernel, topology::AttentionGeneration::Fa2);
  EXPECT_EQ(spec_from("attention_kernel: fa4\n").attention_kernel, topology::AttentionGeneration::Fa4);
  EXPECT_THROW((void)spec_from("attention_kernel: fa5\n"), InputError);
  EXPECT_THROW((void)spec_from("fp8: e5m2\n"), InputError);
  EXPECT_THROW((void)spec_from("overlap: { grad_reduce: maybe }\n"), InputError);
  EXPECT_THROW((void)spec_from("precision: fp8\nfp8: hybrid\n"), InputError);  // one field, two names
  // Model-state formats: Megatron-LM's defaults, ours, Megatron's and NeMo's names.
  EXPECT_TRUE(d.grad_reduce_in_fp32);
  EXPECT_FALSE(d.fp8_param_gather);
  const PlanSpec f = spec_from("grad_reduce_in_fp32: false\nfp8_param_gather: true\n");
  EXPECT_FALSE(f.grad_reduce_in_fp32);
  EXPECT_TRUE(f.fp8_param_gather);
  const PlanSpec n = spec_from("accumulate_allreduce_grads_in_fp32: false\nfp8_params: true\n");
  EXPECT_FALSE(n.grad_reduce_in_fp32);
  EXPECT_TRUE(n.fp8_param_gather);
  EXPECT_THROW((void)spec_from("fp8_params: true\nfp8_param_gather: true\n"), InputError);
  EXPECT_THROW((void)spec_from("grad_reduce_in_fp32: fp32\n"), InputError);
  // Megatron-Core's recompute_modules replace its default {core_attn}.
  EXPECT_EQ(d.recompute_modules, model::RecomputeModules{});
  const PlanSpec r = spec_from("recompute: selective\nrecompute_modules: [layernorm, moe_act]\n");
  EXPECT_TRUE(r.recompute_modules.has(model::RecomputeModule::LayerNorm));
  EXPECT_TRUE(r.recompute_modules.has(model::RecomputeModule::MoeActivation));
  EXPECT_FALSE(r.recompute_modules.has(model::RecomputeModule::CoreAttention));
  EXPECT_THROW((void)spec_from("recompute_modules: [attention]\n"), InputError);
}

TEST(PlanLoader, SameFieldUnderTwoNamesIsAnError) {
  EXPECT_THROW((void)spec_from("partitions: 4\nparallelism: { pipeline: 2 }\n"), InputError);
}

TEST(PlanLoader, BadValuesNameFileLineAndField) {
  try {
    (void)spec_from("parallelism: { tensor: 0 }\n");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()), "plan.yaml:1:24: must be at least 1, got 0 (field 'parallelism.tensor')");
  }
  EXPECT_THROW((void)spec_from("schedule: 2f2b\n"), InputError);
  EXPECT_THROW((void)spec_from("placement: tp-tp-pp\n"), InputError);
  EXPECT_THROW((void)spec_from("placement: tp-dp\n"), InputError);
  EXPECT_THROW((void)spec_from("zero: 4\n"), InputError);
  EXPECT_THROW((void)spec_from("recompute: sometimes\n"), InputError);
  EXPECT_THROW((void)spec_from("partition: [0]\n"), InputError);
  EXPECT_THROW((void)spec_from("microbatchez: 4\n"), InputError);
}

TEST(PlanLoader, WrittenPlanReadsBack) {
  Plan p;
  p.degrees.set(Axis::Tensor, 4);
  p.degrees.set(Axis::Pipeline, 2);
  p.degrees.set(Axis::Data, 3);
  p.virtual_stages = 2;
  p.global_batch = 96;
  p.micro_batch = 2;
  p.microbatches = 16;
  p.schedule = ScheduleKind::Interleaved1F1B;
  p.partition = {0, 3, 6, 9, 12};
  p.recompute = Recompute::Selective;
  p.sequence_parallel = true;
  p.zero = 1;
  p.placement = {Axis::Tensor, Axis::Pipeline, Axis::Data};
  p.microbatch_group_size = 2;
  p.precision = Precision::Fp8;
  p.attention = AttentionKernel::Standard;
  p.attention_kernel = topology::AttentionGeneration::Fa2;
  p.overlap_grad_reduce = true;
  p.overlap_tensor_comm = true;
  p.overlap_moe_expert_comm = true;
  p.dispatcher = MoeDispatcher::HybridEp;
  p.flex_dispatcher_sms = 32;
  p.grad_reduce_in_fp32 = false;
  p.fp8_param_gather = true;
  p.optimizer = Optimizer::Muon;
  p.degrees.set(Axis::DataReplica, 3);
  p.context_comm = ContextComm::AllToAll;
  p.activation_offload_layers = 5;
  const PlanSpec back = spec_from(write_plan_yaml(p));
  EXPECT_EQ(back.optimizer, p.optimizer);
  EXPECT_EQ(back.degrees[Axis::DataReplica], p.degrees[Axis::DataReplica]);
  EXPECT_EQ(back.context_comm, p.context_comm);
  EXPECT_EQ(back.activation_offload_layers, p.activation_offload_layers);
  EXPECT_EQ(back.grad_reduce_in_fp32, p.grad_reduce_in_fp32);
  EXPECT_EQ(back.fp8_param_gather, p.fp8_param_gather);
  EXPECT_EQ(back.precision, p.precision);
  EXPECT_EQ(back.attention, p.attention);
  EXPECT_EQ(back.attention_kernel, p.attention_kernel);
  EXPECT_EQ(back.overlap_grad_reduce, p.overlap_grad_reduce);
  EXPECT_EQ(back.overlap_param_gather, p.overlap_param_gather);
  EXPECT_EQ(back.overlap_tensor_comm, p.overlap_tensor_comm);
  EXPECT_EQ(back.overlap_moe_expert_comm, p.overlap_moe_expert_comm);
  EXPECT_EQ(back.dispatcher, p.dispatcher);
  EXPECT_EQ(back.flex_dispatcher_sms, p.flex_dispatcher_sms);
  EXPECT_EQ(back.degrees[Axis::Tensor], p.degrees[Axis::Tensor]);
  EXPECT_EQ(back.degrees[Axis::Pipeline], p.degrees[Axis::Pipeline]);
  EXPECT_EQ(back.written(Axis::Data), p.degrees[Axis::Data]);
  EXPECT_EQ(back.virtual_stages, p.virtual_stages);
  EXPECT_EQ(back.global_batch, p.global_batch);
  EXPECT_EQ(back.micro_batch, p.micro_batch);
  // Written as a comment: it follows from the global batch, the micro batch and the data degree.
  EXPECT_FALSE(back.microbatches.has_value());
  EXPECT_EQ(*back.global_batch / (back.micro_batch * *back.written(Axis::Data)), p.microbatches);
  EXPECT_EQ(back.schedule, p.schedule);
  EXPECT_EQ(back.partition, p.partition);
  EXPECT_EQ(back.recompute, p.recompute);
  EXPECT_EQ(back.sequence_parallel, p.sequence_parallel);
  EXPECT_EQ(back.zero, p.zero);
  EXPECT_EQ(back.placement, p.placement);
  EXPECT_EQ(back.microbatch_group_size, p.microbatch_group_size);
}

TEST(PlanLoader, WrittenScheduleKnobsReadBack) {
  Plan p;
  p.degrees.set(Axis::Pipeline, 4);
  p.schedule = ScheduleKind::ZbAuto;
  p.zb_memory_limit = 8;
  p.partition = {0, 1, 2, 3, 4};
  const PlanSpec back = spec_from(write_plan_yaml(p));
  EXPECT_EQ(back.schedule, ScheduleKind::ZbAuto);
  EXPECT_EQ(back.zb_memory_limit, 8);
  for (const ScheduleKind kind : {ScheduleKind::ZbV, ScheduleKind::DualPipeV, ScheduleKind::VHalf, ScheduleKind::VMin}) {
    p.schedule = kind;
    p.virtual_stages = 2;
    p.partition = {0, 1, 2, 3, 4, 5, 6, 7, 8};
    const PlanSpec v = spec_from(write_plan_yaml(p));
    EXPECT_EQ(v.schedule, kind);
    EXPECT_EQ(v.virtual_stages, 2);
    EXPECT_FALSE(v.zb_memory_limit.has_value());
  }
}

}  // namespace
}  // namespace mpsim::plan
