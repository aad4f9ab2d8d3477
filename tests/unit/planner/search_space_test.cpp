// The search space: its rules are resolve_plan()'s (the raw product filtered by resolve_plan() gives
// the same candidates), its axes follow the cluster and the model, and its order is fixed.
#include <algorithm>
#include <set>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "planner/search_space.h"
#include "tests/unit/planner/planner_test_support.h"

namespace mpsim::planner {
namespace {

using testing::short_cluster;
using testing::long_sequence;
using testing::shipped_model;
using testing::small_moe;

auto fields(const plan::PlanSpec& s) {
  return std::make_tuple(s.degrees[plan::Axis::Tensor], s.degrees[plan::Axis::Context], s.degrees[plan::Axis::Pipeline],
                         s.written(plan::Axis::Data).value_or(0), s.degrees[plan::Axis::Expert],
                         s.written(plan::Axis::ExpertTensor).value_or(0), s.virtual_stages, s.micro_batch,
                         s.microbatches.value_or(0), s.global_batch.value_or(0), s.schedule, s.recompute, s.zero,
                         s.placement, s.sequence_parallel, s.overlap_grad_reduce, s.overlap_param_gather,
                         s.overlap_tensor_comm, s.microbatch_group_size.value_or(0), s.active_microbatches.value_or(0));
}


std::vector<decltype(fields(plan::PlanSpec{}))> all_fields(const SearchSpace& space) {
  std::vector<decltype(fields(plan::PlanSpec{}))> out;
  for (const auto& s : space.candidates) out.push_back(fields(s));
  return out;
}

struct Case {
  const char* name;
  topology::Cluster cluster;
  model::Model model;
  int global_batch;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  out.push_back({"2x4 A100, gpt3-1.3b", short_cluster(2, 4), shipped_model("gpt3-1.3b"), 16});
  out.push_back({"1x8 A100, bert-large", short_cluster(1, 8), shipped_model("bert-large"), 32});
  out.push_back({"pcie box, 6 timed layers", engine::testing::pcie_box(4),
                 engine::testing::timed_layers(6, "2 ms", "2 ms", "1 ms"), 12});
  out.push_back({"2x2, t5-3b", short_cluster(2, 2), shipped_model("t5-3b"), 8});
  out.push_back({"1x8, small MoE", short_cluster(1, 8), small_moe(), 8});
  out.push_back({"1x8, 16k tokens", short_cluster(1, 8), long_sequence(), 8});
  return out;
}

TEST(SearchSpace, MirroredRulesAreResolvePlansRules) {
  for (const Case& c : cases()) {
    SearchSpaceOptions options;
    options.global_batch = c.global_batch;
    const SearchSpace mirrored = enumerate_search_space(c.cluster, c.model, options);
    options.rules = SpaceRules::Resolve;
    const SearchSpace resolved = enumerate_search_space(c.cluster, c.model, options);
    EXPECT_FALSE(mirrored.candidates.empty()) << c.name;
    EXPECT_EQ(all_fields(mirrored), all_fields(resolved)) << c.name;
    EXPECT_GT(resolved.invalid, 0) << c.name << ": the raw product should contain invalid plans";
  }
}

// DualPipe is searched only when named; its rules (even pipeline, even microbatches >= 2p, ZeRO 0-1)
// are the plan check's too.
TEST(SearchSpace, DualPipeWhenNamedFollowsResolvePlansRules) {
  const auto all = cases();
  for (const Case& c : {all[0], all[4]}) {
    SearchSpaceOptions options;
    options.global_batch = c.global_batch;
    EXPECT_FALSE(std::ranges::any_of(enumerate_search_space(c.cluster, c.model, options).candidates,
                                     [](const plan::PlanSpec& s) { return plan::is_bidirectional(s.schedule); }))
        << c.name << ": not searched by default";
    options.schedules = {plan::ScheduleKind::DualPipe};
    const SearchSpace mirrored = enumerate_search_space(c.cluster, c.model, options);
    options.rules = SpaceRules::Resolve;
    const SearchSpace resolved = enumerate_search_space(c.cluster, c.model, options);
    EXPECT_FALSE(mirrored.candidates.empty()) << c.name;
    EXPECT_EQ(all_fields(mirrored), all_fields(resolved)) << c.name;
    for (const auto& s : mirrored.candidates) {
      EXPECT_EQ(s.degrees[plan::Axis::Pipeline] % 2, 0) << c.name;
      EXPECT_EQ(*s.microbatches % 2, 0) << c.name;
      EXPECT_GE(*s.microbatches, 2 * s.degrees[plan::Axis::Pipeline]) << c.name;
      EXPECT_LE(s.zero, 1) << c.name;
    }
  }
}

TEST(SearchSpace, AxesFollowTheClusterAndTheModel) {
  const auto cluster = short_cluster(2, 4);
  const auto model = shipped_model("gpt3-1.3b");  // 16 heads, 24 layers
  SearchSpaceOptions options;
  options.global_batch = 16;
  const SearchSpace space = enumerate_search_space(cluster, model, options);
  EXPECT_EQ(space.tensor_degrees, (std::vector<int>{1, 2, 4}));
  for (const auto& s : space.candidates) {
    EXPECT_EQ(s.degrees[plan::Axis::Tensor] * s.degrees[plan::Axis::Pipeline] * *s.written(plan::Axis::Data), 8);
    EXPECT_EQ(s.micro_batch * *s.microbatches * *s.written(plan::Axis::Data), 16);
    EXPECT_TRUE(s.partition.empty());
    if (s.schedule == plan::ScheduleKind::Interleaved1F1B) {
      EXPECT_GE(s.degrees[plan::Axis::Pipeline], 2);
      EXPECT_EQ(24 % (s.degrees[plan::Axis::Pipeline] * s.virtual_stages), 0);
    } else if (plan::is_v_shaped(s.schedule)) {
      EXPECT_GE(s.degrees[plan::Axis::Pipeline], 2);
      EXPECT_EQ(s.virtual_stages, 2);
      // The V splits the layers evenly over 2p stages; DualPipe holds p stages twice.
      EXPECT_EQ(24 % plan::partition_stage_count(s.schedule, s.degrees[plan::Axis::Pipeline], 2), 0);
      EXPECT_GE(*s.microbatches, plan::minimum_microbatches(s.schedule, s.degrees[plan::Axis::Pipeline]));
    } else {
      EXPECT_EQ(s.virtual_stages, 1);
    }
    if (*s.written(plan::Axis::Data) == 1) {
      EXPECT_EQ(s.zero, 0);
    }
  }

  options.max_tensor = 2;
  EXPECT_EQ(enumerate_search_space(cluster, model, options).tensor_degrees, (std::vector<int>{1, 2}));

  // Without NVLink there is no tensor parallelism.
  EXPECT_EQ(enumerate_search_space(engine::testing::pcie_box(4), model, options).tensor_degrees,
            (std::vector<int>{1}));
}

TEST(SearchSpace, OptionsNarrowIt) {
  const auto cluster = short_cluster(1, 8);
  const auto model = shipped_model("gpt3-1.3b");
  SearchSpaceOptions options;
  options.global_batch = 16;
  options.schedules = {plan::ScheduleKind::OneFOneB, plan::ScheduleKind::ZbH1};
  options.recompute = {model::Recompute::None};
  options.zero = {0};
  options.placements = {plan::kMegatronPlacement};
  options.max_micro_batch = 2;
  const SearchSpace space = enumerate_search_space(cluster, model, options);
  ASSERT_FALSE(space.candidates.empty());
  for (const auto& s : space.candidates) {
    EXPECT_TRUE(s.schedule == plan::ScheduleKind::OneFOneB || s.schedule == plan::ScheduleKind::ZbH1);
    EXPECT_EQ(s.recompute, model::Recompute::None);
    EXPECT_EQ(s.zero, 0);
    EXPECT_LE(s.micro_batch, 2);
  }
  options.global_batch = 0;
  EXPECT_TRUE(enumerate_search_space(cluster, model, options).candidates.empty());
}

// Fixed degrees keep exactly the candidates of the free space that have them (tensor, pipeline, expert),
// in the same order; a fixed context degree also goes below the search's tokens-per-rank cut.
TEST(SearchSpace, OnlyDegreesKeepTheirCandidates) {
  const auto filtered = [](const SearchSpace& space, plan::Axis axis, const std::vector<int>& degrees) {
    SearchSpace out;
    for (const auto& s : space.candidates) {
      if (std::find(degrees.begin(), degrees.end(), s.degrees[axis]) != degrees.end()) out.candidates.push_back(s);
    }
    return all_fields(out);
  };
  SearchSpaceOptions options;
  options.global_batch = 16;
  options.recompute = {model::Recompute::None};
  const auto cluster = short_cluster(2, 4);
  const auto dense = shipped_model("gpt3-1.3b");
  const SearchSpace free = enumerate_search_space(cluster, dense, options);
  for (const auto& [axis, degrees] : std::vector<std::pair<plan::Axis, std::vector<int>>>{
           {plan::Axis::Tensor, {2}}, {plan::Axis::Pipeline, {1, 4}}}) {
    SearchSpaceOptions fixed = options;
    fixed.only_degrees[axis] = degrees;
    const auto kept = all_fields(enumerate_search_space(cluster, dense, fixed));
    EXPECT_FALSE(kept.empty());
    EXPECT_EQ(kept, filtered(free, axis, degrees)) << plan::short_name(axis);
  }
  options.global_batch = 8;
  const SearchSpace moe_free = enumerate_search_space(short_cluster(1, 8), small_moe(), options);
  SearchSpaceOptions expert = options;
  expert.only_degrees[plan::Axis::Expert] = {4};
  const auto kept = all_fields(enumerate_search_space(short_cluster(1, 8), small_moe(), expert));
  EXPECT_FALSE(kept.empty());
  EXPECT_EQ(kept, filtered(moe_free, plan::Axis::Expert, {4}));
  // gpt3-1.3b's 2048 tokens are under the 4096 per context rank the search keeps: fixed, context 2 runs.
  EXPECT_TRUE(filtered(free, plan::Axis::Context, {2}).empty());
  SearchSpaceOptions context = options;
  context.global_batch = 16;
  context.only_degrees[plan::Axis::Context] = {2};
  const SearchSpace two = enumerate_search_space(cluster, dense, context);
  ASSERT_FALSE(two.candidates.empty());
  for (const auto& s : two.candidates) EXPECT_EQ(s.degrees[plan::Axis::Context], 2);

  EXPECT_EQ(fixed_degree_error(plan::Axis::Tensor, 8, cluster, dense),
            "a tensor-parallel group stays within a node, and 8 does not divide its 4 GPUs");
  EXPECT_EQ(fixed_degree_error(plan::Axis::Expert, 3, short_cluster(1, 6), small_moe()),
            "3 does not divide the model's 8 experts");
  EXPECT_FALSE(fixed_degree_error(plan::Axis::Pipeline, 4, cluster, dense).has_value());
}

/// GPT-3 1.3B's space on one 8-GPU H100 node, without recomputation, and its size.
struct SmallSpace {
  model::Model model = shipped_model("gpt3-1.3b");
  SearchSpaceOptions options = [] {
    SearchSpaceOptions o;
    o.global_batch = 16;
    o.recompute = {model::Recompute::None};
    return o;
  }();
  [[nodiscard]] std::size_t size() const {
    return enumerate_search_space(short_cluster(1, 8, "h100-sxm"), model, options).candidates.size();
  }
};

TEST(SearchSpace, PrecisionsTheGpuRuns) {
  SmallSpace small;
  const auto& model = small.model;
  SearchSpaceOptions& options = small.options;
  const std::size_t own = small.size();
  options.precisions = {plan::Precision::Bf16, plan::Precision::Fp8};
  // H100 has an FP8 peak: every candidate twice, in list order; A100 has none: bf16 only.
  const SearchSpace h100 = enumerate_search_space(short_cluster(1, 8, "h100-sxm"), model, options);
  ASSERT_EQ(h100.candidates.size(), 2 * own);
  EXPECT_EQ(h100.candidates[0].precision, plan::Precision::Bf16);
  EXPECT_EQ(h100.candidates[1].precision, plan::Precision::Fp8);
  const SearchSpace a100 = enumerate_search_space(short_cluster(1, 8, "a100-80gb"), model, options);
  for (const auto& s : a100.candidates) EXPECT_EQ(s.precision, plan::Precision::Bf16);
  // The plans resolve with their precision.
  options.rules = SpaceRules::Resolve;
  EXPECT_EQ(enumerate_search_space(short_cluster(1, 8, "h100-sxm"), model, options).candidates.size(), 2 * own);
}

TEST(SearchSpace, AttentionKernelInEveryCandidate) {
  SmallSpace small;
  const auto& model = small.model;
  SearchSpaceOptions& options = small.options;
  const std::size_t unset = small.size();
  options.attention_kernel = topology::AttentionGeneration::Fa2;
  // Not an axis: the same candidates, each naming the generation, and each resolves with it.
  const SearchSpace fa2 = enumerate_search_space(short_cluster(1, 8, "h100-sxm"), model, options);
  ASSERT_EQ(fa2.candidates.size(), unset);
  for (const auto& s : fa2.candidates) EXPECT_EQ(s.attention_kernel, topology::AttentionGeneration::Fa2);
  options.rules = SpaceRules::Resolve;
  EXPECT_EQ(enumerate_search_space(short_cluster(1, 8, "h100-sxm"), model, options).candidates.size(), unset);
}

TEST(SearchSpace, OrderIsDeterministicAndWithoutDuplicates) {
  const auto cluster = short_cluster(2, 4);
  const auto model = shipped_model("gpt3-1.3b");
  SearchSpaceOptions options;
  options.global_batch = 16;
  const auto a = all_fields(enumerate_search_space(cluster, model, options));
  const auto b = all_fields(enumerate_search_space(cluster, model, options));
  EXPECT_EQ(a, b);
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

TEST(SearchSpace, ExpertContextSequenceParallelAndOverlapAxes) {
  SearchSpaceOptions options;
  options.global_batch = 8;
  // Experts: every divisor of 8 with expert_tensor 1 or t, folded into t x d.
  const auto moe = enumerate_search_space(short_cluster(1, 8), small_moe(), options);
  std::set<std::pair<int, int>> experts;
  bool sp_with_tensor = false, sp_without_tensor = false;
  for (const auto& s : moe.candidates) {
    experts.emplace(s.degrees[plan::Axis::Expert], s.written(plan::Axis::ExpertTensor).value_or(0));
    EXPECT_EQ((s.degrees[plan::Axis::Tensor] * s.written(plan::Axis::Data).value_or(1)) %
                  (s.degrees[plan::Axis::Expert] *
                   s.written(plan::Axis::ExpertTensor).value_or(s.degrees[plan::Axis::Tensor])),
              0);
    sp_with_tensor = sp_with_tensor || (s.sequence_parallel && s.degrees[plan::Axis::Tensor] > 1);
    sp_without_tensor = sp_without_tensor || (s.sequence_parallel && s.degrees[plan::Axis::Tensor] == 1);
    EXPECT_EQ(s.degrees[plan::Axis::Context], 1);  // 1024 tokens: no context shard of 4096
  }
  EXPECT_TRUE(experts.contains({8, 1}));
  EXPECT_TRUE(experts.contains({4, 2}));
  EXPECT_TRUE(sp_with_tensor);
  EXPECT_FALSE(sp_without_tensor);
  // Context: 16384 tokens give context 1, 2 and 4 (4096 tokens per rank at least).
  const auto longer = enumerate_search_space(short_cluster(1, 8), long_sequence(), options);
  std::set<int> contexts;
  for (const auto& s : longer.candidates) contexts.insert(s.degrees[plan::Axis::Context]);
  EXPECT_EQ(contexts, (std::set<int>{1, 2, 4}));
  // Overlap only where there is something to overlap.
  for (const auto& s : longer.candidates) {
    EXPECT_FALSE(s.degrees[plan::Axis::Tensor] == 1 && s.overlap_tensor_comm);
    EXPECT_FALSE(s.written(plan::Axis::Data).value_or(1) * s.degrees[plan::Axis::Context] == 1 &&
                 s.overlap_grad_reduce);
  }
}

TEST(SearchSpace, EverySchedulePresent) {
  EXPECT_EQ(all_schedule_kinds().size(), 12u);
  EXPECT_EQ(default_schedule_kinds().size(), 10u);
}

}  // namespace
}  // namespace mpsim::planner
