#include <array>
#include <stdexcept>

#include "sim/schedule/generators.h"

namespace mpsim::schedule {

namespace {

/// The generator of each schedule, in plan::ScheduleKind's order (plan::kScheduleTraits' rows).
using Generator = Program (*)(const PipelineShape&);
struct GeneratorRow {
  plan::ScheduleKind kind;
  Generator make;
};
constexpr std::array<GeneratorRow, plan::kScheduleKindCount> kGenerators{{
    {plan::ScheduleKind::GPipe, make_gpipe},
    {plan::ScheduleKind::OneFOneB, make_1f1b},
    {plan::ScheduleKind::Interleaved1F1B, make_interleaved_1f1b},
    {plan::ScheduleKind::ZbH1, make_zb_h1},
    {plan::ScheduleKind::ZbH2, make_zb_h2},
    {plan::ScheduleKind::SageMakerInterleaved, make_sagemaker_interleaved},
    {plan::ScheduleKind::ZbV, make_zb_v},
    {plan::ScheduleKind::DualPipeV, make_dualpipe_v},
    {plan::ScheduleKind::ZbAuto, make_zb_auto},
    {plan::ScheduleKind::VHalf, make_v_half},
    {plan::ScheduleKind::VMin, make_v_min},
    {plan::ScheduleKind::DualPipe, make_dualpipe},
}};
consteval bool generators_in_enum_order() {
  for (std::size_t i = 0; i < kGenerators.size(); ++i) {
    if (static_cast<std::size_t>(kGenerators[i].kind) != i) return false;
  }
  return true;
}
static_assert(generators_in_enum_order(), "kGenerators: one row per ScheduleKind, in the enum's order");

}  // namespace

Program make_program(const PipelineShape& shape) {
  const auto index = static_cast<std::size_t>(shape.kind);
  // Only a value cast from outside the enum is out of range.
  if (index >= kGenerators.size()) throw std::invalid_argument("not a schedule kind");
  return kGenerators[index].make(shape);
}

}  // namespace mpsim::schedule
