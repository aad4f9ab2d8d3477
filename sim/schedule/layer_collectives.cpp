#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/plan/layer_recompute.h"

#include "sim/plan/plan_check.h"
#include "sim/schedule/ops.h"
#include "sim/schedule/passes.h"

namespace mpsim::schedule {

namespace {

/// Adds `count` x (kind, bytes) over `group` to `list`, merging with an equal collective already there.
void add(std::vector<LayerCollective>& list, OpKind kind, Bytes bytes, int count,
         plan::AxisSet group = plan::Axis::Tensor, LayerCommPlacement placement = LayerCommPlacement::AsPlanned) {
  if (count <= 0 || bytes.count() <= 0) return;
  for (LayerCollective& c : list) {
    if (c.kind == kind && c.bytes == bytes && c.group == group && c.placement == placement) {
      c.count += count;
      return;
    }
  }
  list.push_back({kind, group, bytes, count, placement});
}

/// `count` passes' expert exchanges of `tokens` bytes of routed token copies: dispatch and combine
/// all-to-alls over the expert group, and the expert-tensor gather and scatter between them.
void add_expert_exchanges(std::vector<LayerCollective>& list, Bytes tokens, int count, const plan::Plan& plan) {
  constexpr auto kBlocking = LayerCommPlacement::Blocking;
  add(list, OpKind::AllToAll, tokens, 2 * count, plan::Axis::Expert, kBlocking);
  if (plan.degrees[plan::Axis::ExpertTensor] > 1) {
    const Bytes gathered = Bytes::bytes(tokens.count() * plan.degrees[plan::Axis::ExpertTensor]);
    add(list, OpKind::AllGather, gathered, count, plan::Axis::ExpertTensor, kBlocking);
    add(list, OpKind::ReduceScatter, gathered, count, plan::Axis::ExpertTensor, kBlocking);
  }
}

/// `count` tensor-parallel reductions of `bytes`: all-reduces, or all-gather + reduce-scatter pairs
/// under sequence parallelism (the same bytes on the wire).
void add_tensor_reductions(std::vector<LayerCollective>& list, Bytes bytes, int count, bool sequence_parallel) {
  if (sequence_parallel) {
    add(list, OpKind::AllGather, bytes, count);
    add(list, OpKind::ReduceScatter, bytes, count);
  } else {
    add(list, OpKind::AllReduce, bytes, count);
  }
}

/// One attention core's context-parallel exchanges on one rank (`core` is the rank's share: its
/// queries against every key). p2p: the K/V ring beside the attention, as a gather of every chunk's
/// keys and values (their gradients scattered back in the backward); all_gather: the same before the
/// attention; a2a: the rank's queries, keys and values (by heads) before the attention and its output
/// after it, and the gradients of both the other way in the backward.
void add_context_exchanges(ChunkCollectives& chunk, const model::AttentionCore& core, int dtype_bytes, bool replayed,
                           const plan::Plan& plan) {
  const std::int64_t scale = static_cast<std::int64_t>(dtype_bytes) * plan.micro_batch;
  const auto bytes = [&](std::int64_t elements) {
    return Bytes::bytes(elements * scale / plan.degrees[plan::Axis::Tensor]);
  };
  const int passes = replayed ? 2 : 1;
  if (plan.context_comm == plan::ContextComm::AllToAll) {
    constexpr auto kBlocking = LayerCommPlacement::Blocking;
    const std::int64_t kv_heads = core.kv_heads > 0 ? core.kv_heads : core.heads;
    const Bytes inputs =
        bytes(core.q_tokens * (core.heads * core.head_dim + kv_heads * (core.head_dim + core.values())));
    const Bytes output = bytes(core.q_tokens * core.heads * core.values());
    add(chunk.forward, OpKind::AllToAll, inputs, 1, plan::Axis::Context, kBlocking);
    add(chunk.forward, OpKind::AllToAll, output, 1, plan::Axis::Context, kBlocking);
    add(chunk.backward, OpKind::AllToAll, inputs, passes, plan::Axis::Context, kBlocking);
    add(chunk.backward, OpKind::AllToAll, output, passes, plan::Axis::Context, kBlocking);
    return;
  }
  const LayerCommPlacement placement =
      plan.context_comm == plan::ContextComm::P2p ? LayerCommPlacement::Beside : LayerCommPlacement::Blocking;
  const Bytes keys_values = bytes(core.key_value_elements());
  add(chunk.forward, OpKind::AllGather, keys_values, 1, plan::Axis::Context, placement);
  add(chunk.backward, OpKind::AllGather, keys_values, passes, plan::Axis::Context, placement);
  add(chunk.backward, OpKind::ReduceScatter, keys_values, 1, plan::Axis::Context, placement);
}

bool carries_backward(OpKind k) noexcept { return k == OpKind::Backward || k == OpKind::BackwardInput; }

}  // namespace

std::vector<std::vector<ChunkCollectives>> chunk_layer_collectives(const model::Model& model, const plan::Plan& plan) {
  const auto ranges = plan::virtual_stage_layers(plan, model);
  const std::vector<plan::LayerRecompute> recompute = plan::layer_recompute(plan, model);
  std::vector<std::vector<ChunkCollectives>> out(
      static_cast<std::size_t>(plan.degrees[plan::Axis::Pipeline]),
      std::vector<ChunkCollectives>(static_cast<std::size_t>(plan.virtual_stages)));
  const bool sharded_weights = plan.zero >= 3 && plan.degrees[plan::Axis::Data] * plan.degrees[plan::Axis::Context] > 1;
  const bool expert_exchanges = plan.degrees[plan::Axis::Expert] > 1 || plan.degrees[plan::Axis::ExpertTensor] > 1;
  if (plan.degrees[plan::Axis::Tensor] <= 1 && plan.degrees[plan::Axis::Context] <= 1 && !sharded_weights &&
      !expert_exchanges)
    return out;
  constexpr auto kBeside = LayerCommPlacement::Beside;
  const int gathered = gathered_parameter_bytes(plan.fp8_param_gather, model.dtype_bytes);
  const int gradient = gradient_bytes_per_parameter(plan.grad_reduce_in_fp32, model.dtype_bytes);
  for (int rank = 0; rank < plan.degrees[plan::Axis::Pipeline]; ++rank) {
    for (int c = 0; c < plan.virtual_stages; ++c) {
      ChunkCollectives& chunk = out[static_cast<std::size_t>(rank)][static_cast<std::size_t>(c)];
      const plan::LayerRange r = ranges.at(
          static_cast<std::size_t>(plan::virtual_stage_of(plan.schedule, plan.degrees[plan::Axis::Pipeline], rank, c)));
      for (int i = r.first; i < r.last; ++i) {
        // One context rank's share of the layer (the layer itself without context parallelism).
        model::Layer context_layer;
        const model::Layer* whole = &model.layers[static_cast<std::size_t>(i)];
        if (plan.degrees[plan::Axis::Context] > 1)
          context_layer = model::context_share(*whole, plan.degrees[plan::Axis::Context]);
        const model::Layer& layer = plan.degrees[plan::Axis::Context] > 1 ? context_layer : *whole;
        const int k = layer.tensor_parallel_allreduces_forward;
        const Bytes bytes = Bytes::bytes(layer.output_bytes.count() * plan.micro_batch);
        // Full recomputation replays the forward, collectives included, before the backward.
        const bool replayed = plan::replays_forward(recompute[static_cast<std::size_t>(i)], layer.kind);
        if (plan.degrees[plan::Axis::Tensor] > 1) {
          add_tensor_reductions(chunk.forward, bytes, k, plan.sequence_parallel);
          add_tensor_reductions(chunk.backward, bytes, replayed ? 2 * k : k, plan.sequence_parallel);
          // A distributed checkpoint's input is gathered whole before its group replays
          // (CheckpointFunction.backward's gather_split_1d_tensor), on the compute stream.
          if (plan.distribute_saved_activations && replayed && recompute[static_cast<std::size_t>(i)].place.keeps_input) {
            add(chunk.backward, OpKind::AllGather, Bytes::bytes(layer.stashed.layer_input.count() * plan.micro_batch), 1,
                plan::Axis::Tensor, LayerCommPlacement::Blocking);
          }
        }
        if (expert_exchanges && layer.routed.experts > 0) {
          const model::RoutedExperts& e = layer.routed;
          // The busiest rank's share: every member waits for the largest exchange (expert_load).
          const auto routed = static_cast<double>(e.tokens * e.top_k * e.hidden * model.dtype_bytes * plan.micro_batch /
                                                  plan.degrees[plan::Axis::Tensor]);
          const Bytes tokens = Bytes::bytes(static_cast<std::int64_t>(std::ceil(routed * plan.expert_load())));
          add_expert_exchanges(chunk.forward, tokens, 1, plan);
          add_expert_exchanges(chunk.backward, tokens, replayed ? 2 : 1, plan);
        }
        if (plan.degrees[plan::Axis::Context] > 1) {
          for (const model::AttentionCore& core : layer.attention) {
            add_context_exchanges(chunk, core, model.dtype_bytes, replayed, plan);
          }
        }
        if (sharded_weights) {
          // Each weight is gathered over its own replicas: the dense ones over data (x context), the
          // routed experts' (split over expert x expert_tensor) over the expert-data group.
          const auto shard = [&](std::int64_t parameters, plan::AxisSet replicas) {
            if (parameters <= 0) return;
            const Bytes weights = Bytes::bytes(parameters * gathered);
            add(chunk.forward, OpKind::AllGather, weights, 1, replicas, kBeside);
            add(chunk.backward, OpKind::AllGather, weights, 1, replicas, kBeside);
            add(chunk.backward, OpKind::ReduceScatter, Bytes::bytes(parameters * gradient), 1, replicas, kBeside);
          };
          const bool own_replicas = splits_expert_gradients(plan);
          const std::int64_t experts = own_replicas ? layer.expert_parameters : 0;
          const std::int64_t dense = (layer.parameters - experts) / plan.degrees[plan::Axis::Tensor];
          shard(dense, dense_shard_group(plan));
          if (plan.degrees[plan::Axis::DataReplica] > 1 && dense > 0) {
            // HSDP: the reduced shard is all-reduced over the groups holding the other copies.
            add(chunk.backward, OpKind::AllReduce, Bytes::bytes(dense * gradient / dense_shard_ranks(plan)), 1,
                plan::Axis::DataReplica, kBeside);
          }
          if (own_replicas && plan.expert_data() > 1) {
            shard(experts / (plan.degrees[plan::Axis::Expert] * plan.degrees[plan::Axis::ExpertTensor]),
                  plan::Axis::ExpertData);
          }
        }
      }
    }
  }
  return out;
}

Program add_layer_collectives(Program program, const std::vector<std::vector<ChunkCollectives>>& collectives,
                              bool overlap) {
  if (collectives.size() != program.streams.size()) {
    throw std::invalid_argument(fmt::format("in-layer collectives for {} ranks, but the program has {}",
                                            collectives.size(), program.streams.size()));
  }
  const CommStream stream = overlap ? CommStream::Overlapped : CommStream::Blocking;
  for (std::size_t r = 0; r < program.streams.size(); ++r) {
    if (collectives[r].size() != static_cast<std::size_t>(program.shape.chunks)) {
      throw std::invalid_argument(fmt::format("in-layer collectives for {} chunks, but ranks hold {}",
                                              collectives[r].size(), program.shape.chunks));
    }
    std::vector<Op> out;
    out.reserve(program.streams[r].size() * 2);
    for (const Op& op : program.streams[r]) {
      const bool pair = op.kind == OpKind::ForwardBackward;
      const bool forward = op.kind == OpKind::Forward;
      if ((!pair && !forward && !carries_backward(op.kind)) || (is_collective(op.kind) && is_in_layer(op.stream))) {
        if (!(is_collective(op.kind) && is_in_layer(op.stream))) out.push_back(op);  // idempotent: re-derived
        continue;
      }
      // Before the compute op: what runs beside it; after it: what the compute stream waits for. An
      // F&B pair runs all of both passes' collectives beside it: the overlap hides each pass's
      // communication under the other's compute.
      const auto emit = [&](const Op& pass, bool before) {
        const ChunkCollectives& chunk = collectives[r].at(pass.chunk);
        for (const LayerCollective& c : pass.kind == OpKind::Forward ? chunk.forward : chunk.backward) {
          const CommStream s = pair || c.placement == LayerCommPlacement::Beside ? CommStream::Overlapped
                               : c.placement == LayerCommPlacement::Blocking     ? CommStream::Blocking
                                                                                 : stream;
          if ((s == CommStream::Overlapped) != before) continue;
          out.push_back(layer_collective_op(c.kind, c.group, c.bytes, c.count, s, static_cast<int>(pass.microbatch),
                                            pass.chunk));
        }
      };
      const ComputeParts parts = compute_parts(op);
      for (const Op& pass : parts) emit(pass, true);
      out.push_back(op);
      for (const Op& pass : parts) emit(pass, false);
    }
    program.streams[r] = std::move(out);
  }
  return program;
}

}  // namespace mpsim::schedule
