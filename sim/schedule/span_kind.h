#pragma once
/// The trace span an instruction becomes: one mapping for the simulator and the executor, so a
/// predicted and a measured trace name the same op the same way. Header-only (the trace types are).
#include "sim/schedule/program.h"
#include "sim/trace/timeline.h"

namespace mpsim::schedule {

[[nodiscard]] constexpr trace::SpanKind span_kind(OpKind k) noexcept {
  switch (k) {
    case OpKind::Forward: return trace::SpanKind::Forward;
    case OpKind::Backward: return trace::SpanKind::Backward;
    case OpKind::BackwardInput: return trace::SpanKind::BackwardInput;
    case OpKind::BackwardWeight: return trace::SpanKind::BackwardWeight;
    case OpKind::SendActivation:
    case OpKind::SendGrad: return trace::SpanKind::Send;
    case OpKind::RecvActivation:
    case OpKind::RecvGrad: return trace::SpanKind::Recv;
    case OpKind::AllReduce: return trace::SpanKind::AllReduce;
    case OpKind::ReduceScatter: return trace::SpanKind::ReduceScatter;
    case OpKind::AllGather: return trace::SpanKind::AllGather;
    case OpKind::AllToAll: return trace::SpanKind::AllToAll;
    case OpKind::OptimizerStep: return trace::SpanKind::Optimizer;
    case OpKind::ForwardBackward: return trace::SpanKind::ForwardBackward;
  }
  return trace::SpanKind::Forward;
}

}  // namespace mpsim::schedule
