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
/// - Every NCCL communicator is non-blocking (ncclConfig_t::blocking = 0): creating it, splitting it
///   and enqueueing on it return at once, and the backend polls ncclCommGetAsyncError. Every wait of
///   the host (a download, synchronize, a send handle's wait, the barrier, making a group) polls
///   against the deadline BackendOptions::peer_timeout_s; past it the NCCL communicators involved are
///   aborted and BackendError names the peer or group.
/// - recv() and the collectives only enqueue (the device waits, not the host): their results are
///   there for the work issued after them, and a peer that does not answer is reported at the next
///   host wait, naming the oldest receive or collective still pending. The host runs at most two
///   receives or collectives ahead of the device.
/// - Point-to-point messages are one NCCL group each: an envelope (tag, count) and the floats. A
///   channel's messages (backend.h's ordered_channel) must be received in the order they were sent,
///   with the count sent (the interpreter's programs do both); each envelope is checked at the next
///   host wait, where one that is not the one asked for is a one-line error (message_rules.h). Each
///   ordered pair of ranks has a two-rank NCCL communicator per channel, so a send never holds up
///   this rank's receives, collectives or compute (MPI_Isend behaviour).
/// - Start-up connects everything (pairs, groups; NCCL_RUNTIME_CONNECT=0) and loads the kernels
///   (CUDA_MODULE_LOADING=EAGER where CUDA is not yet initialised, its own kernels, a warm-up product
///   per transpose combination), so no step waits for a handshake or a module load.
/// - Marks are CUDA events on the stream, reported in ns on this rank's steady clock; the mark right
///   after a send is recorded on that send's stream, so the send's span lasts until it is received.
#include <memory>

#include "executor/backend/backend.h"

namespace mpsim::executor {

/// Throws BackendError when no CUDA device is visible or a CUDA/NCCL/MPI call fails.
[[nodiscard]] std::unique_ptr<Backend> make_cuda_backend(const BackendOptions& options);

}  // namespace mpsim::executor
