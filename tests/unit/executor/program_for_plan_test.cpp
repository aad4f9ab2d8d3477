// The program each executor rank runs under uneven data-parallel shares (replica_microbatches): the
// schedule of its own replica's count, whose gradient collectives are those of every other replica,
// op for op, so that the replicas' all-reduces pair up although their passes differ in number.
#include "executor/interpreter/program_for_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "sim/core/yaml_field.h"
#include "sim/model/model_loader.h"
#include "sim/plan/plan_check.h"
#include "sim/plan/plan_loader.h"
#include "sim/plan/replica_share.h"
#include "sim/schedule/program.h"
#include "sim/schedule/validate.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::executor {
namespace {

std::string repo_path(const std::string& relative) { return std::string(MPSIM_SOURCE_DIR) + "/" + relative; }

/// cpu-gpt-tiny on 4 loopback ranks: pipeline 2 x data 2, micro batch 1, global batch 8 (4 microbatches a
/// replica when even), with `extra` appended to the plan.
struct Job {
  model::Model model;
  plan::Plan plan;
};
Job job(const std::string& schedule, const std::string& extra) {
  Job j{model::load_model_file(repo_path("configs/models/cpu-gpt-tiny.yaml")), {}};
  const topology::Cluster cluster = topology::load_topology_file(repo_path("tests/integration/executor/loopback.yaml"));
  const std::string yaml = "parallelism: { tensor: 1, pipeline: 2, data: 2 }\nbatch: { global: 8, micro: 1 }\nschedule: " +
                           schedule + "\n" + extra;
  j.plan = plan::resolve_plan(plan::load_plan_spec(YamlDocument::parse(yaml, "plan.yaml").root()), cluster, j.model);
  return j;
}

schedule::Program program_of(const Job& j, int replica) {
  return program_for_plan(j.model, j.plan, schedule::chunk_gradient_split(j.model, j.plan), Bytes{}, replica);
}

int count(const schedule::Program& p, schedule::OpKind kind) {
  int n = 0;
  for (const auto& stream : p.streams) {
    for (const schedule::Op& op : stream) n += op.kind == kind ? 1 : 0;
  }
  return n;
}

/// A stream's gradient collectives (those of the gradient stream, not inside layers): kind, group, bytes.
std::vector<std::tuple<schedule::OpKind, plan::AxisSet, std::int64_t>> gradient_collectives(
    const std::vector<schedule::Op>& stream) {
  std::vector<std::tuple<schedule::OpKind, plan::AxisSet, std::int64_t>> out;
  for (const schedule::Op& op : stream) {
    if (schedule::is_collective(op.kind) && !schedule::is_in_layer(op.stream)) {
      out.emplace_back(op.kind, op.group, op.bytes.count());
    }
  }
  return out;
}

TEST(ProgramForPlan, EachReplicaRunsItsOwnShareAndTheirGradientCollectivesPairUp) {
  for (const char* kind : {"1f1b", "gpipe", "zb-h1"}) {
    for (const char* zero : {"zero: 0\n", "zero: 1\n"}) {
      SCOPED_TRACE(std::string(kind) + ", " + zero);
      const Job j = job(kind, std::string(zero) + "replica_microbatches: [6, 2]\n");
      ASSERT_TRUE(j.plan.uneven_shares());
      const schedule::Program first = program_of(j, 0);
      const schedule::Program second = program_of(j, 1);
      EXPECT_FALSE(schedule::validate(first).has_value());
      EXPECT_FALSE(schedule::validate(second).has_value());
      EXPECT_EQ(first.shape.microbatches, 6);
      EXPECT_EQ(second.shape.microbatches, 2);
      // A forward of each microbatch on each of the 2 pipeline ranks.
      const schedule::OpKind forward = schedule::OpKind::Forward;
      EXPECT_EQ(count(first, forward), 6 * 2);
      EXPECT_EQ(count(second, forward), 2 * 2);
      // The simulator's program of each replica class is built from the same plan.
      EXPECT_EQ(first.shape, schedule::shape_of(plan::replica_plan(j.plan, 0)));
      EXPECT_EQ(second.shape, schedule::shape_of(plan::replica_plan(j.plan, 1)));
      for (std::size_t rank = 0; rank < 2; ++rank) {
        const auto a = gradient_collectives(first.streams[rank]);
        EXPECT_FALSE(a.empty());
        EXPECT_EQ(a, gradient_collectives(second.streams[rank])) << "pipeline rank " << rank;
      }
    }
  }
}

TEST(ProgramForPlan, EvenSharesGiveEveryReplicaThePlansProgram) {
  const Job even = job("1f1b", "");
  const Job written = job("1f1b", "replica_microbatches: [4, 4]\n");
  const schedule::Program program = program_of(even, 0);
  EXPECT_EQ(program.shape.microbatches, 4);
  EXPECT_EQ(program_of(even, 1), program);
  EXPECT_EQ(program_of(written, 0), program);
  EXPECT_EQ(program_of(written, 1), program);
}

}  // namespace
}  // namespace mpsim::executor
