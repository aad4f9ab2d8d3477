#pragma once
/// The CUDA backend: device memory, cuBLAS for matrix products, small kernels for the rest, NCCL
/// for messages and collectives, CUDA events for marks. Plain C++: includable without nvcc.
///
/// - Device: the rank's place among its node's ranks (MPI_Comm_split_type, MPI_COMM_TYPE_SHARED); a node
///   with more ranks than visible devices is a one-line error (device_rules.h).
/// - All math, copies, receives and collectives run in issue order on one stream. Sends run on a
///   stream per peer, after the work issued before them, so a send never holds up what follows.
/// - NCCL is bootstrapped over MPI: MPI must be initialised (MPI_THREAD_FUNNELED or more) before
///   make_cuda_backend(), which is collective over MPI_COMM_WORLD. The backend is used from one
///   thread.
/// - Every wait (recv, a send handle's wait, a collective, barrier) polls against the deadline
///   BackendOptions::peer_timeout_s; past it the NCCL communicator involved is aborted and
///   BackendError names the peer or group.
/// - Point-to-point messages are matched by (peer, tag) as with MPI: each carries a small envelope
///   (tag, count) ahead of its floats, and one that arrives before the recv() asking for it waits
///   in device memory. Each ordered pair of ranks has its own two-rank NCCL communicator, so a
///   send never holds up this rank's receives, collectives or compute (MPI_Isend behaviour).
/// - Marks are CUDA events on the stream, reported in ns on this rank's steady clock.
#include <memory>

#include "executor/backend/backend.h"

namespace mpsim::executor {

/// Throws BackendError when no CUDA device is visible or a CUDA/NCCL/MPI call fails.
[[nodiscard]] std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace mpsim::executor
