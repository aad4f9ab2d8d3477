// Data-parallel ZeRO-3 at several GPU counts (tests/validation/sc21_zero3_runs.yaml: SC21 Table 2,
// DeepSpeed's ZeRO-3 without model parallelism on 384 to 2240 A100s): predicted uncalibrated, with a
// profile fitted on each family's smallest run (`mpsim calibrate` on that row), and with one fitted on
// the whole family. Error = measured step / predicted step - 1.
//
// The target was the larger runs within 10 % when calibrated on the smallest; it is not met, and the
// bounds below hold today's errors so that a change in the ZeRO-3 model or the fit shows here
// (docs/validation.md, "ZeRO-3 at scale", says why one run cannot tell). With
// MPSIM_VALIDATION_ZERO3_TABLE=path the Markdown table is written there.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/calibration/calibrate.h"
#include "sim/calibration/measured_run.h"

namespace mpsim {
namespace {

using calibration::MeasuredRun;

struct Zero3Row {
  std::string id;
  int gpus = 0;
  double measured_s = 0;
  double uncalibrated_error = 0;
  double from_smallest_error = 0;  ///< profile fitted on the family's smallest run
  double from_two_error = 0;       ///< profile fitted on its two smallest runs
  double from_family_error = 0;    ///< profile fitted on the whole family
  std::string smallest_factors;
  std::string two_factors;
  std::string family_factors;
};

std::string factors_text(const calibration::SoftwareProfile& profile) {
  std::string out;
  for (const calibration::Factor& f : profile.factors) {
    out += fmt::format("{}{} {:.3f}", out.empty() ? "" : ", ", calibration::to_string(f.kind), f.value);
  }
  return out.empty() ? "none" : out;
}

std::vector<Zero3Row> zero3_rows() {
  const std::vector<MeasuredRun> runs = calibration::load_measured_runs(
      std::string(MPSIM_SOURCE_DIR) + "/tests/validation/sc21_zero3_runs.yaml",
      {std::string(MPSIM_SOURCE_DIR) + "/topologies"});
  std::map<std::string, std::vector<const MeasuredRun*>> families;  // by the id less its GPU count
  for (const MeasuredRun& run : runs) families[run.id.substr(0, run.id.rfind('-'))].push_back(&run);
  std::vector<Zero3Row> rows;
  for (const auto& [family, members] : families) {
    std::vector<MeasuredRun> all;
    for (const MeasuredRun* run : members) all.push_back(*run);
    const auto from_smallest = calibration::calibrate({*members.front()}, "smallest");
    const auto from_two = calibration::calibrate({*members[0], *members[1]}, "two smallest");
    const auto from_family = calibration::calibrate(all, "family");
    for (const MeasuredRun* run : members) {
      Zero3Row row;
      row.id = run->id;
      row.gpus = run->plan.gpus();
      row.measured_s = run->measured;
      row.uncalibrated_error = run->measured / calibration::predict(*run, {}).step_time_s - 1;
      row.from_smallest_error = run->measured / calibration::predict(*run, from_smallest.factors).step_time_s - 1;
      row.from_two_error = run->measured / calibration::predict(*run, from_two.factors).step_time_s - 1;
      row.from_family_error = run->measured / calibration::predict(*run, from_family.factors).step_time_s - 1;
      row.two_factors = factors_text(from_two);
      row.smallest_factors = factors_text(from_smallest);
      row.family_factors = factors_text(from_family);
      rows.push_back(row);
    }
  }
  return rows;
}

/// Today's errors (uncalibrated, from the smallest, from the family) by row, with 3 points either side.
struct Zero3Bound {
  const char* id;
  double uncalibrated;
  double from_smallest;
  double from_two;
  double from_family;
};
constexpr Zero3Bound kZero3Today[] = {
    // row, uncalibrated, calibrated on the smallest, on the two smallest, on the family
    {"sc21-zero3-175b-384gpu", 0.349, -0.001, 0.000, 0.000},
    {"sc21-zero3-175b-768gpu", 1.193, 0.624, 0.001, 0.004},
    {"sc21-zero3-175b-1536gpu", 3.332, 2.209, -0.007, -0.004},
    {"sc21-zero3-530b-640gpu", 0.446, -0.001, -0.156, 0.000},
    {"sc21-zero3-530b-1120gpu", 1.027, 0.401, 0.184, -0.008},
    {"sc21-zero3-530b-2240gpu", 3.135, 1.858, 1.415, 0.008},
};
constexpr double kZero3Margin = 0.03;

TEST(Zero3Family, CalibratedOnTheSmallestRun) {
  const std::vector<Zero3Row> rows = zero3_rows();
  ASSERT_EQ(rows.size(), 6U);
  std::string table =
      "| row | GPUs | measured step | uncalibrated | calibrated on the smallest | on the two smallest | on the family |\n"
      "|---|---:|---:|---:|---:|---:|---:|\n";
  for (const Zero3Row& r : rows) {
    table += fmt::format("| {} | {} | {:.1f} s | {:+.1f} % | {:+.1f} % | {:+.1f} % | {:+.1f} % |\n", r.id, r.gpus,
                         r.measured_s, r.uncalibrated_error * 100, r.from_smallest_error * 100, r.from_two_error * 100,
                         r.from_family_error * 100);
    std::printf("    {\"%s\", %.3f, %.3f, %.3f, %.3f},\n", r.id.c_str(), r.uncalibrated_error, r.from_smallest_error,
                r.from_two_error, r.from_family_error);
  }
  std::map<std::string, const Zero3Row*> families;
  for (const Zero3Row& r : rows) families[r.id.substr(0, r.id.rfind('-'))] = &r;
  table += "\n| family | fitted on the smallest | on the two smallest | on the family |\n|---|---|---|---|\n";
  for (const auto& [family, r] : families) {
    table += fmt::format("| {} | {} | {} | {} |\n", family, r->smallest_factors, r->two_factors, r->family_factors);
  }
  std::printf("%s", table.c_str());
  if (const char* path = std::getenv("MPSIM_VALIDATION_ZERO3_TABLE")) std::ofstream(path) << table;

  for (const Zero3Row& r : rows) {
    const Zero3Bound* today = nullptr;
    for (const Zero3Bound& b : kZero3Today) {
      if (r.id == b.id) today = &b;
    }
    if (today == nullptr) {
      ADD_FAILURE() << r.id << " has no bound";
      continue;
    }
    EXPECT_NEAR(r.uncalibrated_error, today->uncalibrated, kZero3Margin) << r.id;
    EXPECT_NEAR(r.from_smallest_error, today->from_smallest, kZero3Margin) << r.id;
    EXPECT_NEAR(r.from_two_error, today->from_two, kZero3Margin) << r.id;
    EXPECT_NEAR(r.from_family_error, today->from_family, kZero3Margin) << r.id;
  }
}

}  // namespace
}  // namespace mpsim
