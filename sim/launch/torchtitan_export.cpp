#include "sim/launch/export.h"

namespace mpsim::launch {

std::string export_torchtitan(const ExportInput& input) {
  cannot_express(input, "torchtitan", "schedule", "not written yet");
}

}  // namespace mpsim::launch
