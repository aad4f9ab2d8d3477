#pragma once
/// PyTorch's pipeline schedule CSV (torch.distributed.pipelining: `_dump_csv` / `_load_csv`, the
/// compute-only form that `_PipelineScheduleRuntime` can run), so that an mpsim schedule can run in
/// TorchTitan and a torch schedule can be simulated here.
///
/// One row per pipeline rank, no header; each cell an action `{stage}{type}{microbatch}` where stage is
/// the global (virtual) stage and type F (forward), B (fused backward), I (input gradient) or W (weight
/// gradient), e.g. `7I3`; an overlapped pair is `({stage}F{mb};{stage}B{mb})OVERLAP_F_B`. An empty cell
/// is an idle slot (PyTorch pads with them). Rows end in "\r\n", as Python's csv module writes them.
#include <string>
#include <string_view>

#include "sim/schedule/program.h"

namespace mpsim::interop {

/// The compute ops of `program`, one row per rank, in the format above. Communication and the
/// optimizer step are left out (PyTorch's lowering and mpsim's passes both re-derive them).
[[nodiscard]] std::string to_torch_csv(const schedule::Program& program);

/// Reads a CSV as above into a compute-only Program of `shape`, whose schedule kind fixes where
/// stages live (Megatron's loop, or the V: plan::ChunkLayout): every action must name a stage of
/// its row's rank and a microbatch below shape.microbatches, and the result must validate
/// (sim/schedule/validate.h: each pass once, dependencies in order, no deadlock). Actions PyTorch adds when it
/// lowers a schedule (SEND_F, RECV_F, SEND_B, RECV_B, UNSHARD, RESHARD, REDUCE_GRAD) are skipped:
/// mpsim re-derives its communication. Throws InputError at `file`, line (the rank + 1) and column
/// of the offending cell.
[[nodiscard]] schedule::Program from_torch_csv(std::string_view text, const std::string& file,
                                               const schedule::PipelineShape& shape);

}  // namespace mpsim::interop
