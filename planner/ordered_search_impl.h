#pragma once
// Template definition of run_ordered_search(); include ordered_search.h instead.
#include <algorithm>
#include <mutex>
#include <optional>

#include "planner/thread_pool.h"

namespace mpsim::planner {

template <typename Result>
void run_ordered_search(const std::vector<std::size_t>& items, int threads, const OrderedSearch<Result>& search) {
  struct Slot {
    bool ready = false;
    std::optional<Result> result;
  };
  std::vector<Slot> slots(items.size());
  std::mutex mutex;
  std::size_t next = 0;               // the next position a worker takes
  std::size_t committed = 0;          // positions before this one are final
  std::size_t end = items.size();     // positions from here on are never evaluated (a stop)

  // Commits every ready position in order; the caller holds the lock.
  const auto advance = [&] {
    while (committed < end && slots[committed].ready) {
      Slot& slot = slots[committed];
      const Decision d = search.decide(items[committed]);
      if (d == Decision::Stop) {
        end = committed;
        break;
      }
      if (d == Decision::Evaluate) {
        if (!slot.result) {
          // A worker skipped it early, but the committed results say it is needed: that breaks
          // monotonicity, so evaluate it here rather than return a different answer.
          slot.result = search.evaluate(items[committed]);
        }
        search.commit(items[committed], std::move(*slot.result));
      }
      slot.result.reset();
      ++committed;
    }
  };

  run_on_threads(threads, [&](int) {
    for (;;) {
      std::size_t position = 0;
      {
        const std::lock_guard lock(mutex);
        if (next >= end) return;
        position = next++;
        // Already decided against the committed results: no need to evaluate.
        const Decision early = search.decide(items[position]);
        if (early == Decision::Stop) {
          end = std::min(end, position);
          advance();
          return;
        }
        if (early == Decision::Skip) {
          slots[position].ready = true;
          advance();
          continue;
        }
      }
      Result result = search.evaluate(items[position]);
      const std::lock_guard lock(mutex);
      slots[position].result = std::move(result);
      slots[position].ready = true;
      advance();
    }
  });
}

}  // namespace mpsim::planner
