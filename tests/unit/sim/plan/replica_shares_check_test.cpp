// replica_microbatches: read, checked against the plan's replicas and batch, written back, and refused
// with the file, line and field where it does not fit.
#include <gtest/gtest.h>

#include <string>

#include "plan_test_support.h"
#include "sim/plan/plan_json.h"
#include "sim/plan/replica_share.h"

namespace mpsim::plan::replica_shares_check {
namespace {

using testing::check_error;
using testing::repo_path;
using testing::spec_from;

constexpr const char* kP4d4 = "topologies/4x-p4d.yaml";        // 32 A100 40GB, 8 per NVSwitch node
constexpr const char* kMixed = "topologies/mixed-h100-a100.yaml";  // 2 DGX H100 then 2 DGX A100
constexpr const char* kGpt13b = "configs/models/gpt3-13b.yaml";
// Tensor 8 x pipeline 2 x data 2: 256 / (1 x 2) = 128 microbatches per replica, 256 in all.
constexpr const char* kBase = "parallelism: { tensor: 8, pipeline: 2, data: 2 }\nbatch: { global: 256, micro: 1 }\n";

Plan resolve(const std::string& yaml, const char* topology = kP4d4) {
  return resolve_plan(spec_from(yaml), topology::load_topology_file(repo_path(topology)),
                      model::load_model_file(repo_path(kGpt13b)));
}

TEST(ReplicaShares, ReadAndKeptByTheResolvedPlan) {
  const Plan p = resolve(std::string(kBase) + "replica_microbatches: [180, 76]\n");
  EXPECT_EQ(p.microbatches, 128);
  EXPECT_EQ(p.global_batch, 256);  // micro 1 x (180 + 76)
  EXPECT_EQ(p.replica_microbatches, (std::vector<int>{180, 76}));
  EXPECT_TRUE(p.uneven_shares());
  EXPECT_EQ(p.microbatches_of_replica(0), 180);
  EXPECT_EQ(p.microbatches_of_replica(1), 76);
  // Absent: every replica runs the plan's count.
  const Plan even = resolve(kBase);
  EXPECT_TRUE(even.replica_microbatches.empty());
  EXPECT_FALSE(even.uneven_shares());
  EXPECT_EQ(even.microbatches_of_replica(1), 128);
  // Given and even: the same as absent for the run.
  EXPECT_FALSE(resolve(std::string(kBase) + "replica_microbatches: [128, 128]\n").uneven_shares());
}

TEST(ReplicaShares, EachReplicasPlanAndItsPlaceInTheGlobalBatch) {
  const Plan p = resolve(std::string(kBase) + "replica_microbatches: [180, 76]\n");
  // Each replica's schedule is generated for its own count; the rest of the plan is the plan's.
  EXPECT_EQ(replica_plan(p, 0).microbatches, 180);
  EXPECT_EQ(replica_plan(p, 1).microbatches, 76);
  EXPECT_EQ(replica_plan(p, 1).replica_microbatches, p.replica_microbatches);
  EXPECT_EQ(replica_plan(p, 1).degrees, p.degrees);
  // Replica 1's microbatches follow replica 0's 180 in the global batch of 256, each weighing 1/256.
  EXPECT_EQ(first_microbatch_of_replica(p, 0), 0);
  EXPECT_EQ(first_microbatch_of_replica(p, 1), 180);
  EXPECT_EQ(step_microbatches(p), 256);
  // Even: replica d from d x 128, every replica's plan the plan itself.
  const Plan even = resolve(kBase);
  EXPECT_EQ(first_microbatch_of_replica(even, 1), 128);
  EXPECT_EQ(step_microbatches(even), 256);
  EXPECT_EQ(replica_plan(even, 1), even);
}

TEST(ReplicaShares, BadListsNameTheFileLineAndField) {
  const auto error = [](const std::string& shares) {
    return check_error(std::string(kBase) + "replica_microbatches: " + shares + "\n", kP4d4, kGpt13b);
  };
  // Line 3 of plan.yaml, the field named.
  const std::string short_list = error("[256]");
  EXPECT_NE(short_list.find("plan.yaml:3"), std::string::npos) << short_list;
  EXPECT_NE(short_list.find("field 'replica_microbatches'"), std::string::npos) << short_list;
  EXPECT_NE(short_list.find("lists 1 microbatch counts; the plan has 2 data-parallel replicas"), std::string::npos)
      << short_list;
  const std::string sum = error("[180, 70]");
  EXPECT_NE(sum.find("sums to 250; the replicas run microbatches 128 x data 2 = 256 in all"), std::string::npos) << sum;
  EXPECT_NE(sum.find("plan.yaml:3"), std::string::npos) << sum;
  const std::string zero = error("[256, 0]");
  EXPECT_NE(zero.find("plan.yaml:3"), std::string::npos) << zero;
  EXPECT_NE(zero.find("replica_microbatches[1]"), std::string::npos) << zero;
  const std::string negative = error("[257, -1]");
  EXPECT_NE(negative.find("replica_microbatches[1]"), std::string::npos) << negative;
  EXPECT_NE(error("[]").find("list each data-parallel replica's microbatches"), std::string::npos);
  EXPECT_NE(error("6").find("replica_microbatches"), std::string::npos);
}

TEST(ReplicaShares, UnevenSharesFollowTheSchedulesRulesPerReplica) {
  // ZeRO 3's gathers and expert all-to-alls span the replicas.
  const std::string zero3 = check_error(std::string(kBase) + "zero: 3\nreplica_microbatches: [180, 76]\n", kP4d4, kGpt13b);
  EXPECT_NE(zero3.find("do not combine with zero 3"), std::string::npos) << zero3;
  EXPECT_EQ(check_error(std::string(kBase) + "zero: 3\nreplica_microbatches: [128, 128]\n", kP4d4, kGpt13b), "<no error>");
  // A V schedule runs an even count of at least its minimum on each replica.
  const std::string v = check_error(
      "parallelism: { tensor: 8, pipeline: 2, data: 2 }\nbatch: { global: 16, micro: 1 }\nschedule: dualpipe\n"
      "replica_microbatches: [11, 5]\n",
      kP4d4, kGpt13b);
  EXPECT_NE(v.find("replica 0:"), std::string::npos) << v;
  // Interleaved 1F1B: each replica's count in Megatron's groups (pipeline 2: a last group of 1 deadlocks).
  const std::string interleaved = check_error(
      "parallelism: { tensor: 8, pipeline: 2, data: 2, virtual_stages: 2 }\nbatch: { global: 16, micro: 1 }\n"
      "replica_microbatches: [11, 5]\n",
      kP4d4, kGpt13b);
  EXPECT_NE(interleaved.find("replica 0: interleaved-1f1b"), std::string::npos) << interleaved;
  EXPECT_EQ(check_error("parallelism: { tensor: 8, pipeline: 2, data: 2, virtual_stages: 2 }\nbatch: { global: 16, "
                        "micro: 1 }\nreplica_microbatches: [12, 4]\n",
                        kP4d4, kGpt13b),
            "<no error>");
}

TEST(ReplicaShares, ReplicasMayRunOnDifferentKindsButAStageOfAReplicaMayNot) {
  // Placement tp-pp-dp: replica 0 on the two H100 nodes, replica 1 on the two A100 nodes.
  const std::string across = std::string(kBase) + "placement: tp-pp-dp\n";
  EXPECT_EQ(check_error(across, kMixed, kGpt13b), "<no error>");
  EXPECT_EQ(check_error(across + "replica_microbatches: [180, 76]\n", kMixed, kGpt13b), "<no error>");
  // ZeRO 3 spans the replicas, which run apart on different kinds.
  const std::string zero3 = check_error(across + "zero: 3\n", kMixed, kGpt13b);
  EXPECT_NE(zero3.find("replicas on different GPU kinds do not combine with zero 3"), std::string::npos) << zero3;
  // Tensor 8 x context 2 x data 2 with the context axis outside the data axis (tp-dp-cp-pp): context rank 1
  // is 16 GPUs on, on the A100 nodes, so each replica's one stage holds H100s and A100s.
  const std::string mixed_stage = check_error(
      "parallelism: { tensor: 8, context: 2, pipeline: 1, data: 2 }\nbatch: { global: 16, micro: 1 }\n"
      "placement: tp-dp-cp-pp\n",
      kMixed, kGpt13b);
  EXPECT_NE(mixed_stage.find("pipeline stage 0 would run on"), std::string::npos) << mixed_stage;
  EXPECT_NE(mixed_stage.find("in one data-parallel replica"), std::string::npos) << mixed_stage;
  EXPECT_NE(mixed_stage.find("replica_microbatches"), std::string::npos) << mixed_stage;
  EXPECT_NE(mixed_stage.find("field 'placement'"), std::string::npos) << mixed_stage;
}

TEST(ReplicaShares, WrittenAndReadBackAndOnlyWhereGiven) {
  const auto cluster = topology::load_topology_file(repo_path(kP4d4));
  const auto model = model::load_model_file(repo_path(kGpt13b));
  const Plan p = resolve(std::string(kBase) + "replica_microbatches: [180, 76]\n");
  const std::string yaml = write_plan_yaml(p);
  EXPECT_NE(yaml.find("replica_microbatches: [180, 76]\n"), std::string::npos) << yaml;
  EXPECT_EQ(resolve_plan(spec_from(yaml), cluster, model), p);
  EXPECT_EQ(plan_json(p)["replica_microbatches"], nlohmann::ordered_json::parse("[180, 76]"));
  EXPECT_EQ(resolve_plan(spec_from(plan_json(p).dump()), cluster, model), p);
  // A plan without the field writes none: its file and JSON are as before.
  const Plan even = resolve(kBase);
  EXPECT_EQ(write_plan_yaml(even).find("replica_microbatches"), std::string::npos);
  EXPECT_FALSE(plan_json(even).contains("replica_microbatches"));
}

}  // namespace
}  // namespace mpsim::plan::replica_shares_check
