#pragma once
// What the validation tests share: a row of a validation file simulated as published, a row's outcome
// (predicted against published, and whether a constant was fitted on it), the summary of a group of
// rows, the bounds each group is held to, and the Markdown docs/validation.md is made of.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/core/yaml_field.h"
#include "sim/engine/simulator.h"
#include "sim/model/model.h"
#include "sim/plan/plan.h"

namespace mpsim::validation {

/// `relative` in the source tree.
std::string repo_path(const std::string& relative);

/// One published run simulated as published.
struct Outcome {
  std::string id;
  std::string source;
  std::string gpu;
  int gpus = 0;
  std::string figure;  ///< "tokens/s/GPU", "TFLOP/s/GPU" or (SC21) "TFLOP/s/GPU (Eq. 3)"
  double predicted = 0;
  double published = 0;
  double step_s = 0;
  double peak_gib = 0;
  double capacity_gib = 0;
  bool oom = false;
  std::string assumed;
  /// The constant fitted on this row (its prediction was made to match it); empty: a check row, which
  /// the bounds hold. docs/validation.md lists both.
  std::string fit;
  [[nodiscard]] double error() const { return predicted / published - 1; }
  [[nodiscard]] bool is_check() const { return fit.empty(); }
};

/// A row of a validation file (tests/validation/*.yaml: id, source, gpu, topology, gpus, model, plan,
/// assumed, fit) simulated as published: on its topology with as many nodes as its GPUs take, its
/// model and its plan resolved against them. `outcome` holds the row's names and the step's time and
/// peak memory; each test compares its own published figure.
struct SimulatedRow {
  Outcome outcome;
  model::Model model;
  plan::Plan plan;
  engine::Prediction prediction;
};
SimulatedRow simulate_row(const Field& row);

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/// Median and largest |error|, and the signed mean error (a median of |error| hides a bias: rows all
/// predicted fast show here).
struct Summary {
  double median_abs = 0;
  double max_abs = 0;
  double mean_signed = 0;
  std::size_t rows = 0;
};

inline Summary summarize(const std::vector<const Outcome*>& rows) {
  std::vector<double> errors;
  Summary s;
  for (const Outcome* o : rows) {
    errors.push_back(std::fabs(o->error()));
    s.mean_signed += o->error();
  }
  s.rows = errors.size();
  if (errors.empty()) return s;
  s.median_abs = median(errors);
  s.max_abs = *std::max_element(errors.begin(), errors.end());
  s.mean_signed /= static_cast<double>(s.rows);
  return s;
}

/// The check rows of `outcomes` (or its fit rows), by GPU kind.
inline std::map<std::string, std::vector<const Outcome*>> by_gpu(const std::vector<Outcome>& outcomes, bool check) {
  std::map<std::string, std::vector<const Outcome*>> groups;
  for (const Outcome& o : outcomes) {
    if (o.is_check() == check) groups[o.gpu].push_back(&o);
  }
  return groups;
}

/// What a group's check rows (a validation file's rows of one GPU kind) must hold: median and largest
/// |error| at most these, the signed mean error inside [mean_low, mean_high], and this many rows.
/// Set at the figures of the day they were written plus a margin (median +1.5 points, largest +3,
/// mean ±2), so that a change moving a group's predictions by 5 % (which moves its signed mean by at
/// least 4 points whatever the errors' signs) fails, and an intended change says so by editing them.
struct Bound {
  const char* group;
  const char* gpu;
  std::size_t rows;
  double median_abs;
  double max_abs;
  double mean_low;
  double mean_high;
};

/// Holds the summary `s` of the rows `label` names to `bound` (its row count too with `count_rows`).
inline void expect_summary_within(const std::string& label, const Summary& s, const Bound& bound, bool count_rows) {
  if (count_rows) {
    EXPECT_EQ(s.rows, bound.rows) << label;
  }
  EXPECT_LE(s.median_abs, bound.median_abs) << label << ": median |error|";
  EXPECT_LE(s.max_abs, bound.max_abs) << label << ": largest |error|";
  EXPECT_GE(s.mean_signed, bound.mean_low) << label << ": signed mean error";
  EXPECT_LE(s.mean_signed, bound.mean_high) << label << ": signed mean error";
}

/// Holds each GPU kind's check rows of `group` to its bound in `bounds`; a kind without one fails (every
/// group is bounded). Prints each kind's figures, fit rows too.
template <std::size_t N>
void expect_within_bounds(const std::string& group, const std::vector<Outcome>& outcomes, const Bound (&bounds)[N],
                          bool count_rows = true) {
  for (const bool check : {true, false}) {
    for (const auto& [gpu, rows] : by_gpu(outcomes, check)) {
      const Summary s = summarize(rows);
      std::printf("%-5s %-16s %-5s %3zu rows  median |error| %5.1f%%  max %5.1f%%  signed mean %+5.1f%%\n",
                  group.c_str(), gpu.c_str(), check ? "check" : "fit", s.rows, s.median_abs * 100, s.max_abs * 100,
                  s.mean_signed * 100);
      if (!check) continue;
      const Bound* bound = nullptr;
      for (const Bound& b : bounds) {
        if (b.group == group && b.gpu == gpu) bound = &b;
      }
      if (bound == nullptr) {
        ADD_FAILURE() << group << " rows on " << gpu << " have no bound";
        continue;
      }
      expect_summary_within(group + " " + gpu, s, *bound, count_rows);
    }
  }
}

/// The figures a page quotes for a group's check rows: "median |error| 8.2 %, largest 22.6 %, signed
/// mean +3.1 % (23 rows)". docs/ quote them between `<!-- figure: GROUP/GPU -->` and `<!-- /figure -->`
/// and a test compares.
inline std::string quoted_figures(const Summary& s) {
  return fmt::format("median |error| {:.1f} %, largest {:.1f} %, signed mean {:+.1f} % ({} rows)", s.median_abs * 100,
                     s.max_abs * 100, s.mean_signed * 100, s.rows);
}

/// The Markdown summary of a group: per GPU kind, check rows and fit rows apart.
inline std::string summary_markdown(const std::vector<Outcome>& outcomes) {
  std::string out =
      "| GPU | rows | median abs error | max abs error | signed mean error |\n|---|---|---:|---:|---:|\n";
  for (const bool check : {true, false}) {
    for (const auto& [gpu, rows] : by_gpu(outcomes, check)) {
      const Summary s = summarize(rows);
      out += fmt::format("| {} | {} {} | {:.1f} % | {:.1f} % | {:+.1f} % |\n", gpu, s.rows, check ? "check" : "fit",
                         s.median_abs * 100, s.max_abs * 100, s.mean_signed * 100);
    }
  }
  return out;
}

/// The Markdown summary of a group's rows by source, check and fit rows together.
inline std::string source_summary_markdown(const std::vector<Outcome>& outcomes) {
  std::map<std::string, std::vector<const Outcome*>> sources;
  for (const Outcome& o : outcomes) sources[o.source].push_back(&o);
  std::string out =
      "| source | rows | median abs error | max abs error | signed mean error |\n|---|---:|---:|---:|---:|\n";
  for (const auto& [name, rows] : sources) {
    const Summary s = summarize(rows);
    out += fmt::format("| {} | {} | {:.1f} % | {:.1f} % | {:+.1f} % |\n", name, s.rows, s.median_abs * 100,
                       s.max_abs * 100, s.mean_signed * 100);
  }
  return out;
}

/// Megatron SC21 Table 1's ten rows simulated (megatron_sc21_test.cpp).
std::vector<Outcome> sc21_outcomes();

}  // namespace mpsim::validation
