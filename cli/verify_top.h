#pragma once
/// `mpsim plan --verify-top K`: the K best plans run a few steps through the executor (mpirun of
/// `mpsim execute`), predicted beside measured, ranked again by measurement.
#include <optional>
#include <string>
#include <vector>

#include "cli/inputs.h"
#include "planner/search.h"

namespace mpsim::cli {

struct VerifyOptions {
  int top = 0;
  std::string backend = "cpu";
  std::optional<int> ranks;  ///< must equal the plans' GPUs when given
  int steps = 3;             ///< measured steps per plan (the median is kept)
  int warmup = 1;
  InputFiles files;                ///< the planner's topology and model
  std::vector<std::string> sets;   ///< the planner's --set overrides, passed on
};

struct VerifiedPlan {
  int predicted_rank = 0;  ///< 1-based, in the planner's ranking
  planner::Evaluated evaluated;
  std::optional<double> measured_step_s;  ///< unset: the run failed
  std::string failure;                    ///< why, when it failed
};

/// Runs the first `options.top` of `ranked` and returns them ordered by measured step time (plans
/// that could not run last, in predicted order). Throws InputError when --ranks differs from the plans' GPUs.
[[nodiscard]] std::vector<VerifiedPlan> verify_top(const std::vector<planner::Evaluated>& ranked,
                                                   const VerifyOptions& options);

}  // namespace mpsim::cli
