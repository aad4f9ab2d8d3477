#pragma once
/// What happened, and when: spans on lanes (a device stream or a link). The simulator writes a
/// predicted Timeline and the executor a measured one; the viewer and `compare` read both.
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/core/traits_table.h"

namespace mpsim::trace {

enum class SpanKind : std::uint8_t {
  Forward,
  Backward,
  BackwardInput,
  BackwardWeight,
  Send,
  Recv,
  AllReduce,
  ReduceScatter,
  AllGather,
  AllToAll,
  Optimizer,
  Transfer,         ///< traffic on a link
  ForwardBackward,  ///< an F&B pair: one microbatch's forward beside another's backward, one span
};
inline constexpr std::size_t kSpanKindCount = 13;

/// The viewer's legend entries: a group is drawn in one colour (gui/kind_style.h), and the four
/// collectives share one.
enum class SpanGroup : std::uint8_t {
  Forward,
  Backward,
  BackwardInput,
  BackwardWeight,
  Send,
  Recv,
  Collective,
  Optimizer,
  Transfer,
  ForwardBackward,
};
inline constexpr std::size_t kSpanGroupCount = 10;

struct SpanTraits {
  SpanKind kind;
  std::string_view word;   ///< the Chrome trace's `cat`, which trace_reader reads back
  std::string_view label;  ///< the viewer's name for it (tooltips): "all-reduce", "receive", ...
  /// The span's name in a Chrome trace: with `numbered`, the letters its microbatch and chunk follow
  /// ("F3.0", "send 3.0"), else the whole name.
  std::string_view trace_name;
  std::string_view bar;  ///< the viewer's bar label, likewise ("F3", "S3", "AR"); empty: none
  bool numbered;         ///< about one microbatch: its name carries the microbatch and chunk
  bool compute;          ///< a GPU's computation; else data moving (a transfer, a collective, a link's traffic)
  SpanGroup group;
};

/// One row per SpanKind, in the enum's order.
inline constexpr std::array<SpanTraits, kSpanKindCount> kSpanTraits{{
    // kind, word, label, trace_name, bar, numbered, compute, group
    {SpanKind::Forward, "forward", "forward", "F", "F", true, true, SpanGroup::Forward},
    {SpanKind::Backward, "backward", "backward", "B", "B", true, true, SpanGroup::Backward},
    {SpanKind::BackwardInput, "backward-input", "backward-input", "I", "I", true, true, SpanGroup::BackwardInput},
    {SpanKind::BackwardWeight, "backward-weight", "backward-weight", "W", "W", true, true, SpanGroup::BackwardWeight},
    {SpanKind::Send, "send", "send", "send ", "S", true, false, SpanGroup::Send},
    {SpanKind::Recv, "recv", "receive", "recv ", "R", true, false, SpanGroup::Recv},
    {SpanKind::AllReduce, "allreduce", "all-reduce", "allreduce", "AR", false, false, SpanGroup::Collective},
    {SpanKind::ReduceScatter, "reducescatter", "reduce-scatter", "reducescatter", "RS", false, false,
     SpanGroup::Collective},
    {SpanKind::AllGather, "allgather", "all-gather", "allgather", "AG", false, false, SpanGroup::Collective},
    {SpanKind::AllToAll, "alltoall", "all-to-all", "alltoall", "A2A", false, false, SpanGroup::Collective},
    {SpanKind::Optimizer, "optimizer", "optimizer", "optimizer", "opt", false, true, SpanGroup::Optimizer},
    {SpanKind::Transfer, "transfer", "transfer", "transfer", "", false, false, SpanGroup::Transfer},
    // Named by its forward's microbatch and chunk.
    {SpanKind::ForwardBackward, "forward-backward", "forward & backward", "F&B", "F&B", true, true,
     SpanGroup::ForwardBackward},
}};
static_assert(core::rows_in_enum_order(kSpanTraits), "kSpanTraits: one row per SpanKind, in the enum's order");

[[nodiscard]] constexpr const SpanTraits& traits(SpanKind k) noexcept {
  return kSpanTraits[static_cast<std::size_t>(k)];
}
/// The `cat` word of the Chrome trace: forward, backward, backward-input, backward-weight, send, recv,
/// allreduce, reducescatter, allgather, alltoall, optimizer, transfer, forward-backward.
[[nodiscard]] constexpr std::string_view to_string(SpanKind k) noexcept { return traits(k).word; }

struct Lane {
  std::string process;  ///< grouping row, e.g. "node0" or "links"
  std::string thread;   ///< the row itself, e.g. "gpu3 compute", "node0/nvlink:gpu0-nvswitch0"
};

struct Span {
  std::uint32_t lane = 0;
  SpanKind kind = SpanKind::Forward;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  std::int32_t microbatch = -1;  ///< -1 when not about one microbatch
  std::int32_t chunk = -1;
  std::int32_t stage = -1;
  std::int64_t bytes = 0;
  std::int32_t op = -1;  ///< the op's index in its pipeline rank's stream (its identity in the Program); -1 for links
};

struct Timeline {
  std::vector<Lane> lanes;
  std::vector<Span> spans;
};

}  // namespace mpsim::trace
