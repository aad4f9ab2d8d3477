#pragma once
/// Shared by the CUDA backend's tests: whether a device is there (the tests skip without one),
/// host matrices with padded rows, and moving them through a Backend.
#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "executor/backend/backend.h"

namespace mpsim::executor::cuda_test {

/// The devices the CUDA runtime reports (0 on any error: no driver, no GPU).
inline int cuda_device_count() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess ? count : 0;
}
/// True when the CUDA runtime reports at least one device.
inline bool has_cuda_device() { return cuda_device_count() > 0; }

/// Why the runtime reports no device, in its own words: a broken driver and a machine without a GPU
/// read differently in a skip message.
inline std::string no_device_reason() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) return std::string("no CUDA device (") + cudaGetErrorName(status) + ")";
  return "no CUDA device (the runtime reports 0)";
}

/// MPSIM_EXPECT_GPU=1, set on machines that have a GPU, makes a device test that cannot run fail
/// instead of skipping, so a broken driver cannot pass the suite as a machine without a GPU would.
inline bool gpu_expected() {
  const char* value = std::getenv("MPSIM_EXPECT_GPU");
  return value != nullptr && std::string_view(value) == "1";
}

/// The exit code with which a test program says it did not run (CTest's SKIP_RETURN_CODE): a skip
/// can then never hide a failure the way a matched "SKIPPED" message could.
inline constexpr int kSkipExitCode = 77;
/// The exit code of a test program that could not run its tests: CTest's skip code, or a failure
/// under MPSIM_EXPECT_GPU=1.
inline int cannot_run_exit_code() { return gpu_expected() ? 1 : kSkipExitCode; }

/// In a test body or SetUp: skip when `has_device` is false, or fail under MPSIM_EXPECT_GPU=1.
#define MPSIM_REQUIRE_DEVICE(has_device, why)                                                      \
  do {                                                                                            \
    if (!(has_device)) {                                                                          \
      if (::mpsim::executor::cuda_test::gpu_expected()) FAIL() << (why) << " under MPSIM_EXPECT_GPU=1"; \
      GTEST_SKIP() << (why);                                                                      \
    }                                                                                             \
  } while (false)

/// A row-major host matrix whose rows are `ld` floats apart (ld > cols exercises strided views).
struct HostMatrix {
  std::int64_t rows = 0;
  std::int64_t cols = 0;
  std::int64_t ld = 0;
  std::vector<float> data;

  HostMatrix(std::int64_t r, std::int64_t c, std::int64_t pad = 0)
      : rows(r), cols(c), ld(c + pad), data(static_cast<std::size_t>(r * (c + pad)), 0.0f) {}
  float& operator()(std::int64_t r, std::int64_t c) { return data[static_cast<std::size_t>(r * ld + c)]; }
  float operator()(std::int64_t r, std::int64_t c) const { return data[static_cast<std::size_t>(r * ld + c)]; }
  /// Uniform values in [lo, hi), padding included (so a kernel writing past cols shows).
  HostMatrix& randomize(std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
    std::uniform_real_distribution<float> dist(lo, hi);
    for (float& v : data) v = dist(rng);
    return *this;
  }
};

/// Device copies of host matrices, released with the pool.
class DevicePool {
 public:
  explicit DevicePool(Backend& backend) : backend_(backend) {}
  ~DevicePool() {
    for (float* p : owned_) backend_.release(p);
  }
  DevicePool(const DevicePool&) = delete;
  DevicePool& operator=(const DevicePool&) = delete;

  MatrixView upload(const HostMatrix& m) {
    float* p = raw(m.data);
    return {p, m.rows, m.cols, m.ld};
  }
  float* raw(std::span<const float> values) {
    float* p = backend_.allocate(values.size());
    owned_.push_back(p);
    backend_.upload(values, p);
    return p;
  }
  /// The whole buffer behind a view made by upload(), padding included.
  HostMatrix download(MatrixView v) {
    HostMatrix m(v.rows, v.cols, v.ld - v.cols);
    backend_.download(v.data, m.data);
    return m;
  }
  std::vector<float> download(const float* p, std::size_t count) {
    std::vector<float> out(count);
    backend_.download(p, out);
    return out;
  }

 private:
  Backend& backend_;
  std::vector<float*> owned_;
};

}  // namespace mpsim::executor::cuda_test
