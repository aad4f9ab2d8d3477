#pragma once
/// The simulator's agenda: a binary heap keyed by (time, sequence), so that events at the same
/// nanosecond run in the order they were scheduled and every run is deterministic (ns-3's EventKey).
#include <cstdint>
#include <queue>
#include <vector>

#include "sim/core/units.h"

namespace mpsim::engine {

template <typename Event>
class EventQueue {
 public:
  void reserve(std::size_t n) {
    std::vector<Entry> storage;
    storage.reserve(n);
    heap_ = Heap(std::greater<>(), std::move(storage));
  }
  void push(TimeNs at, Event event) { heap_.push(Entry{at.base(), next_seq_++, event}); }
  [[nodiscard]] bool empty() const noexcept { return heap_.empty(); }
  [[nodiscard]] TimeNs next_time() const noexcept { return TimeNs::ns(heap_.top().time); }
  /// Removes and returns the earliest event.
  Event pop() {
    Event e = heap_.top().event;
    heap_.pop();
    return e;
  }

 private:
  struct Entry {
    std::int64_t time;
    std::uint64_t seq;
    Event event;
    bool operator>(const Entry& o) const noexcept { return time != o.time ? time > o.time : seq > o.seq; }
  };
  using Heap = std::priority_queue<Entry, std::vector<Entry>, std::greater<>>;
  Heap heap_;
  std::uint64_t next_seq_ = 0;
};

}  // namespace mpsim::engine
