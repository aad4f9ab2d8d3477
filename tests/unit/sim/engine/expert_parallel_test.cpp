// Expert parallelism against closed forms: the dispatch and combine all-to-alls move each rank's
// routed token copies (T x top_k x hidden elements, (EP - 1) / EP of them to other ranks), the
// routed experts' weights and states shard over expert x expert_tensor and their replicas, and
// their gradients are reduced over the expert-data group.
#include <algorithm>

#include <gtest/gtest.h>

#include "engine_test_support.h"
#include "sim/engine/dispatcher_buffers.h"
#include "sim/engine/collectives.h"
#include "sim/engine/cost_model.h"
#include "sim/engine/kernel_time.h"
#include "sim/schedule/passes.h"

namespace mpsim::engine {
namespace {

using schedule::OpKind;

constexpr std::int64_t kHidden = 128, kSeq = 64, kTopK = 2, kExperts = 8, kExpertFfn = 64;

model::Model moe_model() {
  return testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 128, heads: 4, ffn: 256, seq_len: 64, vocab: 512,\n"
      "         moe: { experts: 8, top_k: 2, expert_ffn: 64 } }\n");
}

topology::Cluster eight_h100() { return testing::h100_node(8); }

schedule::Program program_of(const model::Model& model, const plan::Plan& p) {
  const CostModel costs = build_cost_model(eight_h100(), model, p, plan::Layout(p));
  return build_program(model, p, costs, EngineOptions{});
}

std::vector<const schedule::Op*> ops_of(const schedule::Program& program, OpKind kind, plan::AxisSet group) {
  std::vector<const schedule::Op*> out;
  for (const schedule::Op& op : program.streams.front()) {
    if (op.kind == kind && op.group == group) out.push_back(&op);
  }
  return out;
}

// Routing: the busiest expert rank's share sets the exchanges and the grouped GEMMs (dropless: the
// imbalance; capacity factor c: min(imbalance, c), or c when padded to capacity).
TEST(ExpertParallel, TheBusiestRanksLoadSetsTheExchangesAndTheExpertGemms) {
  const auto model = moe_model();
  const std::string base = "parallelism: { data: 8, expert: 4 }\nbatch: { global: 16, micro: 2 }\n";
  const auto a2a_bytes = [&](const std::string& routing) {
    const plan::Plan p = testing::plan_yaml(base + routing, eight_h100(), model);
    return ops_of(program_of(model, p), OpKind::AllToAll, plan::Axis::Expert).front()->bytes.count();
  };
  const std::int64_t uniform = kSeq * kTopK * kHidden * 2 * 2;
  EXPECT_EQ(a2a_bytes(""), uniform);
  EXPECT_EQ(a2a_bytes("routing_imbalance: 1.5\n"), uniform * 3 / 2);
  EXPECT_EQ(a2a_bytes("routing_imbalance: 1.5\nmoe_expert_capacity_factor: 1.0\n"), uniform);
  EXPECT_EQ(a2a_bytes("moe_expert_capacity_factor: 1.25\nmoe_pad_expert_input_to_capacity: true\n"), uniform * 5 / 4);
  // The experts' GEMM rows grow by the same factor.
  const model::Gemm& experts = model.layers.at(1).gemms.at(model.layers.at(1).gemms.size() - 1);
  ASSERT_GT(experts.groups, 1);
  EXPECT_EQ(gemm_passes(experts, 2, 1, 4, 1, 1.5).forward.m, gemm_passes(experts, 2, 1, 4, 1).forward.m * 3 / 2);
  // The busiest rank also stashes its larger share of routed token copies: per MoE block and
  // microbatch of 2, the permuted tokens and the experts' outputs (2 x s k h) and the experts'
  // intermediates (3 x s k f with the gated MLP), 2 bytes each, times 0.5 more.
  const auto stash = [&](const std::string& routing) {
    const plan::Plan p = testing::plan_yaml(base + routing, eight_h100(), model);
    return build_cost_model(eight_h100(), model, p, plan::Layout(p)).ranks.front().chunks.front().stashed.count();
  };
  EXPECT_EQ(model.layers.at(1).routed.stashed.count(), (2 * kSeq * kTopK * kHidden + 3 * kSeq * kTopK * 64) * 2);
  EXPECT_EQ(stash("routing_imbalance: 1.5\n") - stash(""), 2 * model.layers.at(1).routed.stashed.count() * 2 / 2);
  // The report carries the load (the viewer's report panel and simulate --json show it).
  const plan::Plan skewed = testing::plan_yaml(base + "routing_imbalance: 1.5\n", eight_h100(), model);
  EXPECT_DOUBLE_EQ(simulate(eight_h100(), model, skewed).report.plan.expert_load, 1.5);
  // Routing fields need experts, and padding needs a capacity.
  EXPECT_THROW((void)testing::plan_yaml(base + "moe_pad_expert_input_to_capacity: true\n", eight_h100(), model),
               InputError);
}

TEST(ExpertParallel, DispatchAndCombineMoveTheTopKTokenCopies) {
  const auto model = moe_model();
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { data: 8, expert: 4 }\nbatch: { global: 16, micro: 2 }\n", eight_h100(), model);
  const schedule::Program program = program_of(model, p);
  const auto a2a = ops_of(program, OpKind::AllToAll, plan::Axis::Expert);
  // One microbatch (of 2 samples) x (forward + backward) x 2 layers x (dispatch + combine).
  std::int64_t exchanges = 0;
  for (const schedule::Op* op : a2a) {
    EXPECT_EQ(op->bytes.count(), kSeq * kTopK * kHidden * 2 /*bytes*/ * 2 /*micro batch*/);
    EXPECT_EQ(op->stream, schedule::CommStream::Blocking);
    exchanges += op->count;
  }
  EXPECT_EQ(exchanges, 1 * 2 * 2 * 2);
  // Over the real links each member sends (EP - 1) / EP of its buffer, 1/EP to every other member.
  const plan::Layout layout(p);
  const auto groups = device_groups(eight_h100(), layout, {0}, plan::Axis::Expert);
  ASSERT_EQ(groups.size(), 1u);
  ASSERT_EQ(groups.front().size(), 4u);
  const Bytes buffer = Bytes::bytes(kSeq * kTopK * kHidden * 2);
  const auto rounds = collective_rounds(eight_h100(), CollectiveKind::AllToAll, CollectiveAlgorithm::Auto, groups, buffer);
  ASSERT_EQ(rounds.size(), 1u);
  std::int64_t sent_by_first = 0;
  for (const auto& [from, to] : rounds.front().transfers) {
    if (from == groups.front().front()) sent_by_first += rounds.front().bytes.count();
  }
  EXPECT_EQ(sent_by_first, buffer.count() * 3 / 4);
}

TEST(ExpertParallel, ExpertStatesShardOverExpertAndTheirReplicas) {
  const auto model = moe_model();
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { data: 8, expert: 4 }\nbatch: { global: 16 }\nzero: 1\n", eight_h100(), model);
  EXPECT_EQ(p.expert_data(), 2);
  const CostModel costs = build_cost_model(eight_h100(), model, p, plan::Layout(p));
  std::int64_t total = 0, experts = 0;
  for (const auto& layer : model.layers) {
    total += layer.parameters;
    experts += layer.expert_parameters;
  }
  EXPECT_EQ(experts, 2 * kExperts * 3 * kHidden * kExpertFfn);
  const std::int64_t dense = total - experts;
  const StaticMemory& m = costs.ranks.front().static_memory;
  EXPECT_EQ(m.weights.count(), 2 * (dense + experts / 4));
  EXPECT_EQ(m.gradients.count(), 4 * (dense + experts / 4));
  // ZeRO 1: dense optimizer state over the 8 data replicas, the experts' over their 2.
  EXPECT_EQ(m.optimizer.count(), 12 * dense / 8 + 12 * experts / 4 / 2);
}

TEST(ExpertParallel, ExpertGradientsReduceOverTheExpertDataGroup) {
  const auto model = moe_model();
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { data: 8, expert: 4 }\nbatch: { global: 8 }\nzero: 1\n", eight_h100(), model);
  const schedule::Program program = program_of(model, p);
  std::int64_t experts = 0, dense = 0;
  for (const auto& layer : model.layers) {
    experts += layer.expert_parameters;
    dense += layer.parameters - layer.expert_parameters;
  }
  std::int64_t expert_reduced = 0, dense_reduced = 0;
  for (const schedule::Op* op : ops_of(program, OpKind::ReduceScatter, plan::Axis::ExpertData)) {
    expert_reduced += op->bytes.count();
  }
  for (const schedule::Op* op : ops_of(program, OpKind::ReduceScatter, plan::Axis::Data)) dense_reduced += op->bytes.count();
  EXPECT_EQ(expert_reduced, 4 * experts / 4);
  EXPECT_EQ(dense_reduced, 4 * dense);
  // The engine runs them: a step with expert parallelism simulates.
  EXPECT_GT(simulate(eight_h100(), model, p).report.step_time_s, 0.0);
}

TEST(ExpertParallel, PlansAreChecked) {
  const auto model = moe_model();
  const auto dense = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 128, heads: 4, ffn: 256, seq_len: 64, vocab: 512 }\n");
  const auto error = [](const std::string& yaml, const model::Model& m) {
    try {
      (void)testing::plan_yaml(yaml, eight_h100(), m);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error("parallelism: { expert: 2 }\n", dense).find("needs a model with moe blocks"), std::string::npos);
  EXPECT_NE(error("parallelism: { data: 8, expert: 3 }\n", model).find("does not divide"), std::string::npos);
  EXPECT_NE(error("parallelism: { data: 8, expert: 16 }\n", model).find("(field 'expert')"), std::string::npos);
  const auto odd = testing::model_yaml(
      "model: { family: llama, layers: 2, hidden: 128, heads: 4, ffn: 256, seq_len: 40, vocab: 512 }\n");
  EXPECT_NE(error("parallelism: { data: 1, context: 8 }\n", odd).find("divisible by 2 x 8"), std::string::npos);
  // The dispatchers: all-to-all or flex (DeepEP, HybridEP); allgather is not modelled.
  EXPECT_NE(error("parallelism: { data: 8, expert: 8 }\nmoe_token_dispatcher_type: allgather\n", model)
                .find("allgather dispatcher is not modelled"),
            std::string::npos);
  EXPECT_NE(error("parallelism: { data: 8, expert: 8 }\nmoe_flex_dispatcher_backend: hybridep\n", model)
                .find("applies to moe_token_dispatcher_type flex"),
            std::string::npos);
  EXPECT_NE(error("parallelism: { data: 8 }\nmoe_token_dispatcher_type: flex\n", dense).find("models with moe blocks"),
            std::string::npos);
  EXPECT_EQ(testing::plan_yaml("parallelism: { data: 8, expert: 8 }\nmoe_enable_deepep: true\n", eight_h100(), model)
                .dispatcher,
            plan::MoeDispatcher::DeepEp);
  // Megatron's names.
  const plan::Plan m = testing::plan_yaml(
      "data_parallel_size: 8\nexpert_model_parallel_size: 8\nexpert_tensor_parallel_size: 1\n", eight_h100(), model);
  EXPECT_EQ(m.degrees[plan::Axis::Expert], 8);
  EXPECT_EQ(m.degrees[plan::Axis::ExpertTensor], 1);
  EXPECT_EQ(m.expert_data(), 1);
}

// Megatron's flex dispatcher (DeepEP, HybridEP) sends a token once per node, over the rail, and
// once per GPU inside the node. Two nodes of 4, expert 8 over both: 8 experts, one per GPU, 4 per
// node, top 2. A token misses a node's 4 experts with probability C(4,2)/C(8,2) = 6/28, one GPU's
// single expert with C(7,2)/C(8,2) = 21/28.
TEST(ExpertParallel, FlexDispatchSendsATokenOncePerNodeThenOncePerGpu) {
  const topology::Cluster two_nodes = testing::cluster_yaml(
      "cluster:\n  nodes: 2\n  gpus_per_node: 4\n  gpu: h100-sxm\n"
      "  intra_node: { kind: nvswitch, bandwidth: \"450 GB/s\" }\n"
      "  inter_node: { kind: infiniband, bandwidth: \"400 Gb/s\", latency: \"5 us\", nics_per_node: 4 }\n");
  const auto model = moe_model();
  const std::string base = "parallelism: { data: 8, expert: 8 }\nbatch: { global: 16, micro: 2 }\n";
  const plan::Plan flex = testing::plan_yaml(base + "moe_token_dispatcher_type: flex\n", two_nodes, model);
  EXPECT_EQ(flex.dispatcher, plan::MoeDispatcher::DeepEp);  // Megatron-Core's default backend
  const auto routing = token_routing(model, flex);
  ASSERT_TRUE(routing.has_value());
  EXPECT_DOUBLE_EQ(token_hit_fraction(kExperts, kTopK, 4), 1.0 - 6.0 / 28.0);
  EXPECT_DOUBLE_EQ(token_hit_fraction(kExperts, kTopK, 1), 1.0 - 21.0 / 28.0);
  const auto groups = device_groups(two_nodes, plan::Layout(flex), {0}, plan::Axis::Expert);
  ASSERT_EQ(groups.front().size(), 8u);
  const std::int64_t buffer = kSeq * kTopK * kHidden * 2;  // one sample's token copies, 2 bytes each
  const std::int64_t tokens = buffer / kTopK;
  const auto rounds = collective_rounds(two_nodes, CollectiveKind::AllToAll, CollectiveAlgorithm::Auto, groups,
                                        Bytes::bytes(buffer), &*routing);
  ASSERT_EQ(rounds.size(), 2u);
  // Across: every GPU to the GPU of its local index on the other node, its tokens that hit that node.
  EXPECT_EQ(rounds[0].transfers.size(), 8u);
  EXPECT_EQ(rounds[0].bytes.count(), (tokens * 22 + 27) / 28);
  for (const auto& [from, to] : rounds[0].transfers) {
    EXPECT_NE(two_nodes.device(from).node, two_nodes.device(to).node);
    EXPECT_EQ(two_nodes.device(from).local_index, two_nodes.device(to).local_index);
  }
  // Inside: every GPU to the 3 others of its node, once per token and GPU hit, for its own tokens and
  // its rail partner's.
  EXPECT_EQ(rounds[1].transfers.size(), 8u * 3u);
  EXPECT_EQ(rounds[1].bytes.count(), 2 * tokens * 7 / 28);
  // What crosses between the nodes: 11/28 of a GPU's buffer, against 4/8 for the all-to-all.
  const auto plain = collective_rounds(two_nodes, CollectiveKind::AllToAll, CollectiveAlgorithm::Auto, groups,
                                       Bytes::bytes(buffer));
  std::int64_t plain_across = 0;
  for (const auto& [from, to] : plain.front().transfers) {
    if (from == groups.front().front() && two_nodes.device(to).node != two_nodes.device(from).node) {
      plain_across += plain.front().bytes.count();
    }
  }
  EXPECT_EQ(plain_across, buffer / 2);
  // On the wire, the step is faster; in memory, DeepEP's queues join the static part: 10 channels x 8
  // peers x 256 slots of 256 + 8 + 1024 + 512 + 512 bytes and the counters (dispatcher_buffers.h).
  const plan::Plan alltoall = testing::plan_yaml(base, two_nodes, model);
  const auto with_flex = simulate(two_nodes, model, flex).report;
  const auto without = simulate(two_nodes, model, alltoall).report;
  EXPECT_LT(with_flex.step_time_s, without.step_time_s);
  const std::int64_t queues = (10LL * 8 * 5 * 4 + 10LL * 8 * 256 * 2312 + 127) / 128 * 128;
  EXPECT_EQ(dispatcher_buffer_bytes(dispatcher_buffer_shape(two_nodes, model, flex, plan::Layout(flex), 0)).count(),
            queues);
  EXPECT_EQ(with_flex.peak_memory_bytes - without.peak_memory_bytes, queues);
}

// Inside one node the flex dispatcher sends a token once to each GPU holding one of its experts:
// expert 4 of 8 experts, two per GPU, misses a GPU with probability C(6,2)/C(8,2) = 15/28.
TEST(ExpertParallel, FlexDispatchInsideANodeSendsATokenOncePerGpu) {
  const auto model = moe_model();
  const plan::Plan p = testing::plan_yaml(
      "parallelism: { data: 8, expert: 4 }\nbatch: { global: 16, micro: 2 }\n"
      "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep\n",
      eight_h100(), model);
  EXPECT_EQ(p.dispatcher, plan::MoeDispatcher::HybridEp);
  const auto groups = device_groups(eight_h100(), plan::Layout(p), {0}, plan::Axis::Expert);
  const std::int64_t buffer = kSeq * kTopK * kHidden * 2;
  const auto routing = token_routing(model, p);
  const auto rounds = collective_rounds(eight_h100(), CollectiveKind::AllToAll, CollectiveAlgorithm::Auto, groups,
                                        Bytes::bytes(buffer), &*routing);
  ASSERT_EQ(rounds.size(), 1u);
  EXPECT_EQ(rounds[0].transfers.size(), 4u * 3u);
  EXPECT_EQ(rounds[0].bytes.count(), (buffer / kTopK * 13 + 27) / 28);
  // Only the expert group's all-to-alls are dispatches.
  EXPECT_EQ(expert_routing(routing, CollectiveKind::AllToAll, plan::Axis::Expert), &*routing);
  EXPECT_EQ(expert_routing(routing, CollectiveKind::AllToAll, plan::Axis::Context), nullptr);
  EXPECT_EQ(expert_routing(routing, CollectiveKind::AllGather, plan::Axis::Expert), nullptr);
  // The plain all-to-all dispatcher has no routing to deduplicate with.
  EXPECT_FALSE(token_routing(model, testing::plan_yaml("parallelism: { data: 8, expert: 4 }\nbatch: { global: 16 }\n",
                                                        eight_h100(), model))
                   .has_value());
}

// Megatron-Core's combined 1F1B pairs a forward with the next backward and runs, per pair of MoE
// blocks, four slots: the backward's combine beside the forward's attention half, the forward's
// dispatch beside the backward's MLP half, the backward's dispatch beside the forward's MLP half and
// the forward's combine beside the backward's attention half. Each slot lasts the longer of the
// all-to-all and the half, the half running on the SMs NCCL's kernels leave (16 of an A100's 108)
// while the all-to-all runs: a pair exposes sum(max(a2a - half, a2a x 16 / 108)). Two A100s on a 640 MB/s PCIe switch, expert 2: each
// all-to-all sends half of a rank's 64 x 2 x 128 x 2 bytes of token copies to the other rank,
// 16384 B / 640 MB/s = 25.6 us, longer than the forward's halves and shorter than the backward's. One stage, 4 microbatches: F0, F1&B0, F2&B1, F3&B2, B3, so the step
// is 3 x (4 x 2 blocks x a2a - exposure) shorter than 1F1B with blocking all-to-alls.
TEST(ExpertParallel, CombinedOneFOneBHidesEachAllToAllUnderItsSlot) {
  const topology::Cluster box = testing::pcie_box(2, "640 MB/s", "0 us");
  const auto model = moe_model();
  const std::string base = "parallelism: { data: 2, expert: 2 }\nbatch: { global: 8, micro: 1 }\n";
  const plan::Plan plain = testing::plan_yaml(base, box, model);
  const plan::Plan paired = testing::plan_yaml(base + "overlap: { moe_expert_comm: true }\n", box, model);
  const CostModel costs = build_cost_model(box, model, paired, plan::Layout(paired));
  const ChunkCost& chunk = costs.chunk(0, 0);
  ASSERT_EQ(chunk.moe_blocks, 2);
  const TimeNs a2a = TimeNs::ns(25'600);
  const TimeNs slowed = TimeNs::ns((25'600 * 16 + 54) / 108);  // 3.793 us, rounded
  const auto gap = [&](TimeNs half) { return std::max<TimeNs>(a2a > half ? a2a - half : TimeNs{}, slowed); };
  const TimeNs exposure = (gap(chunk.moe_attention_forward) + gap(chunk.moe_mlp_backward) + gap(chunk.moe_mlp_forward) +
                           gap(chunk.moe_attention_backward)) *
                          2;
  // The backward's halves hide their all-to-alls but for the SMs they lend; the forward's do not.
  EXPECT_GT(chunk.moe_attention_backward, a2a);
  EXPECT_LT(chunk.moe_mlp_forward, a2a);
  EXPECT_GT(exposure, TimeNs{});
  EXPECT_LT(exposure, a2a * 8);
  const double saved = simulate(box, model, plain).report.step_time_s - simulate(box, model, paired).report.step_time_s;
  EXPECT_NEAR(saved, 3 * TimeNs(a2a * 8 - exposure).to_seconds(), 20e-9);
}

// The flex dispatcher's kernels hold the SMs the plan gives them (moe_hybridep_num_sms) while a
// pair's compute runs beside them. The same two A100s with HybridEP: inside one node a token goes
// once to the other GPU when it holds one of the token's experts, 1 - C(4,2)/C(8,2) = 22/28 of the
// time, so each all-to-all sends ceil(16384 x 22/28) = 12874 B, 20.116 us at 640 MB/s; with 54 of
// the 108 SMs held, each slot lasts at least half of it longer than its compute.
TEST(ExpertParallel, TheFlexBackendsSmsSlowTheComputeBesideThem) {
  const topology::Cluster box = testing::pcie_box(2, "640 MB/s", "0 us");
  const auto model = moe_model();
  const std::string base = "parallelism: { data: 2, expert: 2 }\nbatch: { global: 8, micro: 1 }\n"
                           "moe_token_dispatcher_type: flex\nmoe_flex_dispatcher_backend: hybridep\n";
  const plan::Plan plain = testing::plan_yaml(base, box, model);
  const plan::Plan paired =
      testing::plan_yaml(base + "overlap: { moe_expert_comm: true }\nmoe_hybridep_num_sms: 54\n", box, model);
  EXPECT_EQ(paired.flex_dispatcher_sms, 54);
  const CostModel costs = build_cost_model(box, model, paired, plan::Layout(paired));
  const ChunkCost& chunk = costs.chunk(0, 0);
  const double a2a_ns = 12'874 / 0.64;
  const auto slot = [&](TimeNs half) { return std::max(a2a_ns - static_cast<double>(half.base()), a2a_ns / 2); };
  const double exposure_ns = (slot(chunk.moe_attention_forward) + slot(chunk.moe_mlp_backward) +
                              slot(chunk.moe_mlp_forward) + slot(chunk.moe_attention_backward)) *
                             2;
  const double saved = simulate(box, model, plain).report.step_time_s - simulate(box, model, paired).report.step_time_s;
  EXPECT_NEAR(saved, 3 * (a2a_ns * 8 - exposure_ns) * 1e-9, 100e-9);
  // Megatron-Core's default, 16 SMs, hides more.
  const plan::Plan default_sms = testing::plan_yaml(base + "overlap: { moe_expert_comm: true }\n", box, model);
  EXPECT_LT(simulate(box, model, default_sms).report.step_time_s, simulate(box, model, paired).report.step_time_s);
}

}  // namespace
}  // namespace mpsim::engine
