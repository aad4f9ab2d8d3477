// Which GPU a rank of the CUDA backend takes: its place among the ranks MPI puts on its node, one GPU
// each (NCCL refuses two ranks on one device), and a one-line error naming the counts and the fix
// when a node has more ranks than GPUs. Pure rules: they run on any machine.
#include "executor/backend/cuda/device_rules.h"

#include <gtest/gtest.h>

namespace mpsim::executor::cuda {
namespace {

TEST(DeviceRules, OneGpuPerRankOfTheNode) {
  EXPECT_EQ(device_for_rank({0, 8}, 8).device, 0);
  EXPECT_EQ(device_for_rank({7, 8}, 8).device, 7);
  EXPECT_EQ(device_for_rank({1, 2}, 8).device, 1);
  EXPECT_TRUE(device_for_rank({3, 4}, 4).error.empty());
}

TEST(DeviceRules, MoreRanksThanGpusIsAOneLineError) {
  const DeviceChoice two_on_one = device_for_rank({1, 2}, 1);
  EXPECT_EQ(two_on_one.device, -1);
  EXPECT_EQ(two_on_one.error,
            "this node runs 2 ranks but sees 1 CUDA device: NCCL needs one GPU per rank; start at most 1 ranks per "
            "node (mpirun --map-by ppr:1:node) or make more GPUs visible (CUDA_VISIBLE_DEVICES)");
  EXPECT_EQ(two_on_one.error.find('\n'), std::string::npos);
  EXPECT_NE(device_for_rank({0, 16}, 8).error.find("runs 16 ranks but sees 8 CUDA devices"), std::string::npos);
  EXPECT_EQ(device_for_rank({0, 1}, 0).error, "no CUDA device visible to this process");
}

}  // namespace
}  // namespace mpsim::executor::cuda
