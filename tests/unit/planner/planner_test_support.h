#pragma once
/// Small clusters and models for planner tests: short-form topologies (2 x 4 GPUs and the like) and
/// models with profiled layer times, plus the shipped small models.
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "planner/search.h"
#include "tests/unit/sim/engine/engine_test_support.h"

namespace mpsim::planner::testing {

using engine::testing::cluster_yaml;
using engine::testing::model_yaml;
using engine::testing::repo_path;

/// `nodes` x `per_node` GPUs of `gpu` (a kind id or an inline mapping), NVSwitch inside a node,
/// InfiniBand between nodes.
inline topology::Cluster short_cluster(int nodes, int per_node, const std::string& gpu = "a100-80gb",
                                       const std::string& inter = "200 Gb/s", const std::string& intra = "300 GB/s") {
  return cluster_yaml(fmt::format(
      "cluster:\n  nodes: {}\n  gpus_per_node: {}\n  gpu: {}\n"
      "  intra_node: {{ kind: nvswitch, bandwidth: \"{}\", latency: \"2 us\" }}\n"
      "  inter_node: {{ kind: infiniband, bandwidth: \"{}\", latency: \"5 us\", nics_per_node: {} }}\n",
      nodes, per_node, gpu, intra, inter, per_node));
}

/// An A100-like GPU kind with `memory` of memory, written inline.
inline std::string a100_with_memory(const std::string& memory) {
  return fmt::format(
      "{{ name: big-a100, peak: {{ fp32: \"19.5 TFLOP/s\", bf16: \"312 TFLOP/s\", fp16: \"312 TFLOP/s\" }}, "
      "memory: \"{}\", memory_bandwidth: \"2039 GB/s\", nvlink: {{ links: 12, bandwidth_per_link: \"25 GB/s\" }}, "
      "matmul_efficiency: 0.68 }}",
      memory);
}

/// 2 x 4 GPUs where communication is nearly free: NVSwitch, PCIe and network an order of magnitude
/// beyond today's (GPU-to-NIC traffic crosses PCIe, so it must be fast too).
inline topology::Cluster fast_cluster() {
  return cluster_yaml(
      "cluster:\n  nodes: 2\n  gpus_per_node: 4\n"
      "  gpu: { name: fast-a100, peak: { fp32: \"19.5 TFLOP/s\", bf16: \"312 TFLOP/s\", fp16: \"312 TFLOP/s\" }, "
      "memory: \"80 GiB\", memory_bandwidth: \"2039 GB/s\", nvlink: { links: 12, bandwidth_per_link: \"250 GB/s\" }, "
      "pcie: { gen: 6, bandwidth: \"2000 GB/s\" }, matmul_efficiency: 0.68 }\n"
      "  intra_node: { kind: nvswitch, bandwidth: \"3000 GB/s\", latency: \"1 us\" }\n"
      "  inter_node: { kind: infiniband, bandwidth: \"16000 Gb/s\", latency: \"1 us\", nics_per_node: 4 }\n");
}

/// One node of 4 H100 then one of 4 A100 (node_templates), NVSwitch inside, 200 Gb/s InfiniBand between;
/// without `with_a100`, the H100 node alone.
inline topology::Cluster mixed_cluster(bool with_a100 = true) {
  const auto node = [](const char* gpu, const char* nvlink) {
    return fmt::format(
        "{{ gpu: {}, gpus: 4, nvswitches: 1, nics: {{ count: 4, bandwidth: \"200 Gb/s\", latency: \"2.5 us\" }},\n"
        "      links: [ {{ kind: nvlink, from: \"gpu*\", to: nvswitch0, bandwidth: \"{}\", latency: \"1 us\" }},\n"
        "               {{ kind: pcie, pairs: [[gpu0, nic0], [gpu1, nic1], [gpu2, nic2], [gpu3, nic3]], "
        "bandwidth: \"32 GB/s\" }} ] }}",
        gpu, nvlink);
  };
  return cluster_yaml(fmt::format("node_templates:\n  fast: {}\n  slow: {}\n"
                                  "nodes: [{{ template: fast, count: 1 }}{}]\n"
                                  "fabric: {{ kind: single-switch, network: infiniband }}\n",
                                  node("h100-sxm", "450 GB/s"), node("a100-80gb", "300 GB/s"),
                                  with_a100 ? ", { template: slow, count: 1 }" : ""));
}

/// The ids of `plans`, in order.
inline std::vector<std::size_t> ids(const std::vector<Evaluated>& plans) {
  std::vector<std::size_t> out;
  for (const auto& e : plans) out.push_back(e.id);
  return out;
}

inline model::Model shipped_model(const std::string& name) {
  return model::load_model_file(repo_path("configs/models/" + name + ".yaml"));
}

/// A small MoE model and a long-sequence one, for the expert and context axes.
inline model::Model small_moe() {
  return model_yaml(
      "model: { family: llama, layers: 4, hidden: 256, heads: 8, ffn: 512, seq_len: 1024, vocab: 1024,\n"
      "         moe: { experts: 8, top_k: 2, expert_ffn: 128 } }\n");
}
inline model::Model long_sequence() {
  return model_yaml("model: { family: llama, layers: 4, hidden: 256, heads: 8, ffn: 512, seq_len: 16384, vocab: 1024 }\n");
}

/// `layers` layers with random profiled times (1..9 ms forward, backward input and weight), parameters
/// and activations: a model whose stages differ, for property tests.
inline model::Model random_timed_model(std::mt19937& rng, int layers) {
  std::uniform_int_distribution<int> ms(1, 9);
  std::uniform_int_distribution<long> bytes(1, 64);
  std::string yaml = "model:\n  name: random\n  layers:\n";
  for (int i = 0; i < layers; ++i) {
    yaml += fmt::format(
        "    - {{ name: l{}, forward_time: \"{} ms\", backward_input_time: \"{} ms\", backward_weight_time: \"{} ms\", "
        "params: {}, activation_bytes: {}, output_bytes: {} }}\n",
        i, ms(rng), ms(rng), ms(rng), bytes(rng) * 1'000'000, bytes(rng) * 1'000'000, bytes(rng) * 100'000);
  }
  return model_yaml(yaml);
}

}  // namespace mpsim::planner::testing
