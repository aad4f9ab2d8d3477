#include <algorithm>
#include <array>
#include <tuple>
#include <utility>
#include <vector>

#include "sim/schedule/generator_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/ops.h"

namespace mpsim::schedule {

namespace {

// The building blocks of "Pipeline Parallelism with Controllable Memory" (Qi et al., arXiv 2405.15362),
// as its repository lays them out (zbv_greedy.py): on a V of two chunks per rank, one microbatch's
// four passes on rank i sit at fixed slots of a period of 6 (one pass each), repeated for every
// microbatch; the weight passes fill the free slots. The block's lifespan sets the activations a rank
// holds. Slots, for rank i of p:
//   V-Min:  F0 at i,   F1 at 2p - 1 - i, I1 at 2p + g + i,      I0 at 4p + g - 1 - i (g = 2 if 3 | p, else 0)
//   V-Half: F0 at 2i,  F1 at 3p - 2 - i, I1 at 3p + g + 2i - 1, I0 at 6p + g - i - 2 (g = 3 if 2 | p, else 0)
// The repeated blocks leave idle slots at warm-up and cool-down; the repository squeezes them greedily
// (squeeze() below) without raising the peak, then runs each rank's passes in slot order.

/// The passes a rank lays out, in the repository's order (ties at one slot break by it). The
/// input-gradient pass of chunk 1 comes first: on the V, chunk 1 is the later half of the model.
enum Pass : int { kF0, kF1, kI1, kI0, kW };
constexpr int kBlockPasses = 4;
constexpr int kPeriod = 6;

/// slots[pass][microbatch] on one rank; a kW list, when there is one, holds the weight passes of both
/// chunks, its j-th entry that of the j-th input-gradient pass to run.
using RankSlots = std::vector<std::vector<int>>;
using Layout = std::vector<RankSlots>;  ///< one per rank

struct BlockSlots {
  int forward0, forward1, input1, input0;
};

BlockSlots block_slots(bool half, int p, int i) {
  if (half) {
    const int g = p % 2 == 0 ? 3 : 0;
    return {2 * i, 3 * p - 2 - i, 3 * p + g + 2 * i - 1, 6 * p + g - i - 2};
  }
  const int g = p % 3 == 0 ? 2 : 0;
  return {i, 2 * p - 1 - i, 2 * p + g + i, 4 * p + g - 1 - i};
}

Layout repeated_blocks(bool half, int p, int m) {
  Layout layout(static_cast<std::size_t>(p));
  for (int rank = 0; rank < p; ++rank) {
    const BlockSlots b = block_slots(half, p, rank);
    for (const int first : {b.forward0, b.forward1, b.input1, b.input0}) {
      std::vector<int>& slots = layout[static_cast<std::size_t>(rank)].emplace_back();
      for (int k = 0; k < m; ++k) slots.push_back(first + kPeriod * k);
    }
  }
  return layout;
}

int last_slot(const RankSlots& rank) {
  int last = -1;
  for (const auto& slots : rank) {
    if (!slots.empty()) last = std::max(last, slots.back());
  }
  return last;
}

/// The pass at each slot of the rank, -1 where the slot is free.
std::vector<int> pass_at(const RankSlots& rank) {
  std::vector<int> at(static_cast<std::size_t>(last_slot(rank) + 1), -1);
  for (int pass = 0; pass < static_cast<int>(rank.size()); ++pass) {
    for (const int slot : rank[static_cast<std::size_t>(pass)]) at[static_cast<std::size_t>(slot)] = pass;
  }
  return at;
}

/// Slots for the weight passes of the rank's block passes: each free slot takes the oldest pending
/// one, chunk 1's before chunk 0's when `per_chunk`; what is left goes after the last block pass.
/// Returns one list (both chunks, in input-gradient order) or, `per_chunk`, chunk 1's then chunk 0's.
std::vector<std::vector<int>> weight_slots(const RankSlots& rank, bool per_chunk) {
  const std::vector<int> at = pass_at(rank);
  std::vector<std::vector<int>> slots(per_chunk ? 2 : 1);
  std::array<int, 2> pending{0, 0};
  for (int t = 0; t < static_cast<int>(at.size()); ++t) {
    const int pass = at[static_cast<std::size_t>(t)];
    if (pass == kI1 || pass == kI0) ++pending[per_chunk && pass == kI0 ? 1 : 0];
    if (pass != -1) continue;
    for (std::size_t list = 0; list < slots.size(); ++list) {
      if (pending[list] == 0) continue;
      slots[list].push_back(t);
      --pending[list];
      break;
    }
  }
  int next = static_cast<int>(at.size());
  for (std::size_t list = 0; list < slots.size(); ++list) {
    for (; pending[list] > 0; --pending[list]) slots[list].push_back(next++);
  }
  return slots;
}

RankSlots with_weights(RankSlots rank) {
  rank.push_back(weight_slots(rank, false).front());
  return rank;
}

/// The most chunk-activations the rank holds (a forward adds one, a weight pass frees one). Without a
/// kW list, the weight passes are taken to run in the free slots as weight_slots() puts them.
int peak_held(const RankSlots& rank) {
  const bool weights_placed = rank.size() > kBlockPasses;
  int held = 0;
  int peak = 0;
  int pending = 0;
  for (const int pass : pass_at(rank)) {
    if (pass == kF0 || pass == kF1) ++held;
    if (pass == kI1 || pass == kI0) ++pending;
    if (pass == kW || (pass == -1 && !weights_placed && pending > 0)) {
      --held;
      --pending;
    }
    peak = std::max(peak, held);
  }
  return peak;
}

struct PassRef {
  int slot, rank, pass, microbatch;
  friend bool operator<(const PassRef& a, const PassRef& b) {
    return std::tie(a.slot, a.rank, a.pass, a.microbatch) < std::tie(b.slot, b.rank, b.pass, b.microbatch);
  }
};

/// Every pass of the layout, by slot (then rank, pass, microbatch, as the repository breaks ties).
std::vector<PassRef> in_slot_order(const Layout& layout) {
  std::vector<PassRef> passes;
  for (int rank = 0; rank < static_cast<int>(layout.size()); ++rank) {
    const RankSlots& r = layout[static_cast<std::size_t>(rank)];
    for (int pass = 0; pass < static_cast<int>(r.size()); ++pass) {
      const auto& slots = r[static_cast<std::size_t>(pass)];
      for (int k = 0; k < static_cast<int>(slots.size()); ++k) passes.push_back({slots[static_cast<std::size_t>(k)], rank, pass, k});
    }
  }
  std::sort(passes.begin(), passes.end());
  return passes;
}

/// The latest of `values` at the passes `pass` waits for within the block (kW excluded): the same
/// pass on the neighbouring rank the data comes from, the previous pass of its microbatch on this rank
/// (the turns at the ends of the V), and the same pass of the previous microbatch.
int latest_dependency(const Layout& values, const PassRef& pass, int none) {
  const auto at = [&](int rank, int kind, int microbatch) {
    return values[static_cast<std::size_t>(rank)][static_cast<std::size_t>(kind)][static_cast<std::size_t>(microbatch)];
  };
  const int p = static_cast<int>(values.size());
  int latest = none;
  const bool downward = pass.pass == kF0 || pass.pass == kI1;
  const bool upward = pass.pass == kF1 || pass.pass == kI0;
  if (downward && pass.rank > 0) latest = std::max(latest, at(pass.rank - 1, pass.pass, pass.microbatch));
  if (upward && pass.rank + 1 < p) latest = std::max(latest, at(pass.rank + 1, pass.pass, pass.microbatch));
  if (pass.pass > kF0 && pass.pass < kW) latest = std::max(latest, at(pass.rank, pass.pass - 1, pass.microbatch));
  if (pass.microbatch > 0) latest = std::max(latest, at(pass.rank, pass.pass, pass.microbatch - 1));
  return latest;
}

/// Start times of the layout run with unit-time passes, each rank in slot order, each pass as soon as
/// its inputs are in: the squeezed layout, slots become times with the idle ones closed.
Layout unit_time_starts(const Layout& layout) {
  Layout end = layout;
  std::vector<int> rank_free(layout.size(), 0);
  for (const PassRef& pass : in_slot_order(layout)) {
    int& free = rank_free[static_cast<std::size_t>(pass.rank)];
    const int start = std::max(latest_dependency(end, pass, 0), free);
    free = start + 1;
    end[static_cast<std::size_t>(pass.rank)][static_cast<std::size_t>(pass.pass)][static_cast<std::size_t>(pass.microbatch)] = free;
  }
  for (auto& rank : end) {
    for (auto& slots : rank) {
      for (int& t : slots) --t;
    }
  }
  return end;
}

/// The earliest slot `pass` may take: after everything it waits for, and for a weight pass after the
/// input-gradient pass it belongs to.
int earliest_slot(const Layout& layout, const PassRef& pass) {
  int latest = latest_dependency(layout, pass, -1);
  if (pass.pass == kW) {
    const RankSlots& rank = layout[static_cast<std::size_t>(pass.rank)];
    std::vector<int> inputs = rank[kI1];
    inputs.insert(inputs.end(), rank[kI0].begin(), rank[kI0].end());
    std::nth_element(inputs.begin(), inputs.begin() + pass.microbatch, inputs.end());
    latest = std::max(latest, inputs[static_cast<std::size_t>(pass.microbatch)]);
  }
  return latest + 1;
}

enum class Phase { WarmUp, Steady, CoolDown };

/// The repository's greedy squeeze. Passes, taken in slot order, move to the earliest free slot they
/// may take that keeps every rank within the layout's peak of activations. The steady state (from
/// rank 0's first I0 to rank 0's last F0) stays as laid out; the warm-up moves only when the weight
/// passes have slots already (`weights_first`, which places them before squeezing). Returns the
/// squeezed layout's unit-time start times, with its kW list.
Layout squeeze(Layout layout, bool weights_first, int microbatches) {
  if (weights_first) {
    for (RankSlots& rank : layout) rank = with_weights(std::move(rank));
  }
  int limit = 0;
  for (const RankSlots& rank : layout) limit = std::max(limit, peak_held(rank));
  std::vector<std::vector<bool>> taken;
  for (const RankSlots& rank : layout) taken.emplace_back(static_cast<std::size_t>(last_slot(rank) + 1), false);

  Phase phase = Phase::WarmUp;
  for (const PassRef& pass : in_slot_order(layout)) {
    if (phase == Phase::WarmUp && pass.pass == kI0 && pass.rank == 0) phase = Phase::Steady;
    const bool keep = phase == Phase::Steady || (phase == Phase::WarmUp && !weights_first);
    if (phase == Phase::Steady && pass.pass == kF0 && pass.microbatch == microbatches - 1) phase = Phase::CoolDown;
    RankSlots& rank = layout[static_cast<std::size_t>(pass.rank)];
    int& slot = rank[static_cast<std::size_t>(pass.pass)][static_cast<std::size_t>(pass.microbatch)];
    std::vector<bool>& rank_taken = taken[static_cast<std::size_t>(pass.rank)];
    if (!keep) {
      for (slot = earliest_slot(layout, pass); slot < pass.slot; ++slot) {
        if (!rank_taken[static_cast<std::size_t>(slot)] && peak_held(rank) <= limit) break;
      }
      slot = std::min(slot, pass.slot);  // no earlier slot fits: it stays
    }
    rank_taken[static_cast<std::size_t>(slot)] = true;
  }
  if (!weights_first) {
    for (RankSlots& rank : layout) rank = with_weights(std::move(rank));
  }
  return unit_time_starts(layout);
}

/// The rank's program: its block passes at their slots and weight passes per chunk in the free ones.
std::vector<Op> rank_order(RankSlots rank) {
  rank.resize(kBlockPasses);
  const std::vector<std::vector<int>> weights = weight_slots(rank, true);
  std::vector<std::pair<int, Op>> at;
  const auto add = [&](const std::vector<int>& slots, OpKind kind, int chunk) {
    for (int k = 0; k < static_cast<int>(slots.size()); ++k) at.emplace_back(slots[static_cast<std::size_t>(k)], compute_op(kind, k, chunk));
  };
  add(rank[kF0], OpKind::Forward, 0);
  add(rank[kF1], OpKind::Forward, 1);
  add(rank[kI1], OpKind::BackwardInput, 1);
  add(rank[kI0], OpKind::BackwardInput, 0);
  add(weights[0], OpKind::BackwardWeight, 1);
  add(weights[1], OpKind::BackwardWeight, 0);
  std::sort(at.begin(), at.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<Op> order;
  for (const auto& [slot, op] : at) order.push_back(op);
  return order;
}

Program make_v_memory(const PipelineShape& shape, plan::ScheduleKind kind) {
  Program program = detail::empty_program(shape, kind);
  const int m = shape.microbatches;
  // As the repository: squeeze with the weight passes placed, then again (cool-down only) with them
  // left to the free slots, and place them per chunk at last.
  Layout layout = repeated_blocks(kind == plan::ScheduleKind::VHalf, shape.stages, m);
  layout = squeeze(std::move(layout), true, m);
  for (RankSlots& rank : layout) rank.resize(kBlockPasses);
  layout = squeeze(std::move(layout), false, m);
  for (std::size_t rank = 0; rank < layout.size(); ++rank) program.streams[rank] = rank_order(std::move(layout[rank]));
  return program;
}

}  // namespace

Program make_v_half(const PipelineShape& shape) { return make_v_memory(shape, plan::ScheduleKind::VHalf); }
Program make_v_min(const PipelineShape& shape) { return make_v_memory(shape, plan::ScheduleKind::VMin); }

}  // namespace mpsim::schedule
