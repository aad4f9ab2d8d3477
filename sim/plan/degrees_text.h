#pragma once
/// The degrees in a report's words.
#include <string>

#include "sim/plan/degrees.h"

namespace mpsim::plan {

/// The degrees as a report's header names them: "TP 8 x PP 2 x DP 2", with CP, EP and (where it differs
/// from TP) ETP inserted wherever their degree is above one, so that no axis a plan uses goes unsaid.
[[nodiscard]] std::string summary(const Degrees& degrees);

}  // namespace mpsim::plan
