#pragma once
/// The α–β model of a message: time = α + bytes / β (Hockney), fitted to measured points.
#include <cstdint>
#include <span>

namespace mpsim::executor::profile {

struct TransferSample {
  std::int64_t bytes = 0;
  double seconds = 0;  ///< one-way time of one message of `bytes`
};

struct AlphaBeta {
  double alpha_s = 0;               ///< latency: the time of an empty message
  double beta_bytes_per_s = 0;      ///< bandwidth: bytes per second once the latency is paid
  double max_relative_residual = 0; ///< max over samples of |fit - measured| / measured

  [[nodiscard]] double time_s(std::int64_t bytes) const noexcept {
    return alpha_s + static_cast<double>(bytes) / beta_bytes_per_s;
  }
};

/// Least-squares fit of time = α + bytes / β over `samples`, each weighted by 1 / its time, so the
/// fit minimises relative residuals: the small messages fix α and the large ones β, instead of the
/// largest message alone deciding both. A negative α (noise on a link with almost no latency) is
/// clamped to 0 and β refitted. Needs at least two samples with different sizes and positive times;
/// throws std::invalid_argument otherwise, or when the points do not give a positive bandwidth.
/// O(samples).
[[nodiscard]] AlphaBeta fit_alpha_beta(std::span<const TransferSample> samples);

}  // namespace mpsim::executor::profile
