// Which GPUs a job runs on: whole nodes, part of one node, or equal NVLink domains on racks whose
// GPU count does not divide the job.
#include <gtest/gtest.h>

#include "sim/topology/job_shape.h"
#include "tests/unit/sim/topology/topology_test_support.h"

namespace mpsim::topology {
namespace {

using testing::cluster_from;

TEST(JobShape, WholeNodesWhenTheyDivideTheJob) {
  const JobShape s = job_shape(64, 8);
  EXPECT_EQ(s.nodes, 8);
  EXPECT_EQ(s.gpus_per_node, 8);
}

TEST(JobShape, ASmallJobTakesTheFirstGpusOfOneNode) {
  const JobShape s = job_shape(8, 72);
  EXPECT_EQ(s.nodes, 1);
  EXPECT_EQ(s.gpus_per_node, 8);
}

TEST(JobShape, PowerOfTwoJobsRunAsEqualDomainsOfSeventyTwoGpuRacks) {
  // 256 = 4 x 64: every power-of-two group up to 64 stays in one rack.
  const JobShape s256 = job_shape(256, 72);
  EXPECT_EQ(s256.nodes, 4);
  EXPECT_EQ(s256.gpus_per_node, 64);
  const JobShape s128 = job_shape(128, 72);
  EXPECT_EQ(s128.nodes, 2);
  EXPECT_EQ(s128.gpus_per_node, 64);
  // 144 fills two racks.
  EXPECT_EQ(job_shape(144, 72).gpus_per_node, 72);
}

TEST(JobShape, FillingNodesInOrderWhenThatKeepsGroupsWhole) {
  // 12 GPUs of 8-GPU nodes: groups of up to 4 stay inside node 0 or node 1 either way.
  const JobShape s12 = job_shape(12, 8);
  EXPECT_EQ(s12.nodes, 2);
  EXPECT_EQ(s12.gpus_per_node, 8);
  // 97 GPUs have no group to keep: one full rack and 25 GPUs of a second.
  const JobShape s97 = job_shape(97, 72);
  EXPECT_EQ(s97.nodes, 2);
  EXPECT_EQ(s97.gpus_per_node, 72);
  // 96 GPUs of 72-GPU racks: groups of 32 need domains of 32 (a 72-GPU rack would split the second).
  EXPECT_EQ(job_shape(96, 72).gpus_per_node, 32);
}

TEST(JobShape, GpusPerNodeOverridesTheRule) {
  const JobShape s = job_shape(256, 72, 32);
  EXPECT_EQ(s.nodes, 8);
  EXPECT_EQ(s.gpus_per_node, 32);
  EXPECT_EQ(job_shape_error(256, 72, 48).value_or(""), "48 GPUs per node do not divide a job of 256 GPUs");
  EXPECT_EQ(job_shape_error(256, 72, 80).value_or(""), "GPUs per node must be between 1 and the node's 72");
  EXPECT_EQ(job_shape_error(0, 72, std::nullopt).value_or(""), "must be a positive number of GPUs");
  EXPECT_FALSE(job_shape_error(16, 72, 64).has_value());  // a job smaller than the domain: one node
}

TEST(JobShape, TheClusterKeepsTheFirstGpusOfEachNode) {
  Cluster c = cluster_from(R"(
cluster:
  nodes: 3
  gpus_per_node: 6
  gpu: h100-sxm5-80gb
  intra_node: { kind: nvswitch, bandwidth: "450 GB/s", latency: "1 us" }
  inter_node: { kind: infiniband, bandwidth: "400 Gb/s", latency: "5 us", nics_per_node: 6 }
)");
  c.keep_job_gpus(job_shape(12, 6, 4));
  ASSERT_EQ(c.gpus().size(), 12u);
  EXPECT_EQ(c.device(c.gpus()[3]).name, "node0/gpu3");
  EXPECT_EQ(c.device(c.gpus()[4]).name, "node1/gpu0");
  EXPECT_EQ(c.device(c.gpus()[11]).name, "node2/gpu3");
  EXPECT_EQ(c.gpus_of_node(1).size(), 4u);
  Cluster small = c;
  EXPECT_THROW(small.keep_job_gpus(JobShape{4, 4, 16}), std::invalid_argument);
}

}  // namespace
}  // namespace mpsim::topology
