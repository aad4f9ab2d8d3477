// The order rule of backend.h that the CUDA backend relies on: from one rank to another, the messages
// of one ordered channel (tag's low bit: activations, gradients) are received in the order they are
// sent, for every schedule generator and shape. One channel per pair would not do: the V schedules
// interleave activations and gradients differently on the two sides.
#include <map>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "executor/backend/backend.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/message.h"
#include "sim/schedule/passes.h"

namespace mpsim::executor {
namespace {

using plan::ScheduleKind;
using schedule::PipelineShape;

constexpr ScheduleKind kKinds[] = {ScheduleKind::GPipe,     ScheduleKind::OneFOneB,  ScheduleKind::Interleaved1F1B,
                                   ScheduleKind::ZbH1,      ScheduleKind::ZbH2,      ScheduleKind::SageMakerInterleaved,
                                   ScheduleKind::ZbV,       ScheduleKind::DualPipeV, ScheduleKind::ZbAuto,
                                   ScheduleKind::VHalf,     ScheduleKind::VMin};

std::vector<PipelineShape> shapes() {
  std::vector<PipelineShape> out;
  for (const ScheduleKind kind : kKinds) {
    for (int p = 2; p <= 6; ++p) {
      for (int m = 1; m <= 3 * p; ++m) {
        PipelineShape s;
        s.kind = kind;
        s.stages = p;
        s.microbatches = m;
        s.chunks = plan::has_virtual_stages(kind) ? 2 : 1;
        s.microbatch_group_size = p;
        s.active_microbatches = p + 1;
        s.memory_limit = p;
        if (!schedule::shape_error(s)) out.push_back(s);
      }
    }
  }
  return out;
}

/// Per (sender, receiver, key(tag)), the tags in the sender's issue order and in the receiver's.
template <class Key>
std::pair<std::map<std::tuple<int, int, int>, std::vector<std::int64_t>>,
          std::map<std::tuple<int, int, int>, std::vector<std::int64_t>>>
orders(const PipelineShape& s, Key key) {
  const schedule::Program program = schedule::lower_comm(schedule::make_program(s));
  std::map<std::tuple<int, int, int>, std::vector<std::int64_t>> sent;
  std::map<std::tuple<int, int, int>, std::vector<std::int64_t>> received;
  for (int rank = 0; rank < s.stages; ++rank) {
    for (const schedule::Op& op : program.streams[static_cast<std::size_t>(rank)]) {
      if (!schedule::is_send(op.kind) && !schedule::is_recv(op.kind)) continue;
      const std::int64_t tag = schedule::message_number(s, schedule::message_of(s, rank, op));
      const int peer = static_cast<int>(op.peer);
      if (schedule::is_send(op.kind)) {
        sent[{rank, peer, key(tag)}].push_back(tag);
      } else {
        received[{peer, rank, key(tag)}].push_back(tag);
      }
    }
  }
  return {sent, received};
}

TEST(MessageOrder, EachChannelIsReceivedInTheOrderItIsSent) {
  int checked = 0;
  int one_channel_would_break = 0;
  for (const PipelineShape& s : shapes()) {
    const auto [sent, received] = orders(s, [](std::int64_t tag) { return ordered_channel(static_cast<int>(tag)); });
    EXPECT_EQ(sent, received) << plan::to_string(s.kind) << " p" << s.stages << " m" << s.microbatches;
    const auto [sent_pair, received_pair] = orders(s, [](std::int64_t) { return 0; });
    if (sent_pair != received_pair) ++one_channel_would_break;
    ++checked;
  }
  EXPECT_EQ(checked, 595);
  // Only the V schedules need the second channel, and they do need it.
  EXPECT_EQ(one_channel_would_break, 158);
}

}  // namespace
}  // namespace mpsim::executor
