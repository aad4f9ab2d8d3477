// Golden files pin every generator's order on small shapes. The first ones were checked by hand
// against the reference orders; regenerate them after a deliberate change with
//   MPSIM_UPDATE_GOLDEN=1 ./schedule_test --gtest_filter='Golden*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "schedule_test_support.h"
#include "sim/schedule/generators.h"
#include "sim/schedule/passes.h"

namespace mpsim::schedule {
namespace {

using plan::ScheduleKind;
using testing::shape;

struct GoldenCase {
  std::string file;
  PipelineShape shape;
  bool lowered = false;  ///< compare to_text(lower_comm(program), true)
};

std::string golden_path(const std::string& file) { return std::string(MPSIM_SOURCE_DIR) + "/tests/golden/" + file; }

bool updating() {
  const char* flag = std::getenv("MPSIM_UPDATE_GOLDEN");
  return flag != nullptr && std::string(flag) == "1";
}

PipelineShape limited(PipelineShape s, int memory_limit) {
  s.memory_limit = memory_limit;
  return s;
}

class Golden : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(Golden, MatchesTheFile) {
  const GoldenCase& c = GetParam();
  const Program program = make_program(c.shape);
  const std::string text = c.lowered ? to_text(lower_comm(program), true) : to_text(program);
  const std::string path = golden_path(c.file);
  if (updating()) {
    std::ofstream(path) << text;
    GTEST_SKIP() << "wrote " << path;
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path << " (MPSIM_UPDATE_GOLDEN=1 writes it)";
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "differs from " << path;
}

INSTANTIATE_TEST_SUITE_P(
    Schedules, Golden,
    ::testing::Values(
        GoldenCase{"gpipe_p4_m8.txt", shape(ScheduleKind::GPipe, 4, 8)},
        GoldenCase{"1f1b_p4_m8.txt", shape(ScheduleKind::OneFOneB, 4, 8)},
        GoldenCase{"zb-h1_p4_m8.txt", shape(ScheduleKind::ZbH1, 4, 8)},
        GoldenCase{"zb-h2_p4_m8.txt", shape(ScheduleKind::ZbH2, 4, 8)},
        GoldenCase{"sagemaker-interleaved_p4_m8_a6.txt", shape(ScheduleKind::SageMakerInterleaved, 4, 8, 1, 0, 6)},
        GoldenCase{"interleaved-1f1b_p4_m8_v2_n4.txt", shape(ScheduleKind::Interleaved1F1B, 4, 8, 2, 4)},
        GoldenCase{"interleaved-1f1b_p2_m5_v2_n3.txt", shape(ScheduleKind::Interleaved1F1B, 2, 5, 2, 3)},
        GoldenCase{"zb-v_p4_m8.txt", shape(ScheduleKind::ZbV, 4, 8, 2)},
        GoldenCase{"dualpipev_p4_m10.txt", shape(ScheduleKind::DualPipeV, 4, 10, 2)},
        GoldenCase{"dualpipe_p4_m8.txt", shape(ScheduleKind::DualPipe, 4, 8, 2)},
        GoldenCase{"zb-v_p2_m4_comm.txt", shape(ScheduleKind::ZbV, 2, 4, 2), true},
        GoldenCase{"v-half_p4_m8.txt", shape(ScheduleKind::VHalf, 4, 8, 2)},
        GoldenCase{"v-min_p4_m8.txt", shape(ScheduleKind::VMin, 4, 8, 2)},
        GoldenCase{"zb-auto_p4_m8_l4.txt", limited(shape(ScheduleKind::ZbAuto, 4, 8), 4)},
        GoldenCase{"zb-auto_p4_m8_l8.txt", limited(shape(ScheduleKind::ZbAuto, 4, 8), 8)},
        GoldenCase{"1f1b_p4_m8_comm.txt", shape(ScheduleKind::OneFOneB, 4, 8), true},
        GoldenCase{"interleaved-1f1b_p2_m4_v2_n2_comm.txt", shape(ScheduleKind::Interleaved1F1B, 2, 4, 2, 2), true}),
    [](const ::testing::TestParamInfo<GoldenCase>& info) {
      std::string name = info.param.file.substr(0, info.param.file.find('.'));
      for (char& ch : name) {
        if (ch == '-') ch = '_';
      }
      return "g" + name;
    });

}  // namespace
}  // namespace mpsim::schedule
