#pragma once
/// Proves a Program complete and deadlock-free before anything runs it.
///
/// The simulator and the executor accept only programs that validate, so a malformed schedule is a
/// readable error here, not a hang in NCCL.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "sim/schedule/program.h"

namespace mpsim::schedule {

struct ProgramError {
  int rank = 0;              ///< the stream at fault; -1 when the program as a whole is (stream count)
  std::size_t op_index = 0;  ///< index in streams[rank]; the stream's size when something is missing
  std::string message;       ///< names the rank and the op in text form, e.g.
                             ///< "rank 2 op 7 (rA3) waits for a send that never comes"
  friend bool operator==(const ProgramError&, const ProgramError&) = default;
};

/// Checks, in this order, and reports the first failure (lowest rank, then lowest op index, within
/// a check):
/// 1. structure: one stream per stage; chunk and microbatch in range; a Send/Recv exists only between
///    virtual stages on different ranks and names the rank holding the other virtual stage;
/// 2. completeness, per rank: every (microbatch, chunk) forwarded exactly once and backwarded once,
///    as B or as I then W; B/I after its F, W after its I;
/// 3. pairing: every Send matched by exactly one Recv on its peer (same microbatch, adjacent virtual
///    stages, same direction) and every Recv by exactly one Send;
/// 4. dependency order within a stream: F/B/I after the Recv that feeds it, a Send after the op
///    that produces its data, and with p = 1 each virtual stage after the one that feeds it;
/// 5. deadlock freedom: an abstract replay with program.h's semantics (compute in stream order,
///    a Recv blocks until its Send has been issued, Sends and collectives never block). If it stalls,
///    the stuck rank with the smallest index is reported with the op it waits for.
/// A program without Send/Recv ops (a generator's output) gets checks 1-2 as it is and 3-5 after
/// lower_comm(); errors still point at its own ops. O(ops log ops).
[[nodiscard]] std::optional<ProgramError> validate(const Program& program);

/// Per rank, the most (microbatch, chunk) pairs forwarded whose B (or I) has not run yet, walking
/// the stream in order: the activations the rank holds at its peak, in chunk-microbatches.
[[nodiscard]] std::vector<int> peak_in_flight(const Program& program);

}  // namespace mpsim::schedule
