// Activation offloading in the cost model: the offloaded blocks' stash leaves the GPU, and a pass
// waits for the copies only beyond what its blocks hide (the closed form of offload_stall).
#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/route_cache.h"

namespace mpsim::engine {
namespace {

TEST(ActivationOffload, StallIsTheCopiesBeyondThePassLessItsFirstAndLastBlocks) {
  const BytesPerSec ten = BytesPerSec::gigabytes_per_sec(10);
  // 10 GB at 10 GB/s: 1 s of copies; a 1 s pass over 10 blocks hides 0.8 s of them.
  EXPECT_EQ(offload_stall(Bytes::bytes(10'000'000'000), ten, TimeNs::seconds(1), 10), TimeNs::ms(200));
  // Copies no slower than the blocks: nothing shows.
  EXPECT_EQ(offload_stall(Bytes::bytes(1'000'000'000), ten, TimeNs::seconds(1), 10), TimeNs{});
  EXPECT_EQ(offload_stall(Bytes{}, ten, TimeNs::seconds(1), 10), TimeNs{});
}

// Four identical blocks with profiled times and a 4 GiB stash each, on one DGX H100 GPU.
model::Model four_blocks() {
  return testing::model_yaml(
      "model:\n  layers:\n"
      "    - { name: block, kind: transformer, repeat: 4, forward_time: \"40 ms\", backward_input_time: \"40 ms\",\n"
      "        backward_weight_time: \"40 ms\", activation_bytes: \"4 GiB\", output_bytes: \"1 MiB\", params: 1000 }\n");
}

ChunkCost offload_chunk_of(const topology::Cluster& node, const model::Model& model, int offloaded) {
  const plan::Plan p = testing::plan_yaml(
      fmt::format("parallelism: {{ data: 8 }}\nbatch: {{ global: 8, micro: 1 }}\nactivation_offload_layers: {}\n",
                  offloaded),
      node, model);
  return build_cost_model(node, model, p, plan::Layout(p)).ranks.front().chunks.front();
}

TEST(ActivationOffload, OffloadedBlocksLeaveTheStashAndTheForwardWaitsForSlowCopies) {
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const model::Model model = four_blocks();
  const ChunkCost kept = offload_chunk_of(node, model, 0);
  const ChunkCost two = offload_chunk_of(node, model, 2);
  const Bytes offloaded = Bytes::gib(8);
  EXPECT_EQ(kept.stashed - two.stashed, offloaded);
  // 8 GiB over the GPU's PCIe path to its host (a DGX H100's Gen5 x16), against 160 ms of forward
  // of which (4 - 2) / 4 hide copies: the forward waits for the rest. The backward (320 ms) hides them.
  SharedRoutes routes(node);
  const BytesPerSec host = host_bandwidth(node, routes, node.gpus().front());
  EXPECT_GT(host.in_bytes_per_sec(), 0);
  const TimeNs copies = transfer_time(offloaded, host);
  ASSERT_GT(copies, TimeNs::ms(80));
  EXPECT_EQ(two.forward, kept.forward + (copies - TimeNs::ms(80)));
  EXPECT_EQ(two.backward, kept.backward);
}

TEST(ActivationOffload, MegatronsRulesAreChecked) {
  const topology::Cluster node = topology::load_topology_file(testing::repo_path("topologies/dgx-h100.yaml"));
  const model::Model model = four_blocks();
  const auto error = [&](const std::string& yaml) {
    try {
      (void)testing::plan_yaml(yaml, node, model);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_NE(error("parallelism: { pipeline: 2, data: 4 }\nactivation_offload_layers: 1\n").find("needs pipeline 1"),
            std::string::npos);
  EXPECT_NE(error("parallelism: { data: 8 }\nrecompute: full\nactivation_offload_layers: 1\n")
                .find("does not combine with recomputation"),
            std::string::npos);
  EXPECT_NE(error("parallelism: { data: 8 }\nactivation_offload_layers: 4\n").find("the last stays on the GPU"),
            std::string::npos);
  EXPECT_EQ(error("parallelism: { data: 8 }\ncpu_offloading_num_layers: 3\n"), "<no error>");
}

}  // namespace
}  // namespace mpsim::engine
