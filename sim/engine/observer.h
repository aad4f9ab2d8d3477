#pragma once
/// What the engine reports as it runs, for whoever records it. The engine holds no tracing logic:
/// the Chrome-trace recorder (TimelineRecorder) and the device accounting the report is built from
/// (ActivityRecorder) are observers, and so can be anything a caller passes in EngineOptions.
///
/// Actors: one per (pipeline rank, data-parallel replica), standing for the GPUs of `members`
/// (simulator.h). Times are integer nanoseconds from the step's start; every callback comes in the
/// engine's deterministic event order.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/schedule/program.h"
#include "sim/topology/cluster.h"

namespace mpsim::engine {

/// One op of a rank's stream as it ran. `op_index` is its index in streams[rank]: the op's identity,
/// shared with the executor's measured spans.
struct OpEvent {
  int actor = 0;
  int rank = 0;
  std::size_t op_index = 0;
  const schedule::Op* op = nullptr;
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  int stage = 0;           ///< the virtual stage it belongs to (a collective of the gradient stream: the rank)
  std::int64_t bytes = 0;  ///< data it moved per GPU (sends, collectives)
};

class Observer {
 public:
  virtual ~Observer() = default;
  /// Before the run: actor `actor` of pipeline rank `rank` stands for `members` (global ranks), the
  /// first of which is `device`.
  virtual void actor_added(int /*actor*/, int /*rank*/, int /*replica*/, topology::DeviceId /*device*/,
                           const std::vector<int>& /*members*/) {}
  /// A compute op (F, B, I, W, optimizer step) ran for its own duration.
  virtual void compute_ran(const OpEvent&) {}
  /// The compute stream was held from `start` to `end`: a compute op together with the in-layer
  /// collectives it waited for, or a blocking in-layer collective. `pipeline`: a pass (not the optimizer).
  virtual void stream_held(int /*actor*/, std::int64_t /*start_ns*/, std::int64_t /*end_ns*/, bool /*pipeline*/) {}
  /// Of such a hold, the compute stream waited on in-layer collectives from `start` to `end`: a blocking
  /// one (a tensor-parallel reduction not overlapped, a ZeRO-3 parameter gather, a context-parallel
  /// exchange, an expert all-to-all), or overlapped
  /// ones that outlasted their pass. Exposed communication, though the stream is held.
  virtual void communication_waited(int /*actor*/, std::int64_t /*start_ns*/, std::int64_t /*end_ns*/) {}
  /// A Recv waited for its data (only when it had to).
  virtual void recv_waited(const OpEvent&) {}
  /// A Send's data arrived.
  virtual void send_done(const OpEvent&) {}
  /// A collective ended, for each actor it belongs to (in-layer ones: op->stream says which).
  virtual void collective_done(const OpEvent&) {}
  /// A flow crossed link `link` from `start` to `end`, carrying `bytes` over it.
  virtual void link_used(std::size_t /*link*/, std::int64_t /*start_ns*/, std::int64_t /*end_ns*/, std::int64_t /*bytes*/) {}
  /// The actor's memory became `bytes` at `time`.
  virtual void memory_changed(int /*actor*/, std::int64_t /*time_ns*/, std::int64_t /*bytes*/) {}
  /// The actor has nothing left to do (its stream and its collectives are done) at `time`.
  virtual void actor_idle(int /*actor*/, std::int64_t /*time_ns*/) {}
};

}  // namespace mpsim::engine
