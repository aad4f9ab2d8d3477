// The topology a profile writes loads with the project's own loader, and carries the measured numbers.
#include "executor/profile/calibrated_topology.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include <gtest/gtest.h>

#include "sim/topology/route_table.h"
#include "sim/topology/topology_loader.h"

namespace mpsim::executor::profile {
namespace {

ProfileResult two_rank_result() {
  ProfileResult r;
  r.backend = "cpu";
  r.ranks = 2;
  r.gemms.push_back({{512, 512, 512, Transpose::No, Transpose::No, "qkv", 1}, 51.25e9});
  r.gemm_flops_per_s = 51.25e9;
  r.memory_bandwidth = 9.5e9;
  LinkMeasurement link;
  link.rank_a = 0;
  link.rank_b = 1;
  link.samples = {{4, 1.5e-6}, {1 << 20, 1.5e-6 + (1 << 20) / 6.25e9}};
  link.fit = {1.5e-6, 6.25e9, 0};
  r.links.push_back(link);
  r.link = link.fit;
  r.allreduce.push_back({1 << 20, 3e-4, (1 << 20) / 3e-4, (1 << 20) / 3e-4});
  return r;
}

std::filesystem::path scratch() {
  return std::filesystem::temp_directory_path() / ("mpsim-profile-test-" + std::to_string(::getpid()));
}

/// Removes the scratch folder when the tests of this process are done.
class RemoveScratch : public ::testing::Environment {
 public:
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(scratch(), ignored);
  }
};
[[maybe_unused]] const auto* const remove_scratch = ::testing::AddGlobalTestEnvironment(new RemoveScratch);

std::filesystem::path write(const std::string& name, const std::string& text) {
  const auto dir = scratch();
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path;
}

TopologyHeader header() {
  TopologyHeader h;
  h.name = "test \"box\"";
  h.command = "mpsim profile --ranks 2 -o x.yaml";
  h.host = "box";
  h.utc_time = "2026-01-01T00:00:00Z";
  h.memory_bytes = 8LL << 30;
  return h;
}

TEST(CalibratedTopology, LoadsWithTheMeasuredNumbers) {
  const std::string yaml = calibrated_topology_yaml(two_rank_result(), header());
  const topology::Cluster cluster = topology::load_topology_file(write("two.yaml", yaml));
  ASSERT_EQ(cluster.gpus().size(), 2u);
  const topology::GpuKind& gpu = cluster.gpu_kind_of(cluster.gpus()[0]);
  EXPECT_NEAR(gpu.peak_for(topology::DType::Fp32)->base(), 51.25e9, 1e3);
  EXPECT_EQ(gpu.matmul_efficiency, 1.0);
  EXPECT_NEAR(gpu.memory_bandwidth.base(), 9.5e9, 1e3);
  EXPECT_EQ(gpu.memory.count(), 8LL << 30);
  // Short form: a transfer between the two takes exactly latency + bytes / bandwidth.
  const auto route = topology::find_route(cluster, cluster.gpus()[0], cluster.gpus()[1]);
  ASSERT_TRUE(route.has_value());
  EXPECT_NEAR(route->bandwidth.base(), 6.25e9, 1e3);
  EXPECT_EQ(route->latency.base(), 1500);
  // The raw measurements are kept as comments.
  EXPECT_NE(yaml.find("# ping-pong rank 0 <-> rank 1"), std::string::npos);
  EXPECT_NE(yaml.find("# all-reduce over 2 ranks"), std::string::npos);
  EXPECT_NE(yaml.find("mpsim profile --ranks 2"), std::string::npos);
}

TEST(CalibratedTopology, OneRankHasNoIntraNodeLink) {
  ProfileResult r = two_rank_result();
  r.ranks = 1;
  r.links.clear();
  r.allreduce.clear();
  r.link = {};
  const std::string yaml = calibrated_topology_yaml(r, header());
  EXPECT_EQ(yaml.find("intra_node"), std::string::npos);
  const topology::Cluster cluster = topology::load_topology_file(write("one.yaml", yaml));
  EXPECT_EQ(cluster.gpus().size(), 1u);
}

TEST(CalibratedTopology, FastCudaLinksAreAnNvSwitch) {
  ProfileResult r = two_rank_result();
  r.backend = "cuda";
  r.gemm_flops_per_s = 45e12;
  r.link = {2e-6, 350e9, 0};
  const std::string yaml = calibrated_topology_yaml(r, header());
  EXPECT_NE(yaml.find("kind: nvswitch"), std::string::npos);
  EXPECT_NE(yaml.find("45.0000 TFLOP/s"), std::string::npos);
  const topology::Cluster cluster = topology::load_topology_file(write("cuda.yaml", yaml));
  const auto route = topology::find_route(cluster, cluster.gpus()[0], cluster.gpus()[1]);
  ASSERT_TRUE(route.has_value());
  EXPECT_NEAR(route->bandwidth.base(), 350e9, 1e3);
  EXPECT_EQ(route->latency.base(), 2000);
}

}  // namespace
}  // namespace mpsim::executor::profile
