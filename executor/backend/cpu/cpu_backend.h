#pragma once
/// The CPU backend: host memory, Eigen for matrix products, plain loops for the rest, and MPI for
/// messages and collectives. Every wait (a recv, a collective) polls its MPI request against the
/// deadline BackendOptions::peer_timeout_s, so a peer that died or never answers ends in a
/// BackendError naming it instead of a hang. MPI is initialised (MPI_THREAD_FUNNELED or more)
/// before make_cpu_backend(); without it the backend is a world of one rank whose math works and
/// whose communication throws (unit tests). The backend is used from one thread.
#include <memory>

#include "executor/backend/backend.h"

namespace mpsim::executor {

[[nodiscard]] std::unique_ptr<Backend> make_cpu_backend(const BackendOptions& options);

}  // namespace mpsim::executor
