#include "sim/plan/degrees_text.h"

#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace mpsim::plan {

std::string summary(const Degrees& degrees) {
  std::string out;
  const auto add = [&](Axis a) {
    std::string label(short_name(a));
    for (char& c : label) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    out += fmt::format("{}{} {}", out.empty() ? "" : " x ", label, degrees[a]);
  };
  add(Axis::Tensor);
  if (degrees[Axis::Context] > 1) add(Axis::Context);
  add(Axis::Pipeline);
  add(Axis::Data);
  if (degrees[Axis::Expert] > 1) {
    add(Axis::Expert);
    if (degrees[Axis::ExpertTensor] != degrees[Axis::Tensor]) add(Axis::ExpertTensor);
  }
  return out;
}

std::string microbatches_text(const Plan& p) {
  if (!p.uneven_shares()) return std::to_string(p.microbatches);
  return fmt::format("{}", fmt::join(p.replica_microbatches, "+"));
}

}  // namespace mpsim::plan
