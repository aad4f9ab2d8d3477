// PyTorch's pipelining CSV: every generator's order survives export and import unchanged, the files
// PyTorch's own schedule classes would write import as mpsim's generators lay them out, and bad
// files are refused at the offending cell.
#include "interop/formats/torch_csv.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <sstream>
#include <string>

#include "sim/core/input_error.h"
#include "sim/schedule/generators.h"
#include "tests/unit/sim/schedule/schedule_test_support.h"

namespace mpsim::interop {
namespace {

using plan::ScheduleKind;
using schedule::Op;
using schedule::OpKind;
using schedule::PipelineShape;
using schedule::Program;
using schedule::testing::shape;

std::string read(const std::string& relative) {
  std::ifstream in(std::string(MPSIM_SOURCE_DIR) + "/" + relative, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

/// The message of the InputError that importing `text` into `s` throws, as "LINE:COLUMN: message".
std::string import_error(const std::string& text, const PipelineShape& s) {
  try {
    (void)from_torch_csv(text, "t.csv", s);
  } catch (const InputError& e) {
    return std::to_string(e.where().line) + ":" + std::to_string(e.where().column) + ": " + e.message();
  }
  return "no error";
}

TEST(TorchCsv, EveryGeneratorRoundTripsByteForByte) {
  const PipelineShape shapes[] = {
      shape(ScheduleKind::GPipe, 4, 8),
      shape(ScheduleKind::OneFOneB, 4, 8),
      shape(ScheduleKind::OneFOneB, 3, 2),
      shape(ScheduleKind::ZbH1, 4, 8),
      shape(ScheduleKind::ZbH2, 4, 9),
      shape(ScheduleKind::Interleaved1F1B, 4, 8, 2, 4),
      shape(ScheduleKind::Interleaved1F1B, 2, 5, 3, 3),
      shape(ScheduleKind::SageMakerInterleaved, 4, 8, 1, 0, 3),
      shape(ScheduleKind::ZbV, 4, 8, 2),
      shape(ScheduleKind::ZbV, 3, 2, 2),
      shape(ScheduleKind::VHalf, 4, 8, 2),
      shape(ScheduleKind::VMin, 3, 5, 2),
      shape(ScheduleKind::ZbAuto, 4, 8),
      shape(ScheduleKind::DualPipeV, 4, 10, 2),
      shape(ScheduleKind::DualPipeV, 1, 2, 2),
      shape(ScheduleKind::DualPipe, 4, 8, 2),
      shape(ScheduleKind::DualPipe, 2, 6, 2),
  };
  for (const PipelineShape& s : shapes) {
    const Program program = make_program(s);
    const std::string csv = to_torch_csv(program);
    const Program imported = from_torch_csv(csv, "t.csv", s);
    EXPECT_EQ(imported, program) << plan::to_string(s.kind) << " p" << s.stages << " m" << s.microbatches;
    EXPECT_EQ(to_torch_csv(imported), csv) << plan::to_string(s.kind);
  }
}

TEST(TorchCsv, WritesStagesTypesAndPairsAsPyTorch) {
  const std::string zb_h1 = to_torch_csv(make_program(shape(ScheduleKind::ZbH1, 2, 2)));
  EXPECT_EQ(zb_h1, "0F0,0F1,0I0,0W0,0I1,0W1\r\n1F0,1I0,1F1,1I1,1W0,1W1\r\n");
  // Interleaved: stage = chunk x p + rank.
  const std::string interleaved = to_torch_csv(make_program(shape(ScheduleKind::Interleaved1F1B, 2, 2, 2, 2)));
  EXPECT_EQ(interleaved.substr(0, interleaved.find(',')), "0F0");
  EXPECT_NE(interleaved.find("2F0"), std::string::npos);
  // DualPipeV: rank 0 holds stages 0 and 7 of 8; the pairs carry both halves.
  const std::string dualpipe = to_torch_csv(make_program(shape(ScheduleKind::DualPipeV, 4, 10, 2)));
  EXPECT_NE(dualpipe.find("(0F7;7B3)OVERLAP_F_B"), std::string::npos);
}

TEST(TorchCsv, PyTorchsZbvImportsAsTheGenerator) {
  const PipelineShape s = shape(ScheduleKind::ZbV, 4, 8, 2);
  EXPECT_EQ(from_torch_csv(read("tests/data/torch/zbv_p4_m8.csv"), "zbv_p4_m8.csv", s), make_program(s));
}

TEST(TorchCsv, PyTorchsDualPipeVImportsAsTheGenerator) {
  const PipelineShape s = shape(ScheduleKind::DualPipeV, 4, 10, 2);
  const Program imported = from_torch_csv(read("tests/data/torch/dualpipev_p4_m10.csv"), "dualpipev_p4_m10.csv", s);
  const Program generated = make_program(s);
  for (int r = 0; r < s.stages; ++r) {
    const auto& a = imported.streams[static_cast<std::size_t>(r)];
    const auto& b = generated.streams[static_cast<std::size_t>(r)];
    for (const OpKind kind : {OpKind::Forward, OpKind::Backward, OpKind::BackwardInput, OpKind::BackwardWeight,
                              OpKind::ForwardBackward}) {
      const auto count = [&](const std::vector<Op>& ops) {
        return std::count_if(ops.begin(), ops.end(), [&](const Op& op) { return op.kind == kind; });
      };
      EXPECT_EQ(count(a), count(b)) << "rank " << r << " " << to_string(kind);
    }
  }
  EXPECT_EQ(imported, generated);
}

TEST(TorchCsv, SkipsWhatPyTorchsLoweringAdds) {
  const PipelineShape s = shape(ScheduleKind::OneFOneB, 2, 1);
  const Program p = from_torch_csv("0F0,0SEND_F0,0RECV_B0,0B0,0REDUCE_GRAD\n1RECV_F0,1F0,1B0,1SEND_B0\n", "t.csv", s);
  EXPECT_EQ(p, make_program(s));
}

TEST(TorchCsv, RefusesBadFilesAtTheCell) {
  const PipelineShape one = shape(ScheduleKind::OneFOneB, 2, 2);
  EXPECT_EQ(import_error("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,1B1\n1F0\n", one),
            "3:1: row 3 is one too many: the plan has 2 pipeline ranks");
  EXPECT_EQ(import_error("0F0,0F1,0B0,0B1\n", one), "2:1: 1 rows for a plan of 2 pipeline ranks");
  EXPECT_EQ(import_error("0F0,0X1,0B0,0B1\n1F0,1B0,1F1,1B1\n", one),
            "1:5: '0X1' is not an action: the type is F, B, I or W (or one PyTorch's lowering adds)");
  EXPECT_EQ(import_error("0F0,F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", one),
            "1:5: 'F1' is not an action (stage, type, microbatch: e.g. 2F0)");
  EXPECT_EQ(import_error("0F0,1F1,0B0,0B1\n1F0,1B0,1F1,1B1\n", one),
            "1:5: '1F1' is on rank 0, but 1f1b places stage 1 on rank 1");
  EXPECT_EQ(import_error("0F0,0F2,0B0,0B1\n1F0,1B0,1F1,1B1\n", one),
            "1:5: '0F2' names microbatch 2, but the plan runs 2");
  EXPECT_EQ(import_error("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,(1F1;1B1)OVERLAP_F_B\n", one).substr(0, 4), "2:13");
  EXPECT_EQ(import_error("0F0,0F1,0B0,0B1\n1F0,1B0,1F1,(1B1;1F1)OVERLAP_F_B\n", one),
            "2:13: '(1B1;1F1)OVERLAP_F_B': an overlapped pair is a forward then a fused backward (F;B)");
  // A complete file in an order that cannot run: the last rank's backward before its forward.
  EXPECT_EQ(import_error("0F0,0F1,0B0,0B1\n1B0,1F0,1F1,1B1\n", one).substr(0, 4), "2:1:");
  // The V: stage 7 lives on rank 0, not on rank 3.
  const PipelineShape v = shape(ScheduleKind::ZbV, 4, 8, 2);
  std::string moved = to_torch_csv(make_program(v));
  moved.replace(moved.find("7F0"), 3, "0F0");
  EXPECT_NE(import_error(moved, v).find("runs a second time"), std::string::npos) << import_error(moved, v);
}

}  // namespace
}  // namespace mpsim::interop
