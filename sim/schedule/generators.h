#pragma once
/// Schedule generators: pure functions from a PipelineShape to a Program.
///
/// A generator emits compute ops only (Forward, Backward, or BackwardInput + BackwardWeight, and
/// ForwardBackward pairs in the schedules that overlap two passes), in issue order per rank; the passes
/// (passes.h) add the rest: lower_comm() the point-to-point transfers, add_layer_collectives() the
/// collectives inside the passes and add_gradient_sync() the data-parallel collectives and the
/// optimizer step. The Program's shape is the input shape with `kind` set to the generator's
/// schedule. Every generator runs in O(p * m * v) time,
/// except make_sagemaker_interleaved: O(p * (m + p) * active_microbatches) for its replay.
///
/// Preconditions: shape_error(shape with kind set to the generator's) is empty. The plan checker
/// validates user input, so a violation is a bug in the caller: the generators throw
/// std::invalid_argument with shape_error's message.
#include <optional>
#include <string>
#include <vector>

#include "sim/schedule/program.h"

namespace mpsim::schedule {

/// Why a generator cannot take `shape`, or nothing when it can:
/// - stages, microbatches and chunks are at least 1 (and chunks fit the op's 16-bit field);
/// - chunks > 1 only with interleaved-1f1b, exactly 2 with the V schedules (plan::ChunkLayout::V), and
///   at least plan::minimum_microbatches;
/// - interleaved-1f1b, N = microbatch_group_size: N >= m (one group), or Megatron's rules
///   p <= N and (m % N == 0 or m % N >= p). Smaller groups make the warm-up deadlock (Megatron
///   rejects them too); the rule is sufficient, checked exhaustively for p <= 12, m <= 36, v <= 5;
/// - sagemaker-interleaved: active_microbatches >= 1.
[[nodiscard]] std::optional<std::string> shape_error(const PipelineShape& shape);

/// GPipe (SageMaker `simple`): every rank runs F0 .. F(m-1), then B0 .. B(m-1).
[[nodiscard]] Program make_gpipe(const PipelineShape& shape);

/// 1F1B (PipeDream-Flush, Megatron non-interleaved): rank i runs w = min(p - i - 1, m) forwards,
/// then m - w times "F(w + k) B(k)", then the remaining backwards in order.
[[nodiscard]] Program make_1f1b(const PipelineShape& shape);

/// One entry of Megatron's virtual-microbatch table.
struct VirtualMicrobatch {
  int microbatch = 0;
  int chunk = 0;
  friend bool operator==(const VirtualMicrobatch&, const VirtualMicrobatch&) = default;
};

/// Megatron's `get_schedule_table`: for each group of `group_size` consecutive microbatches,
/// chunk 0 of the group, then chunk 1 of the same group, ... chunk v-1. When N does not divide m,
/// the last group holds the m mod N microbatches left and is laid out over the chunks the same way.
/// Size m * v. Example m = 5, v = 2, N = 3: microbatch 0 1 2 0 1 2 3 4 3 4, chunk 0 0 0 1 1 1 0 0 1 1.
/// Throws std::invalid_argument when group_size < 1 or a count is negative.
[[nodiscard]] std::vector<VirtualMicrobatch> virtual_microbatch_table(int microbatches, int chunks, int group_size);

/// Megatron interleaved 1F1B with N = microbatch_group_size: forward k runs table[k], backward k
/// runs (table[k].microbatch, v - 1 - table[k].chunk). Rank i warms up with
/// w = (p - i - 1) * 2 + (v - 1) * N forwards, capped at m * v (then it is all forwards, then all
/// backwards); then "F(w + k) B(k)" and the remaining backwards.
[[nodiscard]] Program make_interleaved_1f1b(const PipelineShape& shape);

/// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm, schedules.py): the interleaved
/// order with one more warmup forward per rank, so that each steady-state forward and the backward
/// after it belong to different microbatches, and that pair as one ForwardBackward op, whose layers
/// Megatron interleaves so that one microbatch's expert all-to-alls run under the other's compute.
/// With one stage (no pipeline schedule; 1f1b, gpipe or interleaved) it is F0, F1&B0, ..., B(m-1).
/// Throws std::invalid_argument on a pipeline (stages > 1) unless interleaved with chunks >= 2.
[[nodiscard]] Program make_combined_1f1b(const PipelineShape& shape);

/// ZB-H1 (Zero Bubble, handcrafted, 1F1B memory): the 1F1B order with B as BackwardInput (I);
/// W(j) right after I(j + i) on rank i; the remaining W at the end, in order.
[[nodiscard]] Program make_zb_h1(const PipelineShape& shape);

/// ZB-H2 (Zero Bubble, handcrafted, twice 1F1B's memory): min(2(p - i) - 1, m) forwards; then for
/// k = 0 .. m-1: I(k), W(k - 2i) when k >= 2i, the next forward not yet issued (if any); then the
/// remaining W in order.
[[nodiscard]] Program make_zb_h2(const PipelineShape& shape);

/// SageMaker `interleaved`: backward first, at most `active_microbatches` microbatches in flight on
/// a rank (forwarded, backward not yet done). The rule is dynamic; this function makes it pure by
/// replaying it with unit costs (forward 1, backward 2, no communication time): whenever a rank is
/// free it runs the lowest ready backward, else the next forward if its input has arrived and the
/// rank is under the cap, else it waits. The Program is the order that replay produces.
[[nodiscard]] Program make_sagemaker_interleaved(const PipelineShape& shape);

/// ZB-V (Zero Bubble, section 6; PyTorch's ScheduleZBVZeroBubble), two chunks per rank in a V. Rank i
/// warms up with 2(p - i) - 1 forwards of chunk 0, then i times "F1 F0", then p - i times "F1 I1 W1";
/// then, while forwards remain, "F0 I0 W0 F1 I1 W1" (F0 only while chunk 0 has forwards left); then i
/// times "I0 I1", p - i times "I0 W0", and the weight passes left (chunk 1's, then chunk 0's). The
/// pattern is laid out for max(m, 2p - 1) microbatches and the passes of those past m left out. With
/// equal F, I and W and no communication its bubble is 0 at 1F1B's peak activation memory.
[[nodiscard]] Program make_zb_v(const PipelineShape& shape);

/// DualPipeV (DeepSeek-V3; github.com/deepseek-ai/DualPipe), two chunks per rank in a V, m >= 2p.
/// Rank i, with t = p - i - 1: 2t forwards of chunk 0; i + 1 times "F0 F1"; t times "I1 W F1"; then
/// m - 2p + i + 1 times the overlapped pairs "F0&B1 F1&B0"; t times "B1 F1&B0"; i + 1 times
/// "B1 B0", whose backwards split off their weight pass from half-way; t times "W I0"; i + 1 times
/// "W". W runs the oldest weight pass pending. A pair "F&B" is one ForwardBackward op (the forward beside
/// a fused backward), except the last rank's first, whose backward needs that very forward.
[[nodiscard]] Program make_dualpipe_v(const PipelineShape& shape);

/// DualPipe (DeepSeek-V3's bidirectional schedule; dualpipe.py), p even, m even and >= 2p. Microbatches
/// 0 .. m/2 - 1 run chunk 0 of ranks 0 .. p - 1, microbatches m/2 .. m - 1 chunk 1 of ranks p - 1 .. 0
/// (is_bidirectional). Rank r runs the order DualPipeV on p/2 ranks and m/2 microbatches gives its rank
/// min(r, p - 1 - r), as the reference computes it from that half rank: the V's first leg is the
/// direction that enters at the nearer end (chunk 0 on ranks below p/2, chunk 1 above), its second leg
/// the other. With equal F, I, W and no communication its bubble is DualPipeV's on p/2 ranks.
[[nodiscard]] Program make_dualpipe(const PipelineShape& shape);

/// Zero Bubble's automatic schedule (arXiv 2401.10241, section 3.1; the reference repository's
/// heuristic), one chunk per rank, split backward, at most shape.memory_limit microbatches' activations
/// held per rank (from a microbatch's F until its W). Greedy, round by round: warm-up forwards as
/// memory allows before the first backward comes back, then per round a forward (skipped where it would
/// delay the next stage's backward) and an input gradient on every stage, weight passes filling the gaps
/// and freeing memory; the best of the heuristic's 8 switch settings. Unit times (F = I = W, no
/// communication), so the order is a function of the shape: with limit p it is ZB-1p (1F1B's memory),
/// with 2p ZB-2p, bubble 0.
[[nodiscard]] Program make_zb_auto(const PipelineShape& shape);

/// V-Half and V-Min ("Pipeline Parallelism with Controllable Memory", Qi et al., arXiv 2405.15362; the
/// repository's zbv_greedy.py): two chunks per rank in a V, split backward, each microbatch's F0, F1,
/// I1, I0 at fixed slots of a building block repeated every 6 slots (v_memory.cpp gives them), the
/// weight passes in the free slots (chunk 1's first) and the rest at the end; a rank's order is its
/// passes by slot. The block's lifespan holds about (p + 2) / 2 (V-Half) or (p + 4) / 3 (V-Min)
/// microbatches' activations. As the repository, warm-up and cool-down are then squeezed greedily
/// into earlier free slots within that peak.
[[nodiscard]] Program make_v_half(const PipelineShape& shape);
[[nodiscard]] Program make_v_min(const PipelineShape& shape);

/// Whether the schedule splits the backward into BackwardInput and BackwardWeight (the zero-bubble
/// family) rather than running it fused (its traits row).
[[nodiscard]] constexpr bool splits_backward(plan::ScheduleKind kind) noexcept { return plan::traits(kind).splits_backward; }

/// The generator of `shape.kind`.
[[nodiscard]] Program make_program(const PipelineShape& shape);

}  // namespace mpsim::schedule
