#include "sim/engine/timeline_recorder.h"

#include <fmt/format.h>

#include "sim/schedule/program.h"
#include "sim/schedule/report_parts.h"

namespace mpsim::engine {

std::uint32_t TimelineRecorder::add_lane(std::string process, std::string thread) {
  timeline_.lanes.push_back({std::move(process), std::move(thread)});
  return static_cast<std::uint32_t>(timeline_.lanes.size() - 1);
}

void TimelineRecorder::actor_added(int actor, int /*rank*/, int /*replica*/, topology::DeviceId device,
                                   const std::vector<int>& /*members*/) {
  const topology::Device& info = cluster_.device(device);
  const std::string process = fmt::format("node{}", info.node);
  const auto threads = schedule::device_lane_threads(info.name.substr(info.name.find('/') + 1));
  if (actor_lanes_.size() <= static_cast<std::size_t>(actor)) actor_lanes_.resize(static_cast<std::size_t>(actor) + 1);
  Lanes& l = actor_lanes_[static_cast<std::size_t>(actor)];
  l.compute = add_lane(process, threads[0]);
  l.send = add_lane(process, threads[1]);
  l.recv = add_lane(process, threads[2]);
  l.collective = add_lane(process, threads[3]);
  l.process = process;
  l.layer_thread = threads[4];
}

void TimelineRecorder::add_span(std::uint32_t lane, trace::SpanKind kind, const OpEvent& e, bool with_microbatch) {
  trace::Span span;
  span.lane = lane;
  span.kind = kind;
  span.start_ns = e.start_ns;
  span.end_ns = e.end_ns;
  if (with_microbatch) {
    span.microbatch = static_cast<std::int32_t>(e.op->microbatch);
    span.chunk = e.op->chunk;
  }
  span.stage = e.stage;
  span.bytes = e.bytes;
  span.op = static_cast<std::int32_t>(e.op_index);
  timeline_.spans.push_back(span);
}

void TimelineRecorder::compute_ran(const OpEvent& e) {
  add_span(actor_lanes_[static_cast<std::size_t>(e.actor)].compute, schedule::span_kind(e.op->kind), e,
           e.op->kind != schedule::OpKind::OptimizerStep);
}

void TimelineRecorder::recv_waited(const OpEvent& e) {
  add_span(actor_lanes_[static_cast<std::size_t>(e.actor)].recv, trace::SpanKind::Recv, e, true);
}

void TimelineRecorder::send_done(const OpEvent& e) {
  add_span(actor_lanes_[static_cast<std::size_t>(e.actor)].send, trace::SpanKind::Send, e, true);
}

void TimelineRecorder::collective_done(const OpEvent& e) {
  Lanes& l = actor_lanes_[static_cast<std::size_t>(e.actor)];
  const bool in_layer = schedule::is_in_layer(e.op->stream);
  if (!in_layer) {
    add_span(l.collective, schedule::span_kind(e.op->kind), e, false);
    return;
  }
  if (e.end_ns <= e.start_ns) return;  // nothing to draw
  if (!l.layer) l.layer = add_lane(l.process, l.layer_thread);
  add_span(*l.layer, schedule::span_kind(e.op->kind), e, true);
}

void TimelineRecorder::link_used(std::size_t link, std::int64_t start_ns, std::int64_t end_ns, std::int64_t bytes) {
  if (!traced_links_.empty() && (link >= traced_links_.size() || !traced_links_[link])) return;
  auto lane = link_lanes_.find(link);
  if (lane == link_lanes_.end()) {
    const topology::Link& l = cluster_.links()[link];
    const int node = cluster_.device(l.a).node >= 0 ? cluster_.device(l.a).node : cluster_.device(l.b).node;
    lane = link_lanes_.emplace(link, add_lane(node >= 0 ? fmt::format("node{}", node) : "fabric", l.name)).first;
  }
  trace::Span span;
  span.lane = lane->second;
  span.kind = trace::SpanKind::Transfer;
  span.start_ns = start_ns;
  span.end_ns = end_ns;
  span.bytes = bytes;
  timeline_.spans.push_back(span);
}

}  // namespace mpsim::engine
