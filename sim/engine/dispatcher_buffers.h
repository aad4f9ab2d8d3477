#pragma once
/// The communication buffers of Megatron-Core's flex token dispatchers: memory the backends allocate
/// themselves (cudaMalloc, NVSHMEM, fabric handles), outside PyTorch's caching allocator, once per
/// process and held for the whole run. They count against a GPU's capacity as NCCL's buffers do (the
/// static `reserved` part), never in max_memory_allocated. The NCCL all-to-all dispatcher has none of
/// its own beyond its communicator.
///
/// HybridEP (DeepEP's hybrid-ep branch at 94a9f8f, csrc/hybrid_ep/buffer/intranode.cu and
/// internode_doca.cu; Megatron-Core's fused_a2a.py sizes it from the first microbatch's tokens): the
/// NVLink buffers hold the worst case, every token of the group routed to this rank,
/// M = tokens per rank x group size: M x hidden bf16 tokens, M x (local experts x ranks per NVLink
/// domain) fp32 probabilities and M x hidden / 128 fp32 scaling factors, shared by dispatch and combine.
/// A group over several NVLink domains adds the RDMA staging buffers: for the dispatch, the rank's own
/// tokens and those of the n - 1 other domains (hidden bf16, probabilities over the whole group's
/// experts, scaling factors); for the combine, two of n - 1 domains' tokens and probabilities.
///
/// DeepEP's normal kernels (DeepEP csrc/legacy/config.hpp, get_nvl_buffer_size_hint and
/// get_rdma_buffer_size_hint; the per-group-size configs of deep_ep/buffers/legacy.py; Megatron-Core's
/// get_buffer takes the larger of the dispatch and combine configs' hints): chunked queues per channel
/// (one channel per two SMs) and peer, of up to 8 NVLink peers and group / 8 RDMA peers, each token slot
/// holding the hidden state, its source metadata, 128 top-k indices and weights and 128 scales.
#include <cstdint>

#include "sim/core/units.h"
#include "sim/model/model.h"
#include "sim/plan/layout.h"
#include "sim/plan/plan.h"
#include "sim/topology/cluster.h"

namespace mpsim::engine {

/// What sizes a flex dispatcher's buffers.
struct DispatcherBufferShape {
  plan::MoeDispatcher dispatcher = plan::MoeDispatcher::AllToAll;
  std::int64_t tokens_per_rank = 0;  ///< tokens one rank sends into a dispatch (a microbatch's share)
  std::int64_t hidden = 0;
  int group_ranks = 1;               ///< the expert-parallel group (expert x expert-tensor)
  int ranks_per_domain = 1;          ///< of them, on one NVLink domain (node)
  std::int64_t experts = 0;          ///< routed experts of the model
  int sms = 0;                       ///< SMs the kernels hold (dispatcher_sms)
};

/// The buffers' bytes per GPU; zero for the NCCL all-to-all or a group of one.
[[nodiscard]] Bytes dispatcher_buffer_bytes(const DispatcherBufferShape& shape) noexcept;
/// The least any placement of the group holds (the planner's bound, which knows no placement yet):
/// HybridEP's NVLink buffers with the probabilities of one GPU's experts and no RDMA staging; DeepEP's
/// do not depend on the placement.
[[nodiscard]] Bytes dispatcher_buffer_floor(const DispatcherBufferShape& shape) noexcept;

/// The shape of `settings`' dispatcher for an expert group of `group_ranks` GPUs, `ranks_per_domain`
/// of them on one NVLink domain: a microbatch's tokens on one rank as the MoE layer gets them (split
/// over context and, with sequence parallelism, tensor ranks). The default shape (no buffers) for a
/// model without routed experts or a plan without a flex dispatcher.
[[nodiscard]] DispatcherBufferShape dispatcher_buffer_shape(const model::Model& model, const plan::PlanSettings& settings,
                                                            int group_ranks, int ranks_per_domain);
/// The shape for global rank `rank` of a resolved plan: its expert x expert-tensor group and how many
/// of that group share its node.
[[nodiscard]] DispatcherBufferShape dispatcher_buffer_shape(const topology::Cluster& cluster, const model::Model& model,
                                                            const plan::Plan& plan, const plan::Layout& layout,
                                                            int rank);

}  // namespace mpsim::engine
