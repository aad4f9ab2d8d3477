#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

namespace {

// Zero Bubble's automatic scheduling heuristic (arXiv 2401.10241, section 3.1; the reference
// repository's zb.py): a greedy that places F, I and W pass by pass on every stage, round by round,
// with unit times (F = I = W = 1, no communication) so that the order is a function of the shape.
// Memory counts a microbatch's activations from its F until its W (with FlashAttention the input
// gradient frees almost nothing; the weight gradient needs the stashed inputs).
constexpr std::int64_t kPass = 1;

struct Knobs {
  bool allow_bubble_before_first_b = false;  ///< warm-up forwards may delay the first backward
  bool prioritize_b = false;                 ///< skip a forward that would delay the next stage's backward
  bool no_bubble_greedy = false;             ///< fill gaps shorter than a W with one anyway
};

class Greedy {
 public:
  Greedy(int stages, int microbatches, int limit, Knobs knobs)
      : p_(stages),
        m_(microbatches),
        limit_(limit),
        knobs_(knobs),
        forwards_(static_cast<std::size_t>(stages)),
        inputs_(static_cast<std::size_t>(stages)),
        weights_(static_cast<std::size_t>(stages)),
        memory_(static_cast<std::size_t>(stages)),
        free_at_(static_cast<std::size_t>(stages)),
        bubble_(static_cast<std::size_t>(stages)),
        forward_end_(static_cast<std::size_t>(stages), std::vector<std::int64_t>(static_cast<std::size_t>(microbatches))),
        input_end_(static_cast<std::size_t>(stages), std::vector<std::int64_t>(static_cast<std::size_t>(microbatches))),
        order_(static_cast<std::size_t>(stages)) {}

  void run() {
    warm_up();
    for (int round = 1; round < m_; ++round) steady(round);
    for (int j = 0; j < p_; ++j) {
      while (pending(j) > 0) put(j, OpKind::BackwardWeight);
    }
  }

  /// The heuristic's objective: the longest stage from its first forward's start to its last pass.
  [[nodiscard]] std::int64_t span() const {
    std::int64_t longest = 0;
    for (int j = 0; j < p_; ++j) longest = std::max(longest, at(free_at_, j) - (at(forward_end_, j)[0] - kPass));
    return longest;
  }
  [[nodiscard]] const std::vector<std::vector<Op>>& order() const { return order_; }

 private:
  template <typename T>
  static T& at(std::vector<T>& v, int j) { return v[static_cast<std::size_t>(j)]; }
  template <typename T>
  static const T& at(const std::vector<T>& v, int j) { return v[static_cast<std::size_t>(j)]; }

  [[nodiscard]] int pending(int j) const { return at(inputs_, j) - at(weights_, j); }
  [[nodiscard]] std::int64_t largest_bubble() const { return *std::max_element(bubble_.begin(), bubble_.end()); }

  void put(int j, OpKind kind) {
    std::int64_t end = at(free_at_, j) + kPass;
    int index = 0;
    if (kind == OpKind::Forward) {
      index = at(forwards_, j)++;
      if (j > 0) end = std::max(end, at(forward_end_, j - 1)[static_cast<std::size_t>(index)] + kPass);
      at(forward_end_, j)[static_cast<std::size_t>(index)] = end;
      ++at(memory_, j);
    } else if (kind == OpKind::BackwardInput) {
      index = at(inputs_, j)++;
      if (j < p_ - 1) end = std::max(end, at(input_end_, j + 1)[static_cast<std::size_t>(index)] + kPass);
      at(input_end_, j)[static_cast<std::size_t>(index)] = end;
    } else {
      index = at(weights_, j)++;
      --at(memory_, j);
    }
    if (at(forwards_, j) > 1 || kind != OpKind::Forward) at(bubble_, j) += end - (at(free_at_, j) + kPass);
    at(free_at_, j) = end;
    at(order_, j).push_back(compute_op(kind, index));
  }

  /// Weight passes into the gap before a pass that can start at `ready`: every one that fits whole,
  /// and one more if the gap would otherwise make this stage's idle time the largest (or always,
  /// with no_bubble_greedy).
  void fill_gap(int j, std::int64_t ready) {
    while (pending(j) > 0 && at(free_at_, j) + kPass <= ready) put(j, OpKind::BackwardWeight);
    if (pending(j) > 0 && at(free_at_, j) < ready) {
      const bool would_be_worst = ready - at(free_at_, j) > largest_bubble() - at(bubble_, j);
      if (would_be_worst || knobs_.no_bubble_greedy) put(j, OpKind::BackwardWeight);
    }
  }

  /// A forward on stage j, weight passes first while the memory limit needs room.
  bool put_forward(int j) {
    while (at(memory_, j) + 1 > limit_ && pending(j) > 0) put(j, OpKind::BackwardWeight);
    if (at(memory_, j) + 1 > limit_ || at(forwards_, j) >= m_) return false;
    if (j > 0) {
      if (at(forwards_, j - 1) <= at(forwards_, j)) return false;  // its input is not computed yet
      fill_gap(j, at(forward_end_, j - 1)[static_cast<std::size_t>(at(forwards_, j))]);
    }
    put(j, OpKind::Forward);
    return true;
  }

  void warm_up() {
    for (int j = 0; j < p_; ++j) put(j, OpKind::Forward);
    // As many forwards as memory allows before the first backward arrives, from the last stage up.
    std::vector<int> extra(static_cast<std::size_t>(p_));
    std::int64_t backward_at = at(forward_end_, p_ - 1)[0] + kPass;  // the last stage's first I ends
    for (int j = p_ - 2; j >= 0; --j) {
      int memory = at(memory_, j);
      std::int64_t now = at(free_at_, j);
      int n = 0;
      while (at(forwards_, j) + n < m_ && memory + 1 <= limit_) {
        if (knobs_.allow_bubble_before_first_b ? now + kPass > backward_at : now >= backward_at) break;
        ++memory;
        now += kPass;
        ++n;
      }
      at(extra, j) = n;
      backward_at = std::max(now, backward_at) + kPass;
    }
    // A stage runs fewer extra forwards than the one before it, where it can.
    for (int j = 1; j < p_; ++j) {
      while (at(extra, j) > 0 && at(extra, j) >= at(extra, j - 1) && at(forwards_, j) + at(extra, j) < m_) --at(extra, j);
    }
    for (int j = 0; j < p_; ++j) {
      for (int k = 0; k < at(extra, j); ++k) put_forward(j);
    }
    for (int j = p_ - 1; j >= 0; --j) put_input(j, 0);
  }

  void put_input(int j, int round) {
    while (at(forwards_, j) <= round) {
      if (!put_forward(j)) put(j, OpKind::BackwardWeight);  // memory: free a weight pass first
    }
    if (j == 0 && at(forwards_, 0) == m_) {
      while (pending(0) > 0) put(0, OpKind::BackwardWeight);
    }
    if (j < p_ - 1) fill_gap(j, at(input_end_, j + 1)[static_cast<std::size_t>(round)]);
    put(j, OpKind::BackwardInput);
  }

  void steady(int round) {
    std::vector<int> wanted(static_cast<std::size_t>(p_));
    for (int j = 0; j < p_; ++j) {
      int& f = at(wanted, j);
      f = at(forwards_, j) < m_ ? 1 : 0;
      if (f == 0 || !knobs_.prioritize_b || j + 1 >= p_ || at(forwards_, j) < at(forwards_, j + 1) + 2) continue;
      // This stage is ahead: skip its forward if it would delay the next stage's backward.
      const std::int64_t next = at(free_at_, j + 1) + 2 * kPass;
      const std::int64_t room = std::max(0, at(memory_, j) + 1 - limit_) * kPass;  // weights to free first
      if (at(free_at_, j) >= next) {
        f = 0;
      } else if (at(free_at_, j) + kPass + room > next) {
        f = next - at(free_at_, j) <= largest_bubble() - at(bubble_, j) ? 0 : 1;
      }
    }
    for (int j = p_ - 2; j >= 0; --j) at(wanted, j) = std::min(at(wanted, j), at(wanted, j + 1));
    for (int j = 0; j < p_; ++j) {
      if (at(wanted, j) > 0) put_forward(j);
    }
    for (int j = p_ - 1; j >= 0; --j) put_input(j, round);
  }

  int p_, m_, limit_;
  Knobs knobs_;
  std::vector<int> forwards_, inputs_, weights_, memory_;
  std::vector<std::int64_t> free_at_, bubble_;
  std::vector<std::vector<std::int64_t>> forward_end_, input_end_;
  std::vector<std::vector<Op>> order_;
};

}  // namespace

Program make_zb_auto(const PipelineShape& shape) {
  Program program = detail::empty_program(shape, plan::ScheduleKind::ZbAuto);
  std::int64_t best = std::numeric_limits<std::int64_t>::max();
  // The reference's grid over its three switches; the first of equal spans wins.
  for (int bits = 0; bits < 8; ++bits) {
    Greedy greedy(shape.stages, shape.microbatches, shape.memory_limit,
                  Knobs{(bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0});
    greedy.run();
    if (greedy.span() < best) {
      best = greedy.span();
      program.streams = greedy.order();
    }
  }
  return program;
}

}  // namespace mpsim::schedule
