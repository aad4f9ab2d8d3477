#pragma once
/// What happened, and when: spans on lanes (a device stream or a link). The simulator writes a
/// predicted Timeline and the executor a measured one; the viewer and `compare` read both.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

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
  Transfer,  ///< traffic on a link
  ForwardBackward,  ///< an F&B pair: one microbatch's forward beside another's backward, one span
};
/// The `cat` word of the Chrome trace: forward, backward, backward-input, backward-weight, send, recv,
/// allreduce, reducescatter, allgather, optimizer, transfer, forward-backward.
[[nodiscard]] std::string_view to_string(SpanKind k) noexcept;

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
