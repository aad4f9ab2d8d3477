#include <deque>
#include <utility>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

// DeepSeek's DualPipeV (github.com/deepseek-ai/DualPipe, dualpipev.py; PyTorch's ScheduleDualPipeV
// lays out the same eight steps). Chunk 0 of a rank is its stage on the way down, chunk 1 its stage
// on the way back up. Weight gradients split off a backward wait in a first-in-first-out queue.
Program make_dualpipe_v(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::DualPipeV);
  const int p = shape.stages;
  const int m = shape.microbatches;
  for (int rank = 0; rank < p; ++rank) {
    std::vector<Op>& stream = program.streams[static_cast<std::size_t>(rank)];
    int forwards[2] = {0, 0};
    int backwards[2] = {0, 0};  // fused or input-gradient passes issued, per chunk
    std::deque<std::pair<int, int>> pending_weights;  // (microbatch, chunk) after its input gradient
    bool split = false;  // whether backwards split off their weight gradient (zero-bubble deferral)
    const auto forward = [&](int chunk) { stream.push_back(compute_op(OpKind::Forward, forwards[chunk]++, chunk)); };
    const auto backward = [&](int chunk) {
      const int microbatch = backwards[chunk]++;
      if (!split) {
        stream.push_back(compute_op(OpKind::Backward, microbatch, chunk));
        return;
      }
      stream.push_back(compute_op(OpKind::BackwardInput, microbatch, chunk));
      pending_weights.emplace_back(microbatch, chunk);
    };
    const auto weight = [&] {
      if (pending_weights.empty()) return;
      const auto [microbatch, chunk] = pending_weights.front();
      pending_weights.pop_front();
      stream.push_back(compute_op(OpKind::BackwardWeight, microbatch, chunk));
    };
    // An overlapped forward-backward pair: the forward of one chunk beside the fused backward of the other.
    const auto forward_backward = [&](int forward_chunk, int backward_chunk) {
      stream.push_back(forward_backward_op(forwards[forward_chunk]++, forward_chunk, backwards[backward_chunk]++,
                                           backward_chunk));
    };
    const int tail = p - rank - 1;
    for (int k = 0; k < 2 * tail; ++k) forward(0);  // 1: fill the way down
    for (int k = 0; k <= rank; ++k) {               // 2: both chunks
      forward(0);
      forward(1);
    }
    split = true;
    for (int k = 0; k < tail; ++k) {  // 3: the first backwards on the way up, weights at once
      backward(1);
      weight();
      forward(1);
    }
    split = false;
    for (int k = 0; k < m - 2 * p + rank + 1; ++k) {  // 4: the steady overlapped pairs
      if (k == 0 && rank == p - 1) {  // the last rank's first pair cannot overlap: its backward needs that forward
        forward(0);
        backward(1);
      } else {
        forward_backward(0, 1);
      }
      forward_backward(1, 0);
    }
    for (int k = 0; k < tail; ++k) {  // 5: backwards on the way up, each beside a forward
      backward(1);
      forward_backward(1, 0);
    }
    for (int k = 0; k <= rank; ++k) {  // 6: drain; weight gradients deferred from half-way
      if (k == (rank + 1) / 2 && rank % 2 == 1) split = true;
      backward(1);
      if (k == (rank + 1) / 2 && rank % 2 == 0) split = true;
      backward(0);
    }
    for (int k = 0; k < tail; ++k) {  // 7: weights fill the gaps of the last backwards
      weight();
      backward(0);
    }
    for (int k = 0; k <= rank; ++k) weight();  // 8
  }
  return program;
}

}  // namespace mpsim::schedule
