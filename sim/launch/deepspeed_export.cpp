#include "sim/launch/export.h"

namespace mpsim::launch {

std::string export_deepspeed(const ExportInput& input) {
  cannot_express(input, "deepspeed", "schedule", "not written yet");
}

}  // namespace mpsim::launch
