#include "executor/backend/make_backend.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "executor/backend/cpu/cpu_backend.h"
#include "executor/backend/cuda_module.h"

namespace mpsim::executor {

namespace {

/// Where the CUDA backend module is: MPSIM_CUDA_BACKEND, else beside the running executable.
std::filesystem::path cuda_module_path() {
  if (const char* given = std::getenv("MPSIM_CUDA_BACKEND"); given != nullptr && *given != '\0') return given;
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path(kCudaModuleFile) : self.parent_path() / kCudaModuleFile;
}

std::unique_ptr<Backend> load_cuda_backend(const BackendOptions& options) {
  const std::filesystem::path path = cuda_module_path();
  // Opened once and kept for the life of the process: the backend's code lives in it.
  void* module = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (module == nullptr) {
    const char* why = ::dlerror();
    throw BackendError("backend \"cuda\" is not available: cannot load " + path.string() + " (" +
                       (why != nullptr ? why : "unknown error") +
                       "); this mpsim was built without CUDA, or the module is not beside it (set MPSIM_CUDA_BACKEND)");
  }
  const auto factory = reinterpret_cast<CudaBackendFactory>(::dlsym(module, kCudaModuleFactory));
  if (factory == nullptr) {
    throw BackendError("backend \"cuda\": " + path.string() + " has no " + kCudaModuleFactory);
  }
  return std::unique_ptr<Backend>(factory(&options));
}

}  // namespace

std::unique_ptr<Backend> make_backend(std::string_view name, const BackendOptions& options) {
  if (name == "cpu") return make_cpu_backend(options);
  if (name == "cuda") return load_cuda_backend(options);
  throw BackendError("unknown backend \"" + std::string(name) + "\": expected cpu or cuda");
}

}  // namespace mpsim::executor
