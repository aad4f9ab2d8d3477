#pragma once
/// Profiling the model itself, as SageMaker's and Alpa's profilers do: the executor's real layers for
/// a model (executor/net, tensor degree 1) run one microbatch at a time on this rank, and each layer's
/// forward, backward-input and backward-weight passes are timed. The result becomes an explicit-layer
/// model file (docs/formats/model.md) that keeps the original model's parameters, activation and output
/// bytes, and adds the measured times, which the simulator then uses instead of FLOP-derived durations.
#include <cstdint>
#include <string>
#include <vector>

#include "executor/backend/backend.h"
#include "sim/model/model.h"

namespace mpsim::executor::profile {

struct LayerProfileOptions {
  int micro_batch = 1;   ///< samples per microbatch
  int warmup = 2;        ///< untimed repetitions first (allocator, caches, page faults)
  int repetitions = 20;  ///< timed repetitions, each one forward and one backward of every layer
  int rounds = 5;        ///< the repetitions fall into this many rounds (at most one per repetition)
  std::uint64_t seed = 1;
};

/// Measured seconds of one model layer's passes for one microbatch.
struct LayerTiming {
  double forward_s = 0;
  double backward_input_s = 0;
  double backward_weight_s = 0;
};

struct LayerProfile {
  std::string backend;
  int micro_batch = 1;
  int repetitions = 0;
  int rounds = 1;
  int ranks = 1;  ///< ranks whose measurements were averaged
  /// How far the rounds' median whole-model times lie apart: (slowest - fastest) / median round, the
  /// mean over ranks. A prediction from this profile is no closer than that to a step measured on this machine.
  double spread = 0;
  /// Each rank's whole-model time (the sum of its own medians of every pass) over the mean of the ranks',
  /// in rank order: how much slower (above 1) or faster each rank computes than the layers' times say.
  /// Ranks of one machine differ (another process on a core, a core's clock); one rank: {1}.
  std::vector<double> rank_time_factors;
  /// One entry per model layer, in model order. The executor's stand-ins for models listed by hand
  /// (the input layer before the first, the squared loss after the last) are counted in the first and
  /// the last layer, as they run in those layers' stages.
  std::vector<LayerTiming> layers;
  /// One Adam step over the layers' parameters, divided by their number (seconds per parameter).
  double adam_s_per_parameter = 0;
  std::int64_t executor_parameters = 0;  ///< parameters of the executor's layers (timed by the Adam step)
};

/// Times every layer of `model` on this rank. Each repetition runs the forward pass of every layer in
/// order, then backward-input in reverse order, then backward-weight in reverse order (as Network runs a
/// chunk), with a backend mark after each pass. A pass's time is the median over the timed
/// repetitions, as `execute` reports its median step: a repetition another process took over (the
/// machine's speed changed by a factor of two within a minute here) does not move the profile. The
/// repetitions fall into rounds in order, and the rounds' median whole-model times give the spread,
/// how much the machine moved while it was profiled. Throws std::invalid_argument for bad options or
/// a model the executor cannot build.
[[nodiscard]] LayerProfile profile_layers(Backend& backend, const model::Model& model,
                                          const LayerProfileOptions& options);

/// Collective over all ranks of `backend`: each rank measures (all at once, as the ranks of a step
/// compute at once), and every rank gets the mean over ranks of each time and every rank's factor
/// (LayerProfile::rank_time_factors).
[[nodiscard]] LayerProfile profile_layers_on_all_ranks(Backend& backend, const model::Model& model,
                                                       const LayerProfileOptions& options);

struct ProfiledModelHeader {
  std::string command;   ///< the command line that measured it, for the comment
  std::string host;
  std::string utc_time;
  /// The model the executor trained, as model::executed_model_yaml() gives it: written as the profiled
  /// model's `profiled_from`, so that `mpsim execute` given the profiled model trains it. Empty for a
  /// listed model (trained as listed).
  std::string profiled_from;
};

/// An explicit-layer model file (docs/formats/model.md) that `mpsim simulate` and `mpsim plan` load:
/// `original`'s layers in order with name, kind, params, FLOPs, activation_bytes (what a layer stashes
/// per sample with no tensor parallelism and no recomputation), input_bytes (what full recomputation
/// keeps), output_bytes and tp_allreduces, plus forward_time, backward_input_time and
/// backward_weight_time from `profile` (per microbatch of profile.micro_batch samples, whole
/// nanoseconds). Model fields: name (original name + "-profiled-mb<B>"), family, dtype (fp32: what
/// the executor's backends compute and hold, whatever the original's; the bytes above are scaled to
/// it), profile_spread, optimizer_time_per_parameter (the Adam step's, when timed) and profiled_from
/// (header.profiled_from). Throws std::invalid_argument when `profile` does not have one timing per layer.
[[nodiscard]] std::string profiled_model_yaml(const model::Model& original, const LayerProfile& profile,
                                              const ProfiledModelHeader& header);

}  // namespace mpsim::executor::profile
