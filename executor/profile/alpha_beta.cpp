#include "executor/profile/alpha_beta.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <Eigen/Dense>

namespace mpsim::executor::profile {

AlphaBeta fit_alpha_beta(std::span<const TransferSample> samples) {
  if (samples.size() < 2) throw std::invalid_argument("an alpha-beta fit needs at least two message sizes");
  const auto n = static_cast<Eigen::Index>(samples.size());
  // Rows of the weighted system: [w, w * bytes] * [alpha, 1/beta]^T = w * time, with w = 1 / time.
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b(n);
  bool sizes_differ = false;
  for (Eigen::Index i = 0; i < n; ++i) {
    const TransferSample& s = samples[static_cast<std::size_t>(i)];
    if (!(s.seconds > 0) || s.bytes < 0) throw std::invalid_argument("an alpha-beta sample needs a positive time");
    if (s.bytes != samples.front().bytes) sizes_differ = true;
    const double w = 1.0 / s.seconds;
    a(i, 0) = w;
    a(i, 1) = w * static_cast<double>(s.bytes);
    b(i) = 1.0;  // w * time
  }
  if (!sizes_differ) throw std::invalid_argument("an alpha-beta fit needs at least two different message sizes");
  // Column scaling keeps the normal equations well conditioned (bytes reach 1e8, times 1e-6).
  const Eigen::Vector2d scale(1.0 / a.col(0).norm(), 1.0 / a.col(1).norm());
  const Eigen::Vector2d x = (a * scale.asDiagonal()).colPivHouseholderQr().solve(b).cwiseProduct(scale);
  double alpha = x(0);
  double inverse_beta = x(1);
  if (alpha < 0) {
    // Refit through the origin: minimise sum ((bytes * c - t) / t)^2 over c.
    alpha = 0;
    inverse_beta = a.col(1).dot(b) / a.col(1).squaredNorm();
  }
  if (!(inverse_beta > 0) || !std::isfinite(inverse_beta)) {
    throw std::invalid_argument("the measured times do not grow with the message size: no bandwidth to fit");
  }
  AlphaBeta fit{alpha, 1.0 / inverse_beta, 0};
  for (const TransferSample& s : samples) {
    const double residual = std::abs(fit.time_s(s.bytes) - s.seconds) / s.seconds;
    fit.max_relative_residual = std::max(fit.max_relative_residual, residual);
  }
  return fit;
}

}  // namespace mpsim::executor::profile
