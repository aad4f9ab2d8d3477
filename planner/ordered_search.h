#pragma once
/// A sequential decision loop run speculatively on several threads, with the sequential loop's result.
///
/// The loop: for each item in order, decide against what has been committed so far: evaluate it and
/// commit the result, skip it, or stop. Workers evaluate items ahead of the commit point in parallel;
/// results are committed strictly in order, each after deciding again against everything committed
/// before it, so the committed sequence -- and everything derived from it -- is the sequential
/// loop's, whatever the thread count. Work done ahead of a stop or a skip is discarded.
///
/// `decide` must be monotone: if it says Skip or Stop for an item given some committed results, it
/// says the same given more of them (branch and bound rules are: more results only lower the bar).
/// Workers use that to skip early. `decide` and `commit` run under one lock; `evaluate` runs
/// unlocked and must be thread-safe.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

namespace mpsim::planner {

enum class Decision : std::uint8_t { Evaluate, Skip, Stop };

template <typename Result>
struct OrderedSearch {
  std::function<Decision(std::size_t item)> decide;
  std::function<Result(std::size_t item)> evaluate;
  std::function<void(std::size_t item, Result&& result)> commit;
};

/// Runs `search` over `items` (in their order) on `threads` threads.
template <typename Result>
void run_ordered_search(const std::vector<std::size_t>& items, int threads, const OrderedSearch<Result>& search);

}  // namespace mpsim::planner

#include "planner/ordered_search_impl.h"
