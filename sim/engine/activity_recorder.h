#pragma once
/// The engine observer the report is built from: per actor, how long its compute stream was held,
/// when its passes began and ended, its memory peak (and, when asked, its memory over time), and when
/// it went idle.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "sim/engine/observer.h"
#include "sim/trace/memory_timeline.h"

namespace mpsim::engine {

class ActivityRecorder final : public Observer {
 public:
  struct Actor {
    std::int64_t busy_ns = 0;
    std::int64_t pipeline_busy_ns = 0;
    std::int64_t communication_wait_ns = 0;  ///< of busy_ns, waiting on in-layer collectives
    std::int64_t first_start_ns = -1;
    std::int64_t last_end_ns = 0;
    std::int64_t peak_memory_bytes = 0;
    std::int64_t finish_ns = 0;
    trace::MemoryTimelineBuilder memory_timeline;  ///< fed only when the recorder records timelines
  };

  explicit ActivityRecorder(bool record_memory_timeline = false) : record_memory_timeline_(record_memory_timeline) {}

  void actor_added(int actor, int, int, topology::DeviceId, const std::vector<int>&) override {
    if (actors_.size() <= static_cast<std::size_t>(actor)) actors_.resize(static_cast<std::size_t>(actor) + 1);
  }
  void stream_held(int actor, std::int64_t start_ns, std::int64_t end_ns, bool pipeline) override {
    Actor& a = actors_[static_cast<std::size_t>(actor)];
    a.busy_ns += end_ns - start_ns;
    if (!pipeline) return;
    a.pipeline_busy_ns += end_ns - start_ns;
    if (a.first_start_ns < 0) a.first_start_ns = start_ns;
    a.last_end_ns = end_ns;
  }
  void communication_waited(int actor, std::int64_t start_ns, std::int64_t end_ns) override {
    actors_[static_cast<std::size_t>(actor)].communication_wait_ns += end_ns - start_ns;
  }
  void memory_changed(int actor, std::int64_t time_ns, std::int64_t bytes) override {
    Actor& a = actors_[static_cast<std::size_t>(actor)];
    a.peak_memory_bytes = std::max(a.peak_memory_bytes, bytes);
    if (record_memory_timeline_) a.memory_timeline.set(time_ns, bytes);
  }
  void actor_idle(int actor, std::int64_t time_ns) override {
    Actor& a = actors_[static_cast<std::size_t>(actor)];
    a.finish_ns = std::max(a.finish_ns, time_ns);
  }

  [[nodiscard]] const std::vector<Actor>& actors() const noexcept { return actors_; }
  /// The step: when the last actor went idle or ended a pass.
  [[nodiscard]] std::int64_t step_ns() const noexcept {
    std::int64_t step = 0;
    for (const Actor& a : actors_) step = std::max({step, a.finish_ns, a.last_end_ns});
    return step;
  }

 private:
  std::vector<Actor> actors_;
  bool record_memory_timeline_ = false;
};

}  // namespace mpsim::engine
