#include "executor/backend/make_backend.h"

#include <string>

#include "executor/backend/cpu/cpu_backend.h"
#if MPSIM_WITH_CUDA
#include "executor/backend/cuda/cuda_backend.h"
#endif

namespace mpsim::executor {

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  if (name == "cpu") return make_cpu_backend(options);
  if (name == "cuda") {
#if MPSIM_WITH_CUDA
    return make_cuda_backend(options);
#else
    throw BackendError("backend \"cuda\" is not available: this mpsim was built without CUDA (MPSIM_WITH_CUDA=OFF)");
#endif
  }
  throw BackendError("unknown backend \"" + std::string(name) + "\": expected cpu or cuda");
}

}  // namespace mpsim::executor
