#pragma once
/// How a backend ends, decided once for the CPU and the CUDA backends so that the CPU's fault tests
/// exercise the same policy.
///
/// After a failure (a peer that stopped answering, any error on any rank) nothing may wait on a peer:
/// NCCL's destroy and CUDA's synchronising frees (cudaFreeHost, a stream synchronise with sends
/// pending) need the other ranks, and a stopped peer on the same node would hang this rank before
/// MPI_Abort ends the job. So a failed backend only aborts its channels; the process ends next.
/// After a clean run everything is drained, freed and closed, in that order.
#include <exception>

namespace mpsim::executor {

/// The steps of a backend's teardown; each must not throw.
class TeardownSteps {
 public:
  virtual ~TeardownSteps() = default;
  /// Stops every channel now without waiting for any peer (ncclCommAbort on every communicator).
  virtual void abort_channels() noexcept = 0;
  /// Waits for this rank's queued work and sends to finish.
  virtual void drain() noexcept = 0;
  /// Frees device memory and pinned host memory (which synchronises the device).
  virtual void release_memory() noexcept = 0;
  /// Closes the channels cleanly, in one global order of pairs (ncclCommDestroy needs every member).
  virtual void close_channels() noexcept = 0;
};

/// Whether a backend (or one of its groups) being destroyed now ends a failed run: a wait of its own
/// failed, or an exception is unwinding the stack (an error anywhere, which ends the job next).
[[nodiscard]] inline bool failing(bool own_failure) noexcept { return own_failure || std::uncaught_exceptions() > 0; }

/// After a failure: abort_channels() and nothing else. After a clean run: drain(), release_memory(),
/// close_channels().
inline void tear_down(TeardownSteps& steps, bool failed) noexcept {
  if (failed) {
    steps.abort_channels();
    return;
  }
  steps.drain();
  steps.release_memory();
  steps.close_channels();
}

}  // namespace mpsim::executor
