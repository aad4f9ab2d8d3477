#pragma once
/// Among plans the predictions cannot order by speed, one whose memory survives the memory model's
/// errors. Predicted steps that differ by less than the error of a predicted ratio between two runs of
/// one model on one cluster (calibration::ranking_tolerance: a median 4.3 % over published pairs, 6.5 %
/// for mixtures of experts) are ones a real run may order either way; their peaks are not a toss-up.
/// So, of the plans within the tolerance of the fastest:
///  1. the safe ones, whose predicted peak would fit every GPU's memory even if under-predicted as much
///     as the worst measured peak so far (kWorstMeasuredUnderPrediction, memory_margin.h), come first;
///     of them the fastest, and of those within kEquivalentStepShare of it, the one with the most
///     headroom, then fewer moving parts;
///  2. when none is safe, the one with the most headroom, then fewer moving parts, then the faster.
/// Headroom: the least over a plan's GPUs of capacity less predicted peak. Two plans' headrooms within
/// kEquivalentHeadroomShare of a GPU's memory of each other count as equal.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "planner/search.h"

namespace mpsim::planner {

/// The least over a plan's GPUs of memory capacity less predicted peak (bytes; negative when over).
[[nodiscard]] std::int64_t memory_headroom(const trace::Report& report) noexcept;

/// Headroom differences below this share of the smaller GPU's memory do not order plans (400 MiB of
/// 40 GiB): a peak is predicted no closer than its band, -4 % to +18 % (calibration::memory_spread), so
/// a few MiB more free is no reason to put a slower plan or one of more moving parts first.
inline constexpr double kEquivalentHeadroomShare = 0.01;

/// Whether `a` leaves more memory free than `b` (memory_headroom) by more than kEquivalentHeadroomShare
/// of the smaller of their GPUs' memories.
[[nodiscard]] bool has_more_headroom(const trace::Report& a, const trace::Report& b) noexcept;

/// Whether every GPU's predicted peak, under-predicted by kWorstMeasuredUnderPrediction, fits its memory.
[[nodiscard]] bool safe_from_worst_memory_error(const trace::Report& report) noexcept;

/// What a plan turns on beyond data parallelism: each of tensor, context, expert and pipeline parallelism
/// of degree above 1, virtual stages, recomputation, a ZeRO stage (0: data parallelism alone).
[[nodiscard]] int moving_parts(const plan::Plan& plan) noexcept;

struct HeadroomChoice {
  Evaluated chosen;         ///< the plan put first
  Evaluated fastest;        ///< the fastest ranked plan, which it is put before
  double tolerance = 0;     ///< the share of the fastest's step a plan was allowed to be slower
  std::size_t within = 0;   ///< how many distinct plans (ranked or on the front) were within it, fastest included
};

/// The choice above among `ranked` (best first by step time) and `front` (the Pareto front, which holds
/// the least memory at each step, so plans outside the top `ranked` count too). Nothing when it is the
/// fastest itself (or `ranked` is empty, or `tolerance` is 0).
[[nodiscard]] std::optional<HeadroomChoice> choose_for_headroom(const std::vector<Evaluated>& ranked,
                                                                const std::vector<Evaluated>& front, double tolerance);

/// `ranked` with `choice.chosen` first (taken out of its place when it was ranked, else in front and the
/// last plan dropped so the count stays), the others in their order.
void put_first(std::vector<Evaluated>& ranked, const HeadroomChoice& choice);

}  // namespace mpsim::planner
