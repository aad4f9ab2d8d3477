#pragma once
/// Device memory with an owner: a Buffer releases what it allocated, and a MemoryMeter counts the
/// bytes the executor holds (the "peak memory" of a measured report).
#include <cstddef>
#include <cstdint>
#include <utility>

#include "executor/backend/backend.h"

namespace mpsim::executor {

/// Bytes held now and at most since construction.
struct MemoryMeter {
  std::int64_t current = 0;
  std::int64_t peak = 0;
  void add(std::int64_t bytes) noexcept {
    current += bytes;
    if (current > peak) peak = current;
  }
};

/// A rows x cols fp32 matrix in device memory (zero-filled), released on destruction. Movable only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Backend& backend, MemoryMeter& meter, std::int64_t rows, std::int64_t cols)
      : backend_(&backend), meter_(&meter), rows_(rows), cols_(cols) {
    data_ = backend.allocate(count());
    meter.add(static_cast<std::int64_t>(count() * sizeof(float)));
  }
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept {
    if (this != &other) {
      reset();
      backend_ = std::exchange(other.backend_, nullptr);
      meter_ = std::exchange(other.meter_, nullptr);
      data_ = std::exchange(other.data_, nullptr);
      rows_ = std::exchange(other.rows_, 0);
      cols_ = std::exchange(other.cols_, 0);
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void reset() noexcept {
    if (data_ != nullptr) {
      backend_->release(data_);
      meter_->add(-static_cast<std::int64_t>(count() * sizeof(float)));
    }
    data_ = nullptr;
    rows_ = cols_ = 0;
  }
  [[nodiscard]] float* data() const noexcept { return data_; }
  [[nodiscard]] std::size_t count() const noexcept { return static_cast<std::size_t>(rows_ * cols_); }
  [[nodiscard]] bool empty() const noexcept { return data_ == nullptr; }
  [[nodiscard]] MatrixView view() const noexcept { return {data_, rows_, cols_, cols_}; }

 private:
  Backend* backend_ = nullptr;
  MemoryMeter* meter_ = nullptr;
  float* data_ = nullptr;
  std::int64_t rows_ = 0;
  std::int64_t cols_ = 0;
};

}  // namespace mpsim::executor
