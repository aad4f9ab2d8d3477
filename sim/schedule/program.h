#pragma once
/// The schedule IR: one ordered instruction stream per pipeline rank.
///
/// Every pipeline schedule is a generator (generators.h) that emits a Program; the simulator
/// replays it and the executor runs it, so schedule logic exists once. A Program holds no times.
///
/// Ranks: stream `s` is the program of pipeline rank `s`. With tensor, context and data parallelism,
/// every GPU of pipeline rank `s` runs stream `s`; collectives name the axes of the group they run
/// over (Op::group), and the plan's layout resolves groups to devices.
///
/// Chunks: with virtual stages, pipeline rank `s` holds model chunks `c = 0..chunks-1`, and chunk
/// `c` of rank `s` is virtual stage `c * stages + s` (Megatron's placement: rank 0 holds layers of
/// virtual stages 0, p, 2p, ...), or for the V-shaped schedules chunk 1 of rank `s` is virtual stage
/// 2p - 1 - s (virtual_stage.h). A microbatch's forward runs through virtual stages 0..p*v-1 and
/// its backward back down.
///
/// Semantics both consumers follow:
/// - Compute ops (Forward, Backward, BackwardInput, BackwardWeight, ForwardBackward, OptimizerStep)
///   run one at a time in stream order; the next op of the stream is issued when a compute op ends.
/// - A Send is issued and the stream moves on; its transfer starts at once (eager).
/// - A Recv blocks the stream until the matching Send's data has arrived.
/// - A collective runs on the stream its `stream` field names (CommStream): gradient collectives are
///   issued and the stream moves on, a rank's run one at a time in order, and OptimizerStep waits for
///   all of them; in-layer collectives either block the compute stream (Blocking) or run beside the
///   compute op that follows them, which then ends no earlier than they do (Overlapped).
/// - `count` identical collectives run back to back as one op (a chunk's layers' all-reduces).
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/traits_table.h"
#include "sim/core/units.h"
#include "sim/plan/plan.h"
#include "sim/trace/timeline.h"

namespace mpsim::schedule {

enum class OpKind : std::uint8_t {
  Forward,         ///< F: forward pass of (microbatch, chunk)
  Backward,        ///< B: fused backward (input and weight gradients)
  BackwardInput,   ///< I: input-gradient half (zero-bubble schedules)
  BackwardWeight,  ///< W: weight-gradient half
  SendActivation,  ///< to the next virtual stage's rank
  RecvActivation,  ///< from the previous virtual stage's rank
  SendGrad,        ///< to the previous virtual stage's rank
  RecvGrad,        ///< from the next virtual stage's rank
  AllReduce,       ///< collective over `group`, `bytes` per rank
  ReduceScatter,
  AllGather,
  AllToAll,        ///< each member sends bytes / n to every other member (MoE token dispatch and combine)
  OptimizerStep,
  ForwardBackward, ///< F&B: a forward beside the fused backward of another (microbatch, chunk), one op
                   ///< (an F&B pair); `microbatch`/`chunk` are the forward's
};
inline constexpr std::size_t kOpKindCount = 14;

/// What an op does, as the simulator and the executor run it (the semantics above).
enum class OpClass : std::uint8_t {
  Pass,       ///< a pass of a model chunk: F, B, I, W, F&B
  Optimizer,  ///< the optimizer step
  Send,
  Recv,
  Collective,  ///< a collective over `group` (engine::kCollectiveTraits says which)
};

struct OpTraits {
  OpKind kind;
  std::string_view name;  ///< the enumerator's name: "Forward", "SendGrad", ...
  /// to_text's notation: with `numbered`, the letters before the microbatch ("F", "sA"), else the whole
  /// op ("AR", "OPT"); an F&B pair is written as its two passes.
  std::string_view text;
  bool numbered;  ///< about one (microbatch, chunk)
  OpClass op_class;
  trace::SpanKind span;  ///< the trace span it becomes, in the simulator's and the executor's traces alike
};

/// One row per OpKind, in the enum's order.
inline constexpr std::array<OpTraits, kOpKindCount> kOpTraits{{
    // kind, name, text, numbered, class, span
    {OpKind::Forward, "Forward", "F", true, OpClass::Pass, trace::SpanKind::Forward},
    {OpKind::Backward, "Backward", "B", true, OpClass::Pass, trace::SpanKind::Backward},
    {OpKind::BackwardInput, "BackwardInput", "I", true, OpClass::Pass, trace::SpanKind::BackwardInput},
    {OpKind::BackwardWeight, "BackwardWeight", "W", true, OpClass::Pass, trace::SpanKind::BackwardWeight},
    {OpKind::SendActivation, "SendActivation", "sA", true, OpClass::Send, trace::SpanKind::Send},
    {OpKind::RecvActivation, "RecvActivation", "rA", true, OpClass::Recv, trace::SpanKind::Recv},
    {OpKind::SendGrad, "SendGrad", "sG", true, OpClass::Send, trace::SpanKind::Send},
    {OpKind::RecvGrad, "RecvGrad", "rG", true, OpClass::Recv, trace::SpanKind::Recv},
    {OpKind::AllReduce, "AllReduce", "AR", false, OpClass::Collective, trace::SpanKind::AllReduce},
    {OpKind::ReduceScatter, "ReduceScatter", "RS", false, OpClass::Collective, trace::SpanKind::ReduceScatter},
    {OpKind::AllGather, "AllGather", "AG", false, OpClass::Collective, trace::SpanKind::AllGather},
    {OpKind::AllToAll, "AllToAll", "A2A", false, OpClass::Collective, trace::SpanKind::AllToAll},
    {OpKind::OptimizerStep, "OptimizerStep", "OPT", false, OpClass::Optimizer, trace::SpanKind::Optimizer},
    {OpKind::ForwardBackward, "ForwardBackward", "F", true, OpClass::Pass, trace::SpanKind::ForwardBackward},
}};
static_assert(core::rows_in_enum_order(kOpTraits), "kOpTraits: one row per OpKind, in the enum's order");

[[nodiscard]] constexpr const OpTraits& traits(OpKind k) noexcept { return kOpTraits[static_cast<std::size_t>(k)]; }
[[nodiscard]] constexpr std::string_view to_string(OpKind k) noexcept { return traits(k).name; }
/// A pass or the optimizer step: what runs one at a time on the compute stream.
[[nodiscard]] constexpr bool is_compute(OpKind k) noexcept {
  return traits(k).op_class == OpClass::Pass || traits(k).op_class == OpClass::Optimizer;
}
/// A pass of a model chunk (compute other than the optimizer step).
[[nodiscard]] constexpr bool is_pass(OpKind k) noexcept { return traits(k).op_class == OpClass::Pass; }
[[nodiscard]] constexpr bool is_send(OpKind k) noexcept { return traits(k).op_class == OpClass::Send; }
[[nodiscard]] constexpr bool is_recv(OpKind k) noexcept { return traits(k).op_class == OpClass::Recv; }
[[nodiscard]] constexpr bool is_collective(OpKind k) noexcept { return traits(k).op_class == OpClass::Collective; }
/// The trace span an instruction becomes: one mapping for the simulator and the executor, so a
/// predicted and a measured trace name the same op the same way.
[[nodiscard]] constexpr trace::SpanKind span_kind(OpKind k) noexcept { return traits(k).span; }

/// Where a collective runs and what waits for it.
enum class CommStream : std::uint8_t {
  Gradient,    ///< the rank's collective stream (gradient reduction, parameter gathers); OptimizerStep joins it
  Blocking,    ///< inside a layer, on the compute stream: the stream waits (Megatron's TP all-reduce)
  Overlapped,  ///< inside a layer, beside the next compute op, which ends no earlier (--tp-comm-overlap)
};
[[nodiscard]] std::string_view to_string(CommStream s) noexcept;
[[nodiscard]] constexpr bool is_in_layer(CommStream s) noexcept { return s != CommStream::Gradient; }

inline constexpr std::uint32_t kNoPeer = 0xFFFFFFFFu;

struct Op {
  OpKind kind = OpKind::Forward;
  CommStream stream = CommStream::Gradient;  ///< collectives only
  std::uint16_t chunk = 0;        ///< model chunk on this rank (virtual_stage.h names its virtual stage)
  std::uint32_t microbatch = 0;   ///< unused by gradient collectives and OptimizerStep
  std::uint32_t peer = kNoPeer;   ///< Send/Recv: the other pipeline rank
  plan::AxisSet group = plan::Axis::Data;  ///< collectives only: the axes the group spans (Layout::group)
  std::uint16_t count = 1;        ///< collectives only: identical collectives back to back
  std::uint32_t backward_microbatch = 0;  ///< ForwardBackward only: its backward's microbatch
  std::uint16_t backward_chunk = 0;       ///< ForwardBackward only: its backward's chunk
  Bytes bytes;                    ///< collectives only: buffer per rank and collective (a gradient bucket,
                                  ///< a layer's output); all-gather: the gathered size

  friend bool operator==(const Op&, const Op&) = default;
};

/// The passes a compute op runs, in order: the op itself, or an F&B pair's forward then its fused
/// backward (each as a Forward or Backward op of its own microbatch and chunk).
struct ComputeParts {
  std::array<Op, 2> ops;
  std::size_t size = 0;
  [[nodiscard]] const Op* begin() const noexcept { return ops.data(); }
  [[nodiscard]] const Op* end() const noexcept { return ops.data() + size; }
};
[[nodiscard]] constexpr ComputeParts compute_parts(const Op& op) noexcept {
  ComputeParts parts;
  if (op.kind != OpKind::ForwardBackward) {
    parts.ops[0] = op;
    parts.size = 1;
    return parts;
  }
  parts.ops[0].kind = OpKind::Forward;
  parts.ops[0].microbatch = op.microbatch;
  parts.ops[0].chunk = op.chunk;
  parts.ops[1].kind = OpKind::Backward;
  parts.ops[1].microbatch = op.backward_microbatch;
  parts.ops[1].chunk = op.backward_chunk;
  parts.size = 2;
  return parts;
}

/// What a generator needs to know: a pure function of these values gives the Program.
struct PipelineShape {
  int stages = 1;                       ///< p: pipeline ranks
  int microbatches = 1;                 ///< m: per pipeline per step
  int chunks = 1;                       ///< v: virtual stages per rank
  plan::ScheduleKind kind = plan::ScheduleKind::OneFOneB;
  int microbatch_group_size = 1;        ///< interleaved-1f1b: Megatron's microbatch_group_size_per_vp_stage
  int active_microbatches = 3;          ///< sagemaker-interleaved: in-flight cap
  int memory_limit = 1;                 ///< zb-auto: activations held at most, in microbatches
  friend auto operator<=>(const PipelineShape&, const PipelineShape&) = default;
};

/// The shape a complete plan implies.
[[nodiscard]] PipelineShape shape_of(const plan::Plan& plan) noexcept;
/// The shape a plan as written implies, with resolve_plan()'s defaults for what it leaves out
/// (plan::microbatch_group_size_of, plan::active_microbatches_of; one microbatch when unset).
[[nodiscard]] PipelineShape shape_of(const plan::PlanSpec& spec) noexcept;

struct Program {
  PipelineShape shape;
  std::vector<std::vector<Op>> streams;  ///< streams[rank] in issue order
  friend bool operator==(const Program&, const Program&) = default;
};

/// "F0 F1 B0 ..." per rank, one line each, in PyTorch's action letters: F forward, B fused backward,
/// I backward-input, W backward-weight, an F&B pair "F7&B3"; with chunks > 1 the chunk follows a dot
/// ("F3.1", "F7.0&B3.1"). With
/// `with_comm`, communication appears too: "sA0" / "rA0" (activation), "sG0" / "rG0" (gradient),
/// "AR" / "RS" / "AG" (collectives; in-layer ones add their group and count, "AR:tp*4"), and "OPT".
[[nodiscard]] std::string to_text(const Program& program, bool with_comm = false);

/// One op in the notation of to_text(Program, true): "F3", "I3.1" (with `with_chunk`), "rG0", "AR", "OPT".
[[nodiscard]] std::string to_text(const Op& op, bool with_chunk);

}  // namespace mpsim::schedule
