// Peak memory without simulating: the planner's estimate equals the simulator's peak for every schedule
// kind, recomputation policy and ZeRO stage; the in-flight counts are the schedules' known ones; its
// static part equals sums worked out by hand from the model's shape.
#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "planner/candidate.h"
#include "planner/memory_model.h"
#include "planner/search.h"
#include "planner/unit_costs.h"
#include "sim/engine/cost_model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan_check.h"
#include "sim/schedule/passes.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::short_cluster;
using testing::shipped_model;

int max_forwarded(const CountVectors& vectors, int chunks) {
  int most = 0;
  for (const auto& v : vectors) {
    int x = 0;
    for (int c = 0; c < chunks; ++c) x += v[static_cast<std::size_t>(c)];
    most = std::max(most, x);
  }
  return most;
}

schedule::PipelineShape shape(int p, int m, plan::ScheduleKind kind, int v = 1) {
  schedule::PipelineShape s;
  s.stages = p;
  s.microbatches = m;
  s.chunks = v;
  s.kind = kind;
  s.microbatch_group_size = p;
  s.active_microbatches = p + 2;
  return s;
}

TEST(InFlight, KnownCountsPerSchedule) {
  using plan::ScheduleKind;
  for (const int p : {1, 2, 4, 5}) {
    for (const int m : {1, 3, 8, 12}) {
      const auto one_f = in_flight_vectors(shape(p, m, ScheduleKind::OneFOneB));
      const auto gpipe = in_flight_vectors(shape(p, m, ScheduleKind::GPipe));
      const auto zb1 = in_flight_vectors(shape(p, m, ScheduleKind::ZbH1));
      const auto zb2 = in_flight_vectors(shape(p, m, ScheduleKind::ZbH2));
      const auto sm = in_flight_vectors(shape(p, m, ScheduleKind::SageMakerInterleaved));
      for (int i = 0; i < p; ++i) {
        const auto r = static_cast<std::size_t>(i);
        EXPECT_EQ(max_forwarded(one_f[r], 1), std::min(p - i, m)) << "1f1b p " << p << " m " << m << " rank " << i;
        EXPECT_EQ(max_forwarded(gpipe[r], 1), m);
        EXPECT_EQ(max_forwarded(zb1[r], 1), std::min(p - i, m));
        EXPECT_EQ(max_forwarded(zb2[r], 1), std::min(2 * (p - i) - 1, m));
        EXPECT_LE(max_forwarded(sm[r], 1), std::min(p + 2, m));
      }
      // With p = 1 a backward is ready as soon as its forward ends, and backward comes first.
      if (p > 1) {
        EXPECT_EQ(max_forwarded(sm[0], 1), std::min(p + 2, m)) << "p " << p << " m " << m;
      }
    }
  }
}

TEST(StaticMemory, AsTheCostModelCountsIt) {
  const auto cluster = short_cluster(2, 4);
  const auto model = shipped_model("gpt3-1.3b");
  for (const int zero : {0, 1, 2, 3}) {
    for (const int pipeline : {1, 2, 4}) {
      plan::PlanSpec spec;
      spec.write(plan::Axis::Tensor, 2);
      spec.write(plan::Axis::Pipeline, pipeline);
      spec.global_batch = 16;
      spec.zero = zero;
      spec.grad_reduce_in_fp32 = pipeline != 2;  // both gradient formats
      spec.partition = plan::even_partition(24, pipeline);
      if (pipeline > 1) spec.partition[1] += 1;  // uneven on purpose
      const plan::Plan p = plan::resolve_plan(spec, cluster, model);
      const plan::Layout layout(p);
      const auto costs = engine::build_cost_model(cluster, model, p, layout);
      // The gradient buckets the executor sizes its collectives from are the cost model's.
      const auto gradient_bytes = schedule::chunk_gradient_split(model, p).dense;
      for (std::size_t r = 0; r < costs.ranks.size(); ++r) {
        for (std::size_t c = 0; c < costs.ranks[r].chunks.size(); ++c) {
          EXPECT_EQ(gradient_bytes[r][c], costs.ranks[r].chunks[c].gradient_bytes) << "rank " << r << " chunk " << c;
        }
      }
      for (const auto& rank : costs.ranks) {
        engine::RankParameters parameters;
        std::int64_t output_table = 0;
        bool holds_table = false;
        for (const auto& c : rank.chunks) {
          parameters.total += c.parameters;
          parameters.fp8 += c.fp8_parameters;
          parameters.expert += c.expert_parameters;
          parameters.largest_layer = std::max(parameters.largest_layer, c.largest_layer_parameters);
          output_table = std::max(output_table, c.output_table);
          holds_table = holds_table || c.holds_table;
        }
        // The last stage of a tied GPT keeps its own copy of the table (engine::tied_table_copy).
        parameters.tied_copy = engine::tied_table_copy(output_table, holds_table);
        EXPECT_EQ(engine::static_memory(parameters, engine::state_format(p, model.dtype_bytes)).total(),
                  rank.static_memory.total())
            << "zero " << zero << " pipeline " << pipeline;
      }
    }
  }
}

// Static memory worked out by hand, from the rules of docs/simulator.md ("Memory") and the parameter
// counts of sim/model/transformer.h, against what the planner's memory model gives: the expected values
// come from plain arithmetic, not from the functions the planner calls.
//
// The model: LLaMA-style, 4 blocks, hidden h = 256, 8 heads of 32 (as many K/V heads), SwiGLU MLP of
// width f = 512, vocabulary V = 1024, RMSNorm (a scale, h parameters), no biases, rotary positions (no
// table), an untied output head, bf16 weights (2 bytes).
constexpr std::int64_t kEmbedding = 262'144;  // the token table: V h = 1024 x 256
// A block: two norms 2 h = 512, attention's Q, K, V and output projections 4 h^2 = 262,144, the MLP's
// gate, up and down projections 3 h f = 393,216.
constexpr std::int64_t kBlock = 655'872;
constexpr std::int64_t kHead = 262'400;  // the final norm h = 256, the output matrix V h = 262,144
constexpr std::int64_t kParameters = 3'148'032;  // 262,144 + 4 x 655,872 + 262,400

model::Model hand_model() {
  return testing::model_yaml(
      "model: { family: llama, layers: 4, hidden: 256, heads: 8, ffn: 512, seq_len: 1024, vocab: 1024 }\n");
}

/// Reserved memory: 1.25 GiB of CUDA context and workspaces and 0.6 GiB per communicator (tensor,
/// pipeline and data groups of more than one GPU), rounded to the byte; 2^30 = 1,073,741,824.
constexpr std::int64_t kReservedOneGroup = 1'986'422'374;     // 1.85 x 2^30 = 1,986,422,374.4
constexpr std::int64_t kReservedTwoGroups = 2'630'667'469;    // 2.45 x 2^30 = 2,630,667,468.8
constexpr std::int64_t kReservedThreeGroups = 3'274'912'563;  // 3.05 x 2^30 = 3,274,912,563.2

struct HandCounted {
  std::int64_t weights, gradients, optimizer, reserved;
};

/// The planner's static memory of each pipeline rank of `spec`: the unit costs it partitions with, cut
/// by the spec's partition and summed per rank (rank_parameters), through the model-state rules.
std::vector<engine::StaticMemory> planner_static_memory(const topology::Cluster& cluster, const model::Model& model,
                                                        const plan::PlanSpec& spec) {
  const UnitCostModel units(cluster, model);
  const StageCosts costs = stage_costs(units.costs(unit_cost_key(spec)), spec.partition);
  std::vector<engine::StaticMemory> out;
  for (int r = 0; r < spec.degrees[plan::Axis::Pipeline]; ++r) {
    out.push_back(
        engine::static_memory(rank_parameters(spec, costs, r), engine::state_format(spec, model.dtype_bytes)));
  }
  return out;
}

plan::PlanSpec hand_spec(int tensor, int pipeline, int data, int zero, std::vector<int> partition) {
  plan::PlanSpec spec;
  spec.write(plan::Axis::Tensor, tensor);
  spec.write(plan::Axis::Pipeline, pipeline);
  spec.write(plan::Axis::Data, data);
  spec.global_batch = 16;
  spec.micro_batch = 1;
  spec.zero = zero;
  spec.partition = std::move(partition);
  return spec;
}

void expect_hand_counted(const topology::Cluster& cluster, const model::Model& model, const plan::PlanSpec& spec,
                         const std::vector<HandCounted>& expected, const std::string& name) {
  const auto got = planner_static_memory(cluster, model, spec);
  ASSERT_EQ(got.size(), expected.size()) << name;
  for (std::size_t r = 0; r < got.size(); ++r) {
    EXPECT_EQ(got[r].weights.count(), expected[r].weights) << name << ", pipeline rank " << r;
    EXPECT_EQ(got[r].gradients.count(), expected[r].gradients) << name << ", pipeline rank " << r;
    EXPECT_EQ(got[r].optimizer.count(), expected[r].optimizer) << name << ", pipeline rank " << r;
    EXPECT_EQ(got[r].reserved.count(), expected[r].reserved) << name << ", pipeline rank " << r;
  }
  // The same candidate in the planner's space: its estimate's static part is the peak rank's.
  PlannerOptions options;
  options.space.global_batch = 16;
  options.space.schedules = {plan::ScheduleKind::OneFOneB};
  options.space.recompute = {model::Recompute::None};
  options.space.zero = {spec.zero};
  options.space.placements = {plan::kMegatronPlacement};
  options.space.sequence_parallel = {false};
  options.space.overlap = {false};
  int found = 0;
  for (const Prepared& p : prepare_candidates(cluster, model, options)) {
    if (p.spec.degrees[plan::Axis::Tensor] != spec.degrees[plan::Axis::Tensor] ||
        p.spec.degrees[plan::Axis::Pipeline] != spec.degrees[plan::Axis::Pipeline] ||
        p.spec.micro_batch != spec.micro_batch || p.spec.partition != spec.partition) {
      continue;
    }
    const HandCounted& e = expected.at(static_cast<std::size_t>(p.estimate.peak_rank));
    EXPECT_EQ(p.estimate.static_memory.count(), e.weights + e.gradients + e.optimizer + e.reserved)
        << name << ": candidate " << p.id << ", peak on pipeline rank " << p.estimate.peak_rank;
    ++found;
  }
  EXPECT_EQ(found, 1) << name << ": the planner's space holds this plan once";
}

TEST(StaticMemory, HandCountedModel) {
  const auto model = hand_model();
  static_assert(kEmbedding + 4 * kBlock + kHead == kParameters);
  EXPECT_EQ(model.parameters(), kParameters);
}

TEST(StaticMemory, HandCountedWithoutSharding) {
  // Tensor 1, pipeline 1, data 8, ZeRO 0: every GPU holds all 3,148,032 parameters and their states.
  //   weights    2 B x 3,148,032 =  6,296,064   (bf16)
  //   gradients  4 B x 3,148,032 = 12,592,128   (Megatron's fp32 main gradients)
  //   optimizer 12 B x 3,148,032 = 37,776,384   (Adam: fp32 master weights, momentum, variance)
  //   reserved   1.25 GiB + 0.6 GiB for the data-parallel communicator
  expect_hand_counted(short_cluster(1, 8), hand_model(), hand_spec(1, 1, 8, 0, {0, 4}),
                      {{6'296'064, 12'592'128, 37'776'384, kReservedOneGroup}}, "no sharding");
}

TEST(StaticMemory, HandCountedDistributedOptimizer) {
  // As above with ZeRO 1 (Megatron's distributed optimizer): the optimizer state is sharded over the
  // 8 data-parallel ranks, 37,776,384 / 8 = 4,722,048; weights and gradients stay whole.
  expect_hand_counted(short_cluster(1, 8), hand_model(), hand_spec(1, 1, 8, 1, {0, 4}),
                      {{6'296'064, 12'592'128, 4'722'048, kReservedOneGroup}}, "ZeRO 1 over 8");
  // ZeRO 2 shards the gradients too: 12,592,128 / 8 = 1,574,016.
  expect_hand_counted(short_cluster(1, 8), hand_model(), hand_spec(1, 1, 8, 2, {0, 4}),
                      {{6'296'064, 1'574'016, 4'722'048, kReservedOneGroup}}, "ZeRO 2 over 8");
  // ZeRO 3 shards the weights, 6,296,064 / 8 = 787,008, and holds two whole layers gathered (the one
  // computing and the one prefetched; the largest is a block) and one block's whole gradient:
  //   weights   787,008 + 2 x 655,872 x 2 B = 787,008 + 2,623,488 = 3,410,496
  //   gradients 1,574,016 + 655,872 x 4 B = 1,574,016 + 2,623,488 = 4,197,504
  // and the collective streams' pools hold the same again, the gathered layers and the gradient:
  //   reserved  1,986,422,374 + 2,623,488 + 2,623,488 = 1,991,669,350
  expect_hand_counted(short_cluster(1, 8), hand_model(), hand_spec(1, 1, 8, 3, {0, 4}),
                      {{3'410'496, 4'197'504, 4'722'048, kReservedOneGroup + 5'246'976}}, "ZeRO 3 over 8");
}

TEST(StaticMemory, HandCountedPipelineStages) {
  // Tensor 1, pipeline 4 (one block a stage), data 2, ZeRO 1: the first stage also holds the
  // embedding, the last the output head, the middle two a block only. Optimizer state / 2.
  //   rank 0: 262,144 + 655,872 = 918,016 parameters: 1,836,032 / 3,672,064 / 11,016,192 / 2 = 5,508,096
  //   rank 1, 2: 655,872:                             1,311,744 / 2,623,488 /  7,870,464 / 2 = 3,935,232
  //   rank 3: 655,872 + 262,400 = 918,272:            1,836,544 / 3,673,088 / 11,019,264 / 2 = 5,509,632
  //   reserved: 1.25 GiB + 0.6 GiB each for the pipeline and the data-parallel communicators
  expect_hand_counted(short_cluster(1, 8), hand_model(), hand_spec(1, 4, 2, 1, {0, 1, 2, 3, 4}),
                      {{1'836'032, 3'672'064, 5'508'096, kReservedTwoGroups},
                       {1'311'744, 2'623'488, 3'935'232, kReservedTwoGroups},
                       {1'311'744, 2'623'488, 3'935'232, kReservedTwoGroups},
                       {1'836'544, 3'673'088, 5'509'632, kReservedTwoGroups}},
                      "pipeline 4");
}

TEST(StaticMemory, HandCountedTensorAndPipeline) {
  // Tensor 2, pipeline 2 (two blocks a stage), data 2, ZeRO 0. The cost model splits each layer's
  // parameters evenly over the tensor ranks: embedding 131,072, block 327,936, head 131,200.
  //   rank 0: 131,072 + 2 x 327,936 = 786,944:  1,573,888 / 3,147,776 / 9,443,328
  //   rank 1: 2 x 327,936 + 131,200 = 787,072:  1,574,144 / 3,148,288 / 9,444,864
  //   reserved: 1.25 GiB + 0.6 GiB each for the tensor, pipeline and data-parallel communicators
  expect_hand_counted(short_cluster(1, 8), hand_model(), hand_spec(2, 2, 2, 0, {0, 2, 4}),
                      {{1'573'888, 3'147'776, 9'443'328, kReservedThreeGroups},
                       {1'574'144, 3'148'288, 9'444'864, kReservedThreeGroups}},
                      "tensor 2, pipeline 2");
}

struct MemoryCase {
  const char* name;
  topology::Cluster cluster;
  model::Model model;
  int global_batch;
  plan::CrossEntropy cross_entropy = plan::CrossEntropy::Native;
  std::vector<model::Recompute> recompute = {};  ///< empty: the search's own
};

/// A sample of every (schedule, recompute, ZeRO) combination the space has, simulated.
void expect_estimates_equal_simulation(const MemoryCase& c, int per_combination) {
  PlannerOptions options;
  options.space.global_batch = c.global_batch;
  options.space.cross_entropy = c.cross_entropy;
  if (!c.recompute.empty()) options.space.recompute = c.recompute;
  const auto prepared = prepare_candidates(c.cluster, c.model, options);
  const Bytes capacity = gpu_capacity(c.cluster);
  std::map<std::tuple<plan::ScheduleKind, model::Recompute, int>, int> seen;
  int checked = 0;
  for (const Prepared& p : prepared) {
    if (p.estimate.peak_memory > capacity) continue;  // estimated only up to the static part
    int& n = seen[{p.spec.schedule, p.spec.recompute, p.spec.zero}];
    if (n >= per_combination || (p.id % 7) != 0) continue;
    ++n;
    const plan::Plan plan = plan::resolve_plan(p.spec, c.cluster, c.model);
    const auto prediction = engine::simulate(c.cluster, c.model, plan);
    EXPECT_EQ(p.estimate.peak_memory.count(), prediction.report.peak_memory_bytes)
        << c.name << ": candidate " << p.id << " " << plan::to_string(plan.schedule) << " t"
        << plan.degrees[plan::Axis::Tensor] << " p" << plan.degrees[plan::Axis::Pipeline] << " d"
        << plan.degrees[plan::Axis::Data] << " v" << plan.virtual_stages << " mb" << plan.micro_batch << " m"
        << plan.microbatches << " " << model::to_string(plan.recompute) << " zero " << plan.zero;
    ++checked;
  }
  EXPECT_GT(checked, 20) << c.name;
}

TEST(MemoryEstimate, EqualsTheSimulatedPeak) {
  expect_estimates_equal_simulation({"2x4 A100, gpt3-1.3b", short_cluster(2, 4), shipped_model("gpt3-1.3b"), 32}, 3);
  expect_estimates_equal_simulation({"1x8 A100, t5-3b", short_cluster(1, 8), shipped_model("t5-3b"), 16}, 2);
  expect_estimates_equal_simulation({"2x4 H100, small MoE", short_cluster(2, 4, "h100-sxm5-80gb"), testing::small_moe(), 16}, 2);
  expect_estimates_equal_simulation({"2x4 H100, 16k tokens", short_cluster(2, 4, "h100-sxm5-80gb"), testing::long_sequence(), 8}, 2);
  // PyTorch's loss makes the last stage's backward the peak of more plans (working_memory.h).
  expect_estimates_equal_simulation({"2x4 A100, gpt3-1.3b, pytorch loss", short_cluster(2, 4), shipped_model("gpt3-1.3b"),
                                     32, plan::CrossEntropy::Pytorch},
                                    3);
  // TorchTitan's per-op checkpointing (recompute: op), searched when asked for.
  expect_estimates_equal_simulation({"2x4 A100, gpt3-1.3b, per-op", short_cluster(2, 4), shipped_model("gpt3-1.3b"), 32,
                                     plan::CrossEntropy::Pytorch, {model::Recompute::Op}},
                                    6);
  expect_estimates_equal_simulation({"2x4 H100, small MoE, per-op", short_cluster(2, 4, "h100-sxm5-80gb"),
                                     testing::small_moe(), 16, plan::CrossEntropy::Native, {model::Recompute::Op}},
                                    6);
  std::mt19937 rng(11);
  expect_estimates_equal_simulation(
      {"pcie box, random timed layers", engine::testing::pcie_box(4), testing::random_timed_model(rng, 8), 16}, 3);
}

}  // namespace
}  // namespace mpsim::planner
