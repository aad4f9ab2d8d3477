#include "sim/launch/export.h"

namespace mpsim::launch {

std::string export_nemo(const ExportInput& input) {
  cannot_express(input, "nemo", "schedule", "not written yet");
}

}  // namespace mpsim::launch
