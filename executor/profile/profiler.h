#pragma once
/// Measuring the machine the ranks run on, through the Backend interface only, so the CPU (Eigen +
/// MPI) and CUDA (cuBLAS + NCCL) backends are profiled by the same code:
/// - GEMM throughput (fp32) for a list of shapes, all ranks at once (as a training step runs them),
///   from the mean time of a repetition (time the OS gives other processes counts, as in a step);
/// - memory bandwidth from a large axpy (y += a x: 12 bytes of traffic per element), all ranks at once;
/// - point-to-point time between every pair of ranks by ping-pong over a range of message sizes,
///   with the α–β fit of each pair;
/// - all-reduce over all ranks: algorithm and bus bandwidth (nccl-tests' 2(n-1)/n factor).
/// Every rank must call profile_machine() with the same options (it is collective); every rank gets
/// the same result.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "executor/backend/backend.h"
#include "executor/profile/alpha_beta.h"
#include "sim/model/model.h"

namespace mpsim::executor::profile {

/// C (m x n) = op(A) (m x k) * op(B) (k x n), fp32.
struct GemmShape {
  std::int64_t m = 0, n = 0, k = 0;
  Transpose ta = Transpose::No;
  Transpose tb = Transpose::No;
  std::string label;     ///< what the model uses it for: "qkv", "mlp-up dW", ...
  double weight = 1;     ///< FLOPs the model spends in this shape per step, relative; for the weighted rate

  [[nodiscard]] double flops() const noexcept {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

/// The GEMMs one training step of `model` runs with `micro_batch` samples per microbatch and no tensor
/// parallelism: per transformer block the QKV, attention (scores and context, per head), output
/// projection and MLP products, and the vocabulary projection, each forward (A x W) and, for the
/// linear layers, both backward products (dY x W^T and X^T x dY); identical shapes merged, weights =
/// their FLOPs in the step. A model without transformer hyperparameters gets default_gemm_shapes().
[[nodiscard]] std::vector<GemmShape> gemm_shapes_for_model(const model::Model& model, int micro_batch,
                                                           std::string_view backend);
/// Square and rectangular shapes sized for the backend ("cuda": 1024 to 8192; otherwise 256 to 1024),
/// weighted by their FLOPs.
[[nodiscard]] std::vector<GemmShape> default_gemm_shapes(std::string_view backend);

struct ProfileOptions {
  std::vector<GemmShape> gemm_shapes;
  std::int64_t min_message_bytes = 4;
  std::int64_t max_message_bytes = 64LL << 20;  ///< ping-pong sizes: min, 4 min, 16 min, ... up to this
  /// The α–β fit uses the sizes from this one up (all of them when fewer than two qualify). Below a few
  /// KiB MPI and NCCL switch protocols (eager and rendezvous; LL and Simple), so one line cannot follow
  /// both regimes; a training step sends activations and gradients, KiBs and more, so the fit follows
  /// those. The smaller sizes are still measured and reported.
  std::int64_t fit_min_bytes = 4096;
  std::int64_t axpy_floats = 32LL << 20;        ///< per vector: 128 MiB, beyond any CPU cache
  double seconds_per_measurement = 0.2;         ///< GEMM and axpy repetitions aim at this much time
  int max_repetitions = 50;
};

struct GemmMeasurement {
  GemmShape shape;
  double flops_per_s = 0;  ///< mean over ranks of each rank's FLOPs / mean time of a repetition
};

struct LinkMeasurement {
  int rank_a = 0, rank_b = 0;
  std::vector<TransferSample> samples;  ///< median one-way time (half a round trip) per size
  AlphaBeta fit;                        ///< over the samples from ProfileOptions::fit_min_bytes up
  std::int64_t fit_min_bytes = 0;
  /// The medians admitted no fit (times that do not grow with the size: a loaded machine), so the
  /// fit is over the fastest round trip of each size instead.
  bool fit_on_fastest = false;
};

struct CollectiveMeasurement {
  std::int64_t bytes = 0;
  double seconds = 0;              ///< median over repetitions, slowest rank
  double algorithm_bandwidth = 0;  ///< bytes / seconds
  double bus_bandwidth = 0;        ///< algorithm bandwidth x 2(n-1)/n
};

struct ProfileResult {
  std::string backend;
  int ranks = 1;
  std::vector<GemmMeasurement> gemms;
  /// The GEMM throughput to use: total weighted FLOPs / total time at the measured rates (the
  /// FLOP-weighted harmonic mean), i.e. how fast the model's mix of GEMMs runs.
  double gemm_flops_per_s = 0;
  double memory_bandwidth = 0;  ///< bytes/s per rank, all ranks streaming at once
  std::vector<LinkMeasurement> links;  ///< every pair a < b; empty with one rank
  /// The link to use: the median α and the median β over the pairs (zeros with one rank).
  AlphaBeta link;
  std::vector<CollectiveMeasurement> allreduce;  ///< empty with one rank
};

/// Collective over all ranks of `backend`. Throws BackendError from the backend, or
/// std::invalid_argument when a fit is impossible (no sizes, times that do not grow).
[[nodiscard]] ProfileResult profile_machine(Backend& backend, const ProfileOptions& options);

/// sum(weight) / sum(weight / rate): the rate at which the weighted mix runs. 0 for no measurement.
[[nodiscard]] double weighted_harmonic_rate(const std::vector<GemmMeasurement>& gemms) noexcept;

/// The samples of `samples` from `min_bytes` up, or all of them when fewer than two are that large.
[[nodiscard]] std::vector<TransferSample> fitted_samples(const std::vector<TransferSample>& samples,
                                                         std::int64_t min_bytes);

/// Fits `link.samples` (medians) from `min_bytes` up; when they admit no fit, fits `fastest` (the
/// fastest one-way time per size) and sets link.fit_on_fastest. Throws std::invalid_argument when
/// neither does.
void fit_link(LinkMeasurement& link, const std::vector<TransferSample>& fastest, std::int64_t min_bytes);

/// Message sizes of the ping-pong: min, 4 min, 16 min, ... and max itself if not on that ladder.
[[nodiscard]] std::vector<std::int64_t> message_sizes(std::int64_t min_bytes, std::int64_t max_bytes);

}  // namespace mpsim::executor::profile
