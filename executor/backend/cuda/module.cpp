// The CUDA backend as a module that make_backend("cuda") opens at run time (executor/backend/
// make_backend.cpp), so that mpsim links no CUDA, cuBLAS or NCCL library: the simulator and the
// planner start without them, and run where none is installed.
#include <memory>

#include "executor/backend/cuda/cuda_backend.h"
#include "executor/backend/cuda_module.h"

extern "C" __attribute__((visibility("default"))) mpsim::executor::Backend* MPSIM_CUDA_BACKEND_FACTORY(
    const mpsim::executor::BackendOptions* options) {
  return mpsim::executor::make_cuda_backend(*options).release();
}
