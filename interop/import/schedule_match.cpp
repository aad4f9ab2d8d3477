#include "interop/import/schedule_match.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "sim/schedule/generators.h"

namespace mpsim::interop {
namespace {

using plan::ScheduleKind;
using schedule::Op;
using schedule::PipelineShape;
using schedule::Program;

/// A rank's compute ops, as a CSV carries them (no optimizer step).
std::vector<Op> compute_ops(const std::vector<Op>& stream) {
  std::vector<Op> out;
  for (const Op& op : stream) {
    if (schedule::is_compute(op.kind) && op.kind != schedule::OpKind::OptimizerStep) out.push_back(op);
  }
  return out;
}

bool same_order(const Program& generated, const Program& order) {
  if (generated.streams.size() != order.streams.size()) return false;
  for (std::size_t r = 0; r < order.streams.size(); ++r) {
    if (compute_ops(generated.streams[r]) != compute_ops(order.streams[r])) return false;
  }
  return true;
}

/// The shapes to try, in the order of preference above. The parameters not of a kind keep the values
/// a resolved plan gives them (plan_check.h: 1, 3 and 1).
std::vector<PipelineShape> candidates(const PipelineShape& order) {
  const int p = order.stages;
  const int m = order.microbatches;
  const plan::ChunkLayout layout = plan::is_v_shaped(order.kind) ? plan::ChunkLayout::V
                                   : order.chunks > 1           ? plan::ChunkLayout::Looped
                                                                : plan::ChunkLayout::One;
  std::vector<PipelineShape> out;
  auto add = [&](ScheduleKind kind, int group = 1, int active = 3, int limit = 1) {
    PipelineShape s{p, m, order.chunks, kind, group, active, limit};
    if (!schedule::shape_error(s)) out.push_back(s);
  };
  for (const plan::ScheduleTraits& t : plan::kScheduleTraits) {
    // An order holds each stage once: a bidirectional schedule holds each twice.
    if (t.chunks != layout || t.bidirectional) continue;
    switch (t.rule) {
      case plan::ShapeRule::None:
      case plan::ShapeRule::VShape: add(t.kind); break;
      case plan::ShapeRule::MicrobatchGroup:
        add(t.kind, p);
        for (int group = 1; group <= m; ++group) {
          if (group != p) add(t.kind, group);
        }
        break;
      case plan::ShapeRule::MemoryLimit:
        // zb-auto's limit, in microbatches' activations: p (the default, ZB-1p) up to 2p (ZB-2p, no
        // bubble), then below p.
        for (int limit = p; limit <= 2 * p; ++limit) add(t.kind, 1, 3, limit);
        for (int limit = 1; limit < p; ++limit) add(t.kind, 1, 3, limit);
        break;
      case plan::ShapeRule::ActiveCap:
        // SageMaker's in-flight cap: its default p + 2 first. Backward-first keeps fewer than 3p
        // microbatches in flight, so a larger cap gives the same order (checked for p <= 8, m <= 48).
        add(t.kind, 1, p + 2);
        for (int active = 1; active <= std::min(p + m, 3 * p); ++active) {
          if (active != p + 2) add(t.kind, 1, active);
        }
        break;
    }
  }
  return out;
}

}  // namespace

std::optional<PipelineShape> matching_schedule(const Program& order) {
  // Only the zero-bubble family splits a backward into its input and weight halves.
  bool split = false;
  for (const std::vector<Op>& stream : order.streams) {
    for (const Op& op : stream) split = split || op.kind == schedule::OpKind::BackwardInput;
  }
  for (const PipelineShape& shape : candidates(order.shape)) {
    if (split && !schedule::splits_backward(shape.kind)) continue;
    try {
      if (same_order(schedule::make_program(shape), order)) return shape;
    } catch (const std::invalid_argument&) {
      // A shape this generator refuses beyond shape_error's rules: not the order's schedule.
    }
  }
  return std::nullopt;
}

}  // namespace mpsim::interop
