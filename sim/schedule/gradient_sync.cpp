#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "sim/plan/plan_check.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"
#include "sim/schedule/passes.h"

namespace mpsim::schedule {

namespace {

/// `total` in pieces of `bucket`, the last one smaller; none for 0 bytes.
std::vector<Bytes> buckets_of(Bytes total, Bytes bucket) {
  std::vector<Bytes> out;
  for (Bytes left = total; left > Bytes{}; left -= bucket) out.push_back(left < bucket ? left : bucket);
  return out;
}

void check(const Program& program, const GradientSync& sync) {
  if (!sync.data_parallel) return;
  if (sync.gradient_bytes.size() != program.streams.size()) {
    throw std::invalid_argument(fmt::format("gradient sizes for {} ranks, but the program has {}",
                                            sync.gradient_bytes.size(), program.streams.size()));
  }
  for (const std::vector<Bytes>& row : sync.gradient_bytes) {
    if (row.size() != static_cast<std::size_t>(program.shape.chunks)) {
      throw std::invalid_argument(
          fmt::format("gradient sizes for {} chunks, but ranks hold {}", row.size(), program.shape.chunks));
    }
    for (const Bytes b : row) {
      if (b < Bytes{}) throw std::invalid_argument("negative gradient size");
    }
  }
  if (!sync.expert_gradient_bytes.empty() && (sync.expert_gradient_bytes.size() != sync.gradient_bytes.size())) {
    throw std::invalid_argument("expert gradient sizes must match the ranks of the dense ones");
  }
  if (sync.bucket_size <= Bytes{}) throw std::invalid_argument("the gradient bucket size must be positive");
  if (sync.zero < 0) throw std::invalid_argument(fmt::format("ZeRO stage {} is not a stage", sync.zero));
  if (sync.gradient_bytes_per_parameter <= 0 || sync.parameter_bytes <= 0) {
    throw std::invalid_argument("bytes per parameter must be positive");
  }
}

bool is_layer_collective(const Op& op) noexcept { return is_collective(op.kind) && is_in_layer(op.stream); }

/// True for the ops after which a chunk's weight gradients are complete.
bool ends_weight_gradient(OpKind k) noexcept { return k == OpKind::Backward || k == OpKind::BackwardWeight; }

}  // namespace

SyncCollectives sync_collectives(int zero) noexcept {
  SyncCollectives out;
  if (zero >= 1) {
    out.reduction = OpKind::ReduceScatter;
    out.after_step = OpKind::AllGather;
  }
  return out;
}

Program add_gradient_sync(Program program, const GradientSync& sync) {
  check(program, sync);
  const SyncCollectives collectives = sync_collectives(sync.zero);
  const int chunks = program.shape.chunks;
  for (std::size_t r = 0; r < program.streams.size(); ++r) {
    std::vector<Op>& stream = program.streams[r];
    if (!sync.data_parallel || sync.zero >= 3) {
      stream.push_back(optimizer_step_op());
      continue;
    }
    // Each chunk's buckets: its dense gradients over the data-parallel group, then its routed
    // experts' over the expert-data group.
    struct Bucket {
      Bytes bytes;
      plan::AxisSet group;
      bool dense = false;  // HSDP: its reduced shard is all-reduced over the replica group
    };
    std::vector<std::vector<Bucket>> buckets(static_cast<std::size_t>(chunks));
    for (int c = 0; c < chunks; ++c) {
      const auto cs = static_cast<std::size_t>(c);
      for (const Bytes b : buckets_of(sync.gradient_bytes[r][cs], sync.bucket_size)) {
        buckets[cs].push_back({b, sync.data_group, true});
      }
      if (sync.expert_gradient_bytes.empty()) continue;
      const auto& experts = sync.expert_gradient_bytes.at(r);
      if (cs >= experts.size()) continue;
      for (const Bytes b : buckets_of(experts[cs], sync.bucket_size)) buckets[cs].push_back({b, sync.expert_group});
    }
    const auto emit_reduce = [&](std::vector<Op>& out, int c) {
      for (const Bucket& b : buckets[static_cast<std::size_t>(c)]) {
        out.push_back(collective_op(collectives.reduction, b.group, b.bytes, c));
        if (b.dense && !sync.replica_group.empty()) {
          out.push_back(collective_op(OpKind::AllReduce, sync.replica_group,
                                      Bytes::bytes(b.bytes.count() / std::max(1, sync.shard_ranks)), c));
        }
      }
    };

    // Where each chunk's buckets go: after the last op that finishes its weight gradients, and
    // after the sends that follow that op; the end of the stream without overlap.
    std::vector<std::size_t> after(static_cast<std::size_t>(chunks), stream.size());
    if (sync.overlap) {
      for (std::size_t i = 0; i < stream.size(); ++i) {
        for (const Op& pass : compute_parts(stream[i])) {  // an F&B pair ends its backward's gradients
          if (!ends_weight_gradient(pass.kind) || pass.chunk >= chunks) continue;
          std::size_t end = i + 1;
          while (end < stream.size() && (is_send(stream[end].kind) || is_layer_collective(stream[end]))) ++end;
          after[pass.chunk] = end;
        }
      }
    }
    // Chunks whose buckets fall at one place go latest stage first (chunk v - 1 down to 0 in Megatron's
    // loop and the V). In a bidirectional schedule that is the stage the chunk holds, so that mirrored
    // ranks, whose chunks 0 and 1 hold each other's stages, issue every bucket in the same order.
    std::vector<int> latest_first(static_cast<std::size_t>(chunks));
    for (int c = 0; c < chunks; ++c) latest_first[static_cast<std::size_t>(c)] = chunks - 1 - c;
    if (plan::is_bidirectional(program.shape.kind) && static_cast<int>(r) >= program.shape.stages / 2) {
      std::reverse(latest_first.begin(), latest_first.end());
    }
    std::vector<Op> out;
    out.reserve(stream.size() + 8);
    const auto emit_gather = [&] {
      for (auto c = latest_first.rbegin(); c != latest_first.rend(); ++c) {
        for (const Bucket& b : buckets[static_cast<std::size_t>(*c)]) {
          const Bytes weights = Bytes::bytes(b.bytes.count() * sync.parameter_bytes / sync.gradient_bytes_per_parameter);
          out.push_back(collective_op(*collectives.after_step, b.group, weights, *c));
        }
      }
    };
    const bool gather_first = collectives.after_step && sync.overlap_param_gather;
    if (gather_first) emit_gather();
    for (std::size_t i = 0; i <= stream.size(); ++i) {
      for (const int c : latest_first) {
        if (after[static_cast<std::size_t>(c)] == i) emit_reduce(out, c);
      }
      if (i < stream.size()) out.push_back(stream[i]);
    }
    out.push_back(optimizer_step_op());
    if (collectives.after_step && !gather_first) emit_gather();
    stream = std::move(out);
  }
  return program;
}

ChunkGradientBytes chunk_gradient_split(const model::Model& model, const plan::Plan& plan) {
  const auto ranges = plan::virtual_stage_layers(plan, model);
  const bool split = splits_expert_gradients(plan);
  const int width = gradient_bytes_per_parameter(plan.grad_reduce_in_fp32, model.dtype_bytes);
  ChunkGradientBytes out;
  out.dense.resize(static_cast<std::size_t>(plan.degrees[plan::Axis::Pipeline]));
  out.experts.resize(static_cast<std::size_t>(plan.degrees[plan::Axis::Pipeline]));
  for (int rank = 0; rank < plan.degrees[plan::Axis::Pipeline]; ++rank) {
    for (int c = 0; c < plan.virtual_stages; ++c) {
      const plan::LayerRange r = ranges.at(
          static_cast<std::size_t>(plan::virtual_stage_of(plan.schedule, plan.degrees[plan::Axis::Pipeline], rank, c)));
      std::int64_t dense = 0, experts = 0;
      for (int i = r.first; i < r.last; ++i) {
        const model::Layer& layer = model.layers[static_cast<std::size_t>(i)];
        const std::int64_t here =
            layer.expert_parameters / (plan.degrees[plan::Axis::Expert] * plan.degrees[plan::Axis::ExpertTensor]);
        dense += (layer.parameters - layer.expert_parameters) / plan.degrees[plan::Axis::Tensor] + (split ? 0 : here);
        experts += split ? here : 0;
      }
      out.dense[static_cast<std::size_t>(rank)].push_back(Bytes::bytes(dense * width));
      out.experts[static_cast<std::size_t>(rank)].push_back(Bytes::bytes(experts * width));
    }
  }
  return out;
}

Bytes default_gradient_bucket(const plan::Plan& plan, int dtype_bytes) noexcept {
  const std::int64_t parameters = std::max<std::int64_t>(40'000'000, 1'000'000LL * plan.degrees[plan::Axis::Data]);
  return Bytes::bytes(parameters * gradient_bytes_per_parameter(plan.grad_reduce_in_fp32, dtype_bytes));
}

Program compute_program(const plan::Plan& plan) {
  return plan.overlap_moe_expert_comm ? make_combined_1f1b(shape_of(plan)) : make_program(shape_of(plan));
}

Program plan_program(const model::Model& model, const plan::Plan& plan, GradientSync sync, const Program* compute) {
  sync.zero = plan.zero;
  sync.data_parallel = plan.degrees[plan::Axis::Data] * plan.degrees[plan::Axis::Context] > 1 ||
                       reduces_expert_gradients(plan) || plan::is_bidirectional(plan.schedule);
  sync.data_group = dense_shard_group(plan);
  sync.expert_group = expert_replica_group(plan);
  if (plan.degrees[plan::Axis::DataReplica] > 1) {
    sync.replica_group = plan::Axis::DataReplica;
    sync.shard_ranks = dense_shard_ranks(plan);
  }
  sync.overlap_param_gather = plan.overlap_param_gather;
  sync.parameter_bytes = gathered_parameter_bytes(plan.fp8_param_gather, model.dtype_bytes);
  sync.gradient_bytes_per_parameter = gradient_bytes_per_parameter(plan.grad_reduce_in_fp32, model.dtype_bytes);
  Program lowered = add_layer_collectives(lower_comm(compute != nullptr ? *compute : compute_program(plan)),
                                          chunk_layer_collectives(model, plan), plan.overlap_tensor_comm);
  return add_gradient_sync(std::move(lowered), sync);
}

}  // namespace mpsim::schedule
