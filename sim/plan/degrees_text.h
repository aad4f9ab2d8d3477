#pragma once
/// The degrees and the microbatch shares in a report's words.
#include <string>

#include "sim/plan/degrees.h"
#include "sim/plan/plan.h"

namespace mpsim::plan {

/// The degrees as a report's header names them: "TP 8 x PP 2 x DP 2", with CP, EP and (where it differs
/// from TP) ETP inserted wherever their degree is above one, so that no axis a plan uses goes unsaid.
[[nodiscard]] std::string summary(const Degrees& degrees);
/// The microbatches each data-parallel replica runs, as a report names them: "128", or where the replicas'
/// shares differ each replica's, "180+76" (replica_microbatches).
[[nodiscard]] std::string microbatches_text(const Plan& p);

}  // namespace mpsim::plan
