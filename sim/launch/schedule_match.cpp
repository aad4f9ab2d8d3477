#include "sim/launch/schedule_match.h"

#include <algorithm>
#include <stdexcept>
#include <vector>

#include "sim/schedule/generators.h"

namespace mpsim::launch {
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
  std::vector<PipelineShape> out;
  auto add = [&](ScheduleKind kind, int group = 1, int active = 3, int limit = 1) {
    PipelineShape s{p, m, order.chunks, kind, group, active, limit};
    if (!schedule::shape_error(s)) out.push_back(s);
  };
  if (plan::is_v_shaped(order.kind)) {
    for (const ScheduleKind k : {ScheduleKind::ZbV, ScheduleKind::DualPipeV, ScheduleKind::VHalf, ScheduleKind::VMin}) {
      add(k);
    }
  } else if (order.chunks > 1) {
    add(ScheduleKind::Interleaved1F1B, p);
    for (int group = 1; group <= m; ++group) {
      if (group != p) add(ScheduleKind::Interleaved1F1B, group);
    }
  } else {
    for (const ScheduleKind k : {ScheduleKind::OneFOneB, ScheduleKind::GPipe, ScheduleKind::ZbH1, ScheduleKind::ZbH2}) {
      add(k);
    }
    // zb-auto's limit, in microbatches' activations: p (the default, ZB-1p) up to 2p (ZB-2p, no bubble),
    // then below p.
    for (int limit = p; limit <= 2 * p; ++limit) add(ScheduleKind::ZbAuto, 1, 3, limit);
    for (int limit = 1; limit < p; ++limit) add(ScheduleKind::ZbAuto, 1, 3, limit);
    // SageMaker's in-flight cap: its default p + 2 first. Backward-first keeps fewer than 3p microbatches in
    // flight, so a larger cap gives the same order (checked for p <= 8, m <= 48).
    add(ScheduleKind::SageMakerInterleaved, 1, p + 2);
    for (int active = 1; active <= std::min(p + m, 3 * p); ++active) {
      if (active != p + 2) add(ScheduleKind::SageMakerInterleaved, 1, active);
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

}  // namespace mpsim::launch
