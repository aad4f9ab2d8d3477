#include <deque>
#include <map>
#include <tuple>

#include <fmt/format.h>

#include "sim/schedule/message.h"
#include "sim/schedule/validate_detail.h"
#include "sim/schedule/virtual_stage.h"

namespace mpsim::schedule::detail {

namespace {

struct LocatedOp {
  int rank = -1;
  std::size_t index = 0;
};

/// Where each Recv's Send is (pairing has made it unique).
std::vector<std::vector<LocatedOp>> sources(const Program& program) {
  const PipelineShape& shape = program.shape;
  std::map<MessageId, LocatedOp> sends;  // the Send feeding each message
  for (int rank = 0; rank < shape.stages; ++rank) {
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Op& op = stream[i];
      if (is_send(op.kind)) sends[message_of(shape, rank, op)] = {rank, i};
    }
  }
  std::vector<std::vector<LocatedOp>> source(program.streams.size());
  for (int rank = 0; rank < shape.stages; ++rank) {
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    source[static_cast<std::size_t>(rank)].resize(stream.size());
    for (std::size_t i = 0; i < stream.size(); ++i) {
      const Op& op = stream[i];
      if (!is_recv(op.kind)) continue;
      const auto it = sends.find(message_of(shape, rank, op));
      if (it != sends.end()) source[static_cast<std::size_t>(rank)][i] = it->second;
    }
  }
  return source;
}

}  // namespace

std::optional<ProgramError> check_deadlock(const Program& program, const Naming& naming) {
  const std::vector<std::vector<LocatedOp>> source = sources(program);
  const auto ranks = program.streams.size();
  std::vector<std::size_t> cursor(ranks, 0);
  std::vector<std::vector<int>> waiters(ranks);  // waiters[q]: ranks blocked on a Send of rank q
  std::deque<int> runnable;
  for (std::size_t r = 0; r < ranks; ++r) runnable.push_back(static_cast<int>(r));

  const auto blocked_on = [&](int r) -> const LocatedOp& { return source[r][cursor[r]]; };
  while (!runnable.empty()) {
    const int r = runnable.front();
    runnable.pop_front();
    const std::vector<Op>& stream = program.streams[static_cast<std::size_t>(r)];
    // Compute ops, Sends and collectives never wait in this abstract run; a Recv waits for its Send.
    while (cursor[r] < stream.size()) {
      if (is_recv(stream[cursor[r]].kind)) {
        const LocatedOp& from = blocked_on(r);
        if (from.rank < 0) return naming.error(r, cursor[r], "waits for a send that never comes");
        if (cursor[static_cast<std::size_t>(from.rank)] <= from.index) {
          waiters[static_cast<std::size_t>(from.rank)].push_back(r);
          break;
        }
      }
      ++cursor[r];
    }
    std::vector<int> still;
    for (const int w : waiters[static_cast<std::size_t>(r)]) {
      if (cursor[r] > blocked_on(w).index) {
        runnable.push_back(w);
      } else {
        still.push_back(w);
      }
    }
    waiters[static_cast<std::size_t>(r)] = std::move(still);
  }

  for (std::size_t r = 0; r < ranks; ++r) {
    if (cursor[r] == program.streams[r].size()) continue;
    const int rank = static_cast<int>(r);
    const LocatedOp& from = blocked_on(rank);
    const std::size_t stuck = naming.index(from.rank, cursor[static_cast<std::size_t>(from.rank)]);
    const Op& stuck_op = naming.shown->streams[static_cast<std::size_t>(from.rank)][stuck];
    return naming.error(rank, cursor[r],
                        fmt::format("waits for {}, but rank {} is stuck at op {} ({}): deadlock",
                                    naming.where(from.rank, from.index), from.rank, stuck,
                                    op_text(*naming.shown, stuck_op)));
  }
  return std::nullopt;
}

}  // namespace mpsim::schedule::detail
