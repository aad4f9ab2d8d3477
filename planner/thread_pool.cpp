#include "planner/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace mpsim::planner {

int effective_threads(int threads) noexcept {
  if (threads > 0) return threads;
  return std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
}

void run_on_threads(int threads, const std::function<void(int)>& worker) {
  const int n = std::max(1, threads);
  std::exception_ptr first_error;
  std::mutex error_mutex;
  const auto guarded = [&](int index) {
    try {
      worker(index);
    } catch (...) {
      const std::lock_guard lock(error_mutex);
      if (!first_error) first_error = std::current_exception();
    }
  };
  {
    std::vector<std::jthread> pool;
    pool.reserve(static_cast<std::size_t>(n - 1));
    for (int i = 1; i < n; ++i) pool.emplace_back(guarded, i);
    guarded(0);
  }  // joins
  if (first_error) std::rethrow_exception(first_error);
}

void parallel_for(std::size_t n, int threads, const std::function<void(std::size_t)>& fn) {
  std::atomic<std::size_t> next{0};
  const int used = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(std::max(1, threads)), std::max<std::size_t>(n, 1)));
  run_on_threads(used, [&](int) {
    for (std::size_t i = next++; i < n; i = next++) fn(i);
  });
}

}  // namespace mpsim::planner
