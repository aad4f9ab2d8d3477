#include <stdexcept>

#include "sim/schedule/generators.h"

namespace mpsim::schedule {

Program make_program(const PipelineShape& shape) {
  switch (shape.kind) {
    case plan::ScheduleKind::GPipe: return make_gpipe(shape);
    case plan::ScheduleKind::OneFOneB: return make_1f1b(shape);
    case plan::ScheduleKind::Interleaved1F1B: return make_interleaved_1f1b(shape);
    case plan::ScheduleKind::ZbH1: return make_zb_h1(shape);
    case plan::ScheduleKind::ZbH2: return make_zb_h2(shape);
    case plan::ScheduleKind::SageMakerInterleaved: return make_sagemaker_interleaved(shape);
    case plan::ScheduleKind::ZbV: return make_zb_v(shape);
    case plan::ScheduleKind::DualPipeV: return make_dualpipe_v(shape);
    case plan::ScheduleKind::ZbAuto: return make_zb_auto(shape);
    case plan::ScheduleKind::VHalf: return make_v_half(shape);
    case plan::ScheduleKind::VMin: return make_v_min(shape);
    case plan::ScheduleKind::DualPipe: return make_dualpipe(shape);
  }
  throw std::invalid_argument("not a schedule kind");  // only a value cast from outside the enum gets here
}

bool splits_backward(plan::ScheduleKind kind) noexcept {
  switch (kind) {
    case plan::ScheduleKind::ZbH1:
    case plan::ScheduleKind::ZbH2:
    case plan::ScheduleKind::ZbV:
    case plan::ScheduleKind::DualPipeV:  // DualPipeV and DualPipe split some of their backwards
    case plan::ScheduleKind::DualPipe:
    case plan::ScheduleKind::ZbAuto:
    case plan::ScheduleKind::VHalf:
    case plan::ScheduleKind::VMin: return true;
    case plan::ScheduleKind::GPipe:
    case plan::ScheduleKind::OneFOneB:
    case plan::ScheduleKind::Interleaved1F1B:
    case plan::ScheduleKind::SageMakerInterleaved: return false;
  }
  return false;
}

}  // namespace mpsim::schedule
