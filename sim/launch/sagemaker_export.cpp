#include "sim/launch/export.h"

namespace mpsim::launch {

std::string export_sagemaker(const ExportInput& input) {
  cannot_express(input, "sagemaker", "schedule", "not written yet");
}

}  // namespace mpsim::launch
