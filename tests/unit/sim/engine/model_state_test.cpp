// Model states (weights, gradients, optimizer state) per GPU and the data-parallel bytes that move
// them, against closed forms worked out by hand: fp32 or 16-bit gradients, FP8 weight copies or FP8
// weights only, ZeRO's shards.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/cost_model.h"
#include "sim/schedule/passes.h"

namespace mpsim::engine {
namespace {

using plan::Precision;

StateFormat format(Precision precision, int zero, int data) {
  StateFormat f;
  f.dtype_bytes = 2;
  f.precision = precision;
  f.zero = zero;
  f.data = data;
  return f;
}

constexpr std::int64_t kParameters = 1'000'000'000;
constexpr std::int64_t kFp8Parameters = 900'000'000;  // the blocks' GEMMs; the rest: embeddings, norms

TEST(ModelStates, SixteenBitWeightsFp32GradientsAndAdam) {
  const StaticMemory m = static_memory({kParameters, kFp8Parameters, 0, 0}, format(Precision::Bf16, 0, 8));
  EXPECT_EQ(m.weights.count(), 2 * kParameters);  // no FP8 copies without an FP8 precision
  EXPECT_EQ(m.gradients.count(), 4 * kParameters);
  EXPECT_EQ(m.optimizer.count(), 12 * kParameters);
}

TEST(ModelStates, AnFp32ModelsOptimizerKeepsNoMasterCopy) {
  // fp32 weights are the optimizer's own: Adam keeps its two moments (8 bytes), Muon one (4).
  StateFormat f = format(Precision::Fp32, 0, 8);
  f.dtype_bytes = 4;
  const StaticMemory m = static_memory({kParameters, 0, 0, 0}, f);
  EXPECT_EQ(m.weights.count(), 4 * kParameters);
  EXPECT_EQ(m.gradients.count(), 4 * kParameters);
  EXPECT_EQ(m.optimizer.count(), 8 * kParameters);
  f.optimizer = plan::Optimizer::Muon;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer.count(), 4 * kParameters);
}

TEST(ModelStates, MuonKeepsMasterWeightsAndOneMomentum) {
  StateFormat f = format(Precision::Bf16, 1, 8);
  f.optimizer = plan::Optimizer::Muon;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer.count(), 8 * kParameters / 8);
  // One step reads the fp32 gradient, reads and writes the master weights and momentum, writes the
  // 16-bit weights: 4 + 16 + 2 bytes per parameter of the rank's shard, at 1 TB/s.
  const OptimizerPace bandwidth{BytesPerSec::bytes_per_sec(1e12), {}};
  EXPECT_EQ(optimizer_step_time({kParameters, 0, 0, 0}, f, bandwidth), TimeNs::ns(22 * kParameters / 8 / 1000));
  f.optimizer = plan::Optimizer::Adam;
  EXPECT_EQ(optimizer_step_time({kParameters, 0, 0, 0}, f, bandwidth), TimeNs::ns(30 * kParameters / 8 / 1000));
  // The routed experts' shards are over their own replicas: 400 M of them over 2, the rest over 8.
  f.expert_data = 2;
  EXPECT_EQ(optimizer_step_time({kParameters, 0, 0, 400'000'000}, f, bandwidth),
            TimeNs::ns(30LL * (600'000'000 / 8 + 400'000'000 / 2) / 1000));
}

TEST(ModelStates, AMeasuredTimePerParameterPricesItsOptimizersStep) {
  // 7.24 ns per Adam parameter (a CPU rank's, as mpsim profile times it): the step is the parameters
  // the rank owns times that, whatever the bandwidth; Muon, unmeasured, keeps its traffic at 1 TB/s.
  StateFormat f = format(Precision::Bf16, 0, 8);
  const OptimizerPace pace{BytesPerSec::bytes_per_sec(1e12), {{plan::Optimizer::Adam, 7.24e-9}}};
  EXPECT_EQ(optimizer_step_time({kParameters, 0, 0, 0}, f, pace), TimeNs::ns(7'240'000'000));
  f.zero = 1;  // the distributed optimizer steps its shard: an eighth
  EXPECT_EQ(optimizer_step_time({kParameters, 0, 0, 0}, f, pace), TimeNs::ns(905'000'000));
  f.optimizer = plan::Optimizer::Muon;
  EXPECT_EQ(optimizer_step_time({kParameters, 0, 0, 0}, f, pace), TimeNs::ns(22 * kParameters / 8 / 1000));
}

// A profiled model's optimizer_time_per_parameter through the whole simulator: each pipeline rank's
// optimizer span lasts its parameters times the measured time, and the step ends with it.
TEST(ModelStates, TheSimulatorStepsAProfiledModelsOptimizerAtItsMeasuredTime) {
  const auto cluster = testing::pcie_box(2);
  const auto model = testing::model_yaml(
      "model:\n  name: profiled\n  dtype: fp32\n  optimizer_time_per_parameter: { adam: \"7.5 ns\" }\n  layers:\n"
      "    - { name: a, forward_time: \"1 ms\", backward_time: \"2 ms\", params: 1000000 }\n"
      "    - { name: b, forward_time: \"1 ms\", backward_time: \"2 ms\", params: 3000000 }\n");
  const auto plan = testing::pipeline_plan(2, 1, "gpipe", cluster, model);
  const CostModel costs = build_cost_model(cluster, model, plan, plan::Layout(plan));
  EXPECT_EQ(costs.ranks.at(0).optimizer_step, TimeNs::us(7500));   // 1 M x 7.5 ns
  EXPECT_EQ(costs.ranks.at(1).optimizer_step, TimeNs::us(22500));  // 3 M x 7.5 ns
  EngineOptions options;
  options.record_timeline = true;
  const Prediction prediction = simulate(cluster, model, plan, options);
  std::vector<std::int64_t> optimizer_spans;
  for (const trace::Span& s : prediction.timeline.spans) {
    if (s.kind == trace::SpanKind::Optimizer) optimizer_spans.push_back(s.end_ns - s.start_ns);
  }
  std::sort(optimizer_spans.begin(), optimizer_spans.end());
  EXPECT_EQ(optimizer_spans, (std::vector<std::int64_t>{7'500'000, 22'500'000}));
  // Without the field the same step is priced by 30 bytes per parameter at the A100's memory bandwidth.
  const auto unmeasured = testing::model_yaml(
      "model:\n  name: listed\n  dtype: fp32\n  layers:\n"
      "    - { name: a, forward_time: \"1 ms\", backward_time: \"2 ms\", params: 1000000 }\n"
      "    - { name: b, forward_time: \"1 ms\", backward_time: \"2 ms\", params: 3000000 }\n");
  const CostModel bandwidth_costs = build_cost_model(cluster, unmeasured, plan, plan::Layout(plan));
  const BytesPerSec hbm = cluster.gpu_kind_of(cluster.gpus().front()).memory_bandwidth;
  EXPECT_EQ(bandwidth_costs.ranks.at(1).optimizer_step, transfer_time(Bytes::bytes(30 * 3'000'000), hbm));
}

TEST(ModelStates, Fp8CopiesOnlyForTheFp8GemmsWeights) {
  const StaticMemory m = static_memory({kParameters, kFp8Parameters, 0, 0}, format(Precision::Fp8, 0, 8));
  EXPECT_EQ(m.weights.count(), 2 * kParameters + 1 * kFp8Parameters);
}

TEST(ModelStates, Fp8WeightsOnlyTakeTwoBytes) {
  StateFormat f = format(Precision::Mxfp8, 0, 8);
  f.fp8_param_gather = true;
  const StaticMemory m = static_memory({kParameters, kFp8Parameters, 0, 0}, f);
  // 16-bit embeddings and norms; FP8 data plus its transposed copy for the blocks' GEMMs.
  EXPECT_EQ(m.weights.count(), 2 * (kParameters - kFp8Parameters) + 2 * kFp8Parameters);
}

TEST(ModelStates, SixteenBitGradientsHalveTheBuffer) {
  StateFormat f = format(Precision::Bf16, 1, 8);
  f.grad_reduce_in_fp32 = false;
  const StaticMemory m = static_memory({kParameters, 0, 0, 0}, f);
  EXPECT_EQ(m.gradients.count(), 2 * kParameters);
  EXPECT_EQ(m.optimizer.count(), 12 * kParameters / 8);  // ZeRO 1 shards only the optimizer
  f.zero = 2;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).gradients.count(), 2 * kParameters / 8);
  f.zero = 3;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).weights.count(), 2 * kParameters / 8);
}

TEST(ModelStates, SixteenBitGradientsGetFp32CopiesForTheOptimizerStep) {
  // The fp32 master weights step on `main_grad.float()` of the rank's shard: 4 bytes per parameter over
  // the optimizer's shard, held while the step runs, not all step; none with fp32 gradients or an fp32
  // model (whose optimizer has no master weights).
  StateFormat f = format(Precision::Bf16, 1, 8);
  f.grad_reduce_in_fp32 = false;
  const StaticMemory m = static_memory({kParameters, 0, 0, 0}, f);
  EXPECT_EQ(m.optimizer_step_working.count(), 4 * kParameters / 8);
  EXPECT_EQ(m.during_optimizer_step(), m.total() + m.optimizer_step_working);
  f.zero = 0;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer_step_working.count(), 4 * kParameters);
  f.grad_reduce_in_fp32 = true;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer_step_working.count(), 0);
  StateFormat fp32 = format(Precision::Fp32, 0, 8);
  fp32.dtype_bytes = 4;
  fp32.grad_reduce_in_fp32 = false;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, fp32).optimizer_step_working.count(), 0);
}

TEST(ModelStates, ThePrecisionAwareOptimizerKeepsRemaindersAndNoGradientCopy) {
  // Megatron-Core hands FusedAdam the bf16 weight's fp32 master as its low 16 bits (2 bytes) and the
  // bf16 gradient shard as it is: Adam's fp32 moments (8) with the remainders, 10 bytes per parameter
  // of the shard instead of 12, and no fp32 gradient copy during the step.
  StateFormat f = format(Precision::Bf16, 1, 8);
  f.grad_reduce_in_fp32 = false;
  f.precision_aware_optimizer = true;
  StaticMemory m = static_memory({kParameters, 0, 0, 0}, f);
  EXPECT_EQ(m.optimizer.count(), 10 * kParameters / 8);
  EXPECT_EQ(m.optimizer_step_working.count(), 0);
  EXPECT_EQ(m.gradients.count(), 2 * kParameters);
  // bf16 moments: 2 + 2 + 2; FP8 moments (uint8 with a scale): 2 + 1 + 1.
  f.exp_avg_dtype = f.exp_avg_sq_dtype = plan::StateDtype::Bf16;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer.count(), 6 * kParameters / 8);
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer_step_working.count(), 0);
  f.exp_avg_dtype = f.exp_avg_sq_dtype = plan::StateDtype::Fp8;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer.count(), 4 * kParameters / 8);
  // The step unscales FP8 (and fp16) moments into fp32 copies: 4 bytes each while it runs.
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer_step_working.count(), 8 * kParameters / 8);
  // An fp16 model's master weights stay whole (remainders are bf16's): 4 + 1 + 1.
  f.precision = Precision::Fp16;
  EXPECT_EQ(static_memory({kParameters, 0, 0, 0}, f).optimizer.count(), 6 * kParameters / 8);
  // Under an FP8 recipe Megatron-Core keeps its own fp32 master weights and steps them on the
  // gradient's fp32 copy; only the moments shrink.
  f.precision = Precision::Fp8;
  f.exp_avg_dtype = f.exp_avg_sq_dtype = plan::StateDtype::Fp32;
  m = static_memory({kParameters, 0, 0, 0}, f);
  EXPECT_EQ(m.optimizer.count(), 12 * kParameters / 8);
  EXPECT_EQ(m.optimizer_step_working.count(), 4 * kParameters / 8);
}

TEST(ModelStates, MomentDtypesNeedThePrecisionAwareOptimizer) {
  const auto cluster = testing::pcie_box(1);
  const auto model = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 256, heads: 4, ffn: 512, seq_len: 128, vocab: 1024 }\n");
  const auto fails_at = [&](const std::string& plan_text, const std::string& field, const std::string& line) {
    try {
      (void)testing::plan_yaml(plan_text, cluster, model);
      ADD_FAILURE() << plan_text;
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(line), std::string::npos) << e.what();
    }
  };
  fails_at("precision: bf16\nexp_avg_sq_dtype: bf16\n", "exp_avg_sq_dtype", "plan.yaml:2");
  fails_at("optimizer: muon\nprecision_aware_optimizer: true\n", "precision_aware_optimizer", "plan.yaml:2");
  fails_at("precision_aware_optimizer: true\nexp_avg_dtype: int8\n", "exp_avg_dtype", "plan.yaml:2");
  const plan::Plan p = testing::plan_yaml("use_precision_aware_optimizer: true\nexp_avg_dtype: bf16\n", cluster, model);
  EXPECT_TRUE(p.precision_aware_optimizer);
  EXPECT_EQ(p.exp_avg_dtype, plan::StateDtype::Bf16);
  EXPECT_EQ(p.exp_avg_sq_dtype, plan::StateDtype::Fp32);
}

TEST(ModelStates, ZeroThreeShardsEverythingAndHoldsTwoGatheredLayers) {
  // (2 + 2 + 12) bytes per parameter over the data-parallel group, with 16-bit gradients; plus two
  // gathered layers' weights and one layer's whole gradient.
  StateFormat f = format(Precision::Bf16, 3, 8);
  f.grad_reduce_in_fp32 = false;
  constexpr std::int64_t kLayer = 50'000'000;
  const StaticMemory m = static_memory({kParameters, 0, kLayer, 0}, f);
  EXPECT_EQ(m.weights.count(), 2 * kParameters / 8 + 2 * 2 * kLayer);
  EXPECT_EQ(m.gradients.count(), 2 * kParameters / 8 + 2 * kLayer);
  EXPECT_EQ(m.optimizer.count(), 12 * kParameters / 8);
  EXPECT_EQ(m.weights.count() + m.gradients.count() + m.optimizer.count(), (2 + 2 + 12) * kParameters / 8 + 6 * kLayer);
}

TEST(ModelStates, ZeroThreesCollectiveStreamsKeepTheirOwnPools) {
  // The all-gather stream's pool holds the two gathered layers (bf16, 2 x 2 bytes per parameter), the
  // reduce-scatter stream's one layer's gradient in the reduce dtype (fp32, 4): 8 bytes per parameter
  // of the largest layer beyond the context and the data-parallel communicator.
  StateFormat f = format(Precision::Bf16, 3, 8);
  constexpr std::int64_t kLayer = 50'000'000;
  const StaticMemory m = static_memory({kParameters, 0, kLayer, 0}, f);
  const Bytes without_pools = reserved_memory(f.tensor, f.pipeline, f.data);
  EXPECT_EQ(m.reserved.count() - without_pools.count(), (2 * 2 + 4) * kLayer);
  // With FP8 weights gathered (1 byte each) and 16-bit reduction: 2 x 1 + 2.
  f.precision = Precision::Fp8;
  f.fp8_param_gather = true;
  f.grad_reduce_in_fp32 = false;
  EXPECT_EQ(static_memory({kParameters, 0, kLayer, 0}, f).reserved.count() - without_pools.count(), (2 * 1 + 2) * kLayer);
  // No sharded weights, or no replicas to shard them over: no collective streams' pools.
  f.zero = 2;
  EXPECT_EQ(static_memory({kParameters, 0, kLayer, 0}, f).reserved, without_pools);
  f.zero = 3;
  f.data = 1;
  EXPECT_EQ(static_memory({kParameters, 0, kLayer, 0}, f).reserved, reserved_memory(f.tensor, f.pipeline, 1));
}

/// The bytes of each collective kind on stage 0's stream.
std::int64_t collective_bytes(const schedule::Program& program, schedule::OpKind kind) {
  std::int64_t total = 0;
  for (const schedule::Op& op : program.streams.front()) {
    if (op.kind == kind) total += op.bytes.count();
  }
  return total;
}

TEST(ModelStates, DataParallelTrafficFollowsTheFormats) {
  const auto cluster = testing::h100_node(4);
  const auto model = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 256, heads: 4, ffn: 512, seq_len: 128, vocab: 1024 }\n");
  std::int64_t parameters = 0;
  for (const auto& layer : model.layers) parameters += layer.parameters;
  const auto build = [&](const std::string& extra) {
    const plan::Plan p = testing::plan_yaml("parallelism: { data: 4 }\nzero: 1\nbatch: { global: 4 }\n" + extra,
                                            cluster, model);
    schedule::GradientSync sync;
    sync.gradient_bytes = schedule::chunk_gradient_split(model, p).dense;
    sync.bucket_size = Bytes::gib(1);
    return schedule::plan_program(model, p, sync);
  };
  using schedule::OpKind;
  // Megatron-LM's default: fp32 gradients reduce-scattered, 16-bit weights gathered.
  const schedule::Program fp32 = build("");
  EXPECT_EQ(collective_bytes(fp32, OpKind::ReduceScatter), 4 * parameters);
  EXPECT_EQ(collective_bytes(fp32, OpKind::AllGather), 2 * parameters);
  // 16-bit gradients: half the reduction; FP8 weights: one byte per parameter gathered.
  const schedule::Program narrow =
      build("grad_reduce_in_fp32: false\nprecision: fp8\nfp8_param_gather: true\n");
  EXPECT_EQ(collective_bytes(narrow, OpKind::ReduceScatter), 2 * parameters);
  EXPECT_EQ(collective_bytes(narrow, OpKind::AllGather), parameters);
}

TEST(ModelStates, ZeroThreeGathersEachLayerBeforeItsPassesAndReduceScattersItsGradients) {
  const auto cluster = testing::h100_node(4);
  const auto model = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 256, heads: 4, ffn: 512, seq_len: 128, vocab: 1024 }\n");
  const plan::Plan p = testing::plan_yaml("parallelism: { data: 4 }\nzero: 3\nbatch: { global: 8 }\n", cluster, model);
  schedule::GradientSync sync;
  sync.gradient_bytes = schedule::chunk_gradient_split(model, p).dense;
  const schedule::Program program = schedule::plan_program(model, p, sync);
  // Every layer's weights (16-bit) before each of the two microbatches' forwards and backwards, and
  // its fp32 gradients once per backward; all beside the passes; no step-end sync.
  std::int64_t gathered = 0, reduced = 0, parameters = 0;
  for (const auto& layer : model.layers) parameters += layer.parameters;
  for (const schedule::Op& op : program.streams.front()) {
    if (!schedule::is_collective(op.kind)) continue;
    EXPECT_EQ(op.stream, schedule::CommStream::Overlapped);
    EXPECT_TRUE(op.group == plan::Axis::Data);
    (op.kind == schedule::OpKind::AllGather ? gathered : reduced) += op.bytes.count() * op.count;
  }
  EXPECT_EQ(gathered, 2 * 2 * 2 * parameters);  // microbatches x passes x bytes
  EXPECT_EQ(reduced, 2 * 4 * parameters);
  EXPECT_EQ(program.streams.front().back().kind, schedule::OpKind::OptimizerStep);
  // The engine runs them over the data-parallel group's links.
  const auto prediction = simulate(cluster, model, p);
  EXPECT_GT(prediction.report.step_time_s, 0.0);
  EngineOptions unfolded;
  unfolded.fold_replicas = false;
  EXPECT_THROW((void)simulate(cluster, model, p, unfolded), std::invalid_argument);
}

TEST(ModelStates, HybridShardingShardsWithinAGroupAndAllReducesAcrossGroups) {
  // HSDP, 8 GPUs in 2 groups of 4: states (2 + 2 + 12) bytes per parameter over 4 ranks; each layer
  // gathered and reduce-scattered within the group, its reduced quarter all-reduced across the groups.
  StateFormat f = format(Precision::Bf16, 3, 4);
  f.grad_reduce_in_fp32 = false;
  const StaticMemory m = static_memory({kParameters, 0, 0, 0}, f);
  EXPECT_EQ(m.weights.count() + m.gradients.count() + m.optimizer.count(), (2 + 2 + 12) * kParameters / 4);
  const auto cluster = testing::h100_node(8);
  const auto model = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 256, heads: 4, ffn: 512, seq_len: 128, vocab: 1024 }\n");
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { data: 8 }\nzero: 3\nshard_groups: 2\nbatch: { global: 8 }\ngrad_reduce_in_fp32: false\n",
      cluster, model);
  EXPECT_EQ(state_format(p, model.dtype_bytes).data, 4);
  schedule::GradientSync sync;
  sync.gradient_bytes = schedule::chunk_gradient_split(model, p).dense;
  const schedule::Program program = schedule::plan_program(model, p, sync);
  std::int64_t gathered = 0, scattered = 0, across = 0, parameters = 0;
  for (const auto& layer : model.layers) parameters += layer.parameters;
  for (const schedule::Op& op : program.streams.front()) {
    if (!schedule::is_collective(op.kind)) continue;
    const std::int64_t bytes = op.bytes.count() * op.count;
    if (op.kind == schedule::OpKind::AllReduce) {
      EXPECT_TRUE(op.group == plan::Axis::DataReplica);
      across += bytes;
    } else {
      EXPECT_TRUE(op.group == plan::Axis::DataShard);
      (op.kind == schedule::OpKind::AllGather ? gathered : scattered) += bytes;
    }
  }
  EXPECT_EQ(gathered, 2 * 2 * parameters);  // one microbatch: forward and backward, 2 bytes each
  EXPECT_EQ(scattered, 2 * parameters);
  // Each layer's reduced quarter, rounded down per layer.
  std::int64_t quarters = 0;
  for (const auto& layer : model.layers) quarters += layer.parameters * 2 / 4;
  EXPECT_EQ(across, quarters);
  EXPECT_GT(simulate(cluster, model, p).report.step_time_s, 0.0);
  // ZeRO 1 in two groups: the bucket's quarter all-reduced after its reduce-scatter.
  const plan::Plan z1 = testing::plan_yaml(
      "parallelism: { data: 8 }\nzero: 1\nshard_groups: 2\nbatch: { global: 8 }\ngrad_reduce_in_fp32: false\n",
      cluster, model);
  schedule::GradientSync sync1;
  sync1.gradient_bytes = schedule::chunk_gradient_split(model, z1).dense;
  sync1.bucket_size = Bytes::gib(1);
  const schedule::Program one = schedule::plan_program(model, z1, sync1);
  EXPECT_EQ(collective_bytes(one, schedule::OpKind::ReduceScatter), 2 * parameters);
  EXPECT_EQ(collective_bytes(one, schedule::OpKind::AllReduce), 2 * parameters / 4);
  EXPECT_GT(simulate(cluster, model, z1).report.step_time_s, 0.0);
}

TEST(ModelStates, Fp8WeightsNeedAnFp8Precision) {
  const auto cluster = testing::pcie_box(1);
  const auto model = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 256, heads: 4, ffn: 512, seq_len: 128, vocab: 1024 }\n");
  try {
    (void)testing::plan_yaml("precision: bf16\nfp8_param_gather: true\n", cluster, model);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("fp8_param_gather"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("plan.yaml:2"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace mpsim::engine
