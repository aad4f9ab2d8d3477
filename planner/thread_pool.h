#pragma once
/// Running a worker function on several threads: the planner's only concurrency primitive.
#include <cstddef>
#include <functional>

namespace mpsim::planner {

/// `threads` <= 0 means the hardware concurrency (at least 1).
[[nodiscard]] int effective_threads(int threads) noexcept;

/// Runs `worker(thread_index)` on `threads` threads (the calling thread is one of them) and returns
/// when all have returned. The first exception a worker throws is rethrown here, after every thread
/// has finished; workers share nothing unless `worker` makes them.
void run_on_threads(int threads, const std::function<void(int)>& worker);

/// Calls `fn(i)` for every i in [0, n), spread over `threads` threads, in no particular order.
void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& fn);

}  // namespace mpsim::planner
