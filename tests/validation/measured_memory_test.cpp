// Published peak GPU memory of real training runs (tests/validation/measured_memory.yaml: Megatron-Bridge
// and TorchTitan runs on H100), each simulated as published: the predicted peak against the published
// one, error = predicted / published - 1.
//
// A published peak is PyTorch's allocated or reserved memory, neither of which counts the CUDA context
// or NCCL's buffers; mpsim's peak holds those as its static `reserved` part (sim/engine/cost_model.h,
// StaticMemory). So an allocated figure is compared with the largest peak over the GPUs less that part,
// and a reserved figure with the whole peak (its reserved part is all it has beyond the tensors: of the
// allocator's cache, it models the side-stream pools of sharded weights alone).
//
// The errors are not an accuracy claim: the bounds hold today's figures (kMemoryBounds), so that a
// change moving the memory model shows here and says so by editing them. With
// MPSIM_VALIDATION_MEMORY_TABLE=path the table of every row is written there as Markdown
// (docs/validation.md "Memory", by tools/validation_table.sh).
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "planner/memory_margin.h"
#include "sim/calibration/calibrate.h"
#include "sim/calibration/prediction_band.h"
#include "sim/core/yaml_field.h"
#include "tests/validation/validation_support.h"

namespace mpsim {
namespace {

using validation::Bound;
using validation::Outcome;
using validation::repo_path;
using validation::Summary;
using validation::summarize;

/// The published kinds of peak (measured_memory.yaml's `published.kind`).
using calibration::PeakKind;
constexpr std::pair<const char*, PeakKind> kPeakKindNames[] = {{"allocated", PeakKind::Allocated},
                                                               {"reserved", PeakKind::Reserved}};

/// A row simulated as published, its predicted peak in the kind the source publishes (`figure`): a
/// reserved row's the whole peak, an allocated row's the peak less its runtime part
/// (calibration::measured_kind_peak_gib); with the prediction a calibrated one starts from.
struct MemoryRow {
  Outcome outcome;
  trace::Report prediction;
  PeakKind kind = PeakKind::Reserved;
  std::optional<int> stage;  ///< the pipeline stage the source logged (`published.stage`); none: every rank's largest
};

MemoryRow memory_row(const Field& row) {
  validation::SimulatedRow simulated = validation::simulate_row(row);
  MemoryRow m{simulated.outcome, std::move(simulated.prediction.report), PeakKind::Reserved, std::nullopt};
  const Field published = row.require("published");
  m.outcome.published = published.require("peak_memory_gib").as_double_in(1e-3, 1e6);
  const Field kind = published.require("kind");
  m.outcome.figure = kind.as_string();
  m.kind = kind.as_enum(kPeakKindNames);
  if (auto stage = published.get("stage")) m.stage = calibration::peak_stage_named(*stage, simulated.plan);
  m.outcome.predicted = calibration::measured_kind_peak_gib(m.prediction, m.kind, 1.0, m.stage);
  return m;
}

/// A row predicted with the activation_memory factor fitted on another row of its source (one software
/// stack): the factor at which the other row's peak is its published one, applied to this row's
/// prediction.
struct HeldOut {
  std::string source;
  double uncalibrated_error = 0;
  double calibrated_error = 0;
};

std::vector<HeldOut> leave_one_out(const std::vector<MemoryRow>& rows) {
  std::vector<HeldOut> held_out;
  for (const MemoryRow& fitted : rows) {
    const double factor = calibration::activation_factor_for_peak(
        fitted.prediction, fitted.kind, fitted.outcome.published, calibration::kLargestActivationFactor, fitted.stage);
    for (const MemoryRow& row : rows) {
      if (&row == &fitted || row.outcome.source != fitted.outcome.source) continue;
      held_out.push_back({row.outcome.source, row.outcome.error(),
                          calibration::measured_kind_peak_gib(row.prediction, row.kind, factor, row.stage) /
                              row.outcome.published - 1});
    }
  }
  return held_out;
}

/// Median and largest |error| and the count under by more than 5 % of `errors`.
struct ErrorSummary {
  std::size_t count = 0;
  double median_abs = 0;
  double max_abs = 0;
  std::size_t under = 0;
};
ErrorSummary summarize_errors(const std::vector<double>& errors) {
  ErrorSummary s;
  std::vector<double> abs;
  for (const double e : errors) {
    abs.push_back(std::abs(e));
    if (e < -0.05) ++s.under;
  }
  s.count = errors.size();
  s.median_abs = abs.empty() ? 0 : validation::median(abs);
  s.max_abs = abs.empty() ? 0 : *std::max_element(abs.begin(), abs.end());
  return s;
}

/// The held-out predictions by source ("all" holds every one): uncalibrated and calibrated.
std::map<std::string, std::pair<ErrorSummary, ErrorSummary>> held_out_by_source(const std::vector<HeldOut>& held_out) {
  std::map<std::string, std::pair<std::vector<double>, std::vector<double>>> errors;
  for (const HeldOut& h : held_out) {
    for (const std::string& group : {std::string("all"), h.source}) {
      errors[group].first.push_back(h.uncalibrated_error);
      errors[group].second.push_back(h.calibrated_error);
    }
  }
  std::map<std::string, std::pair<ErrorSummary, ErrorSummary>> out;
  for (const auto& [group, e] : errors) out[group] = {summarize_errors(e.first), summarize_errors(e.second)};
  return out;
}

std::string calibrated_markdown(const std::vector<MemoryRow>& rows) {
  std::string out =
      "\nCalibrated on one row (`mpsim calibrate` fits `activation_memory`, the factor on mpsim's count of the "
      "activations at which a run's peak is its measured one: docs/calibration.md), every other row of the same "
      "source predicted with it, each row held out in turn (`MeasuredMemory.PeaksHoldOnTodaysRuns`). One factor per stack "
      "cuts the rows under-predicted by more than 5 % but does not carry across a stack's configurations: fitted "
      "on the row the model under-predicts most (TorchTitan's 405B at 256k tokens), it over-predicts the source's "
      "other rows by the largest error below. The factor is for runs like the one it was fitted on.\n\n"
      "| source | held-out predictions | uncalibrated median / max abs error | under by more than 5 % "
      "| calibrated median / max abs error | under by more than 5 % |\n|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [group, s] : held_out_by_source(leave_one_out(rows))) {
    out += fmt::format("| {} | {} | {:.1f} % / {:.1f} % | {} | {:.1f} % / {:.1f} % | {} |\n", group, s.first.count,
                       s.first.median_abs * 100, s.first.max_abs * 100, s.first.under, s.second.median_abs * 100,
                       s.second.max_abs * 100, s.second.under);
  }
  return out;
}

/// The rows predicted more than 5 % below their published peak: the direction that fails jobs.
std::size_t under_predicted_rows(const std::vector<const Outcome*>& rows) {
  return static_cast<std::size_t>(
      std::count_if(rows.begin(), rows.end(), [](const Outcome* o) { return o->error() < -0.05; }));
}

/// The rows of `outcomes` by the kind of peak published; "all" holds every row.
std::map<std::string, std::vector<const Outcome*>> by_kind(const std::vector<Outcome>& outcomes) {
  std::map<std::string, std::vector<const Outcome*>> groups;
  for (const Outcome& o : outcomes) {
    groups["all"].push_back(&o);
    groups[o.figure].push_back(&o);
  }
  return groups;
}

std::string memory_markdown(const std::vector<Outcome>& outcomes, const Field& left_out) {
  std::string out;
  out += "| row | GPUs | published kind | predicted GiB | published GiB | error | mpsim peak / capacity GiB "
         "| assumed |\n";
  out += "|---|---:|---|---:|---:|---:|---:|---|\n";
  for (const Outcome& o : outcomes) {
    out += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:+.1f} % | {:.1f} / {:.1f}{} | {} |\n", o.id, o.gpus,
                       o.figure, o.predicted, o.published, o.error() * 100, o.peak_gib, o.capacity_gib,
                       o.oom ? " OOM" : "", o.assumed);
  }
  out += "\n| rows | count | median abs error | max abs error | signed mean error "
         "| under-predicted by more than 5 % |\n";
  out += "|---|---:|---:|---:|---:|---:|\n";
  for (const auto& [kind, rows] : by_kind(outcomes)) {
    const Summary s = summarize(rows);
    out += fmt::format("| {} | {} | {:.1f} % | {:.1f} % | {:+.1f} % | {} |\n", kind, s.rows, s.median_abs * 100,
                       s.max_abs * 100, s.mean_signed * 100, under_predicted_rows(rows));
  }
  out += "\n" + validation::source_summary_markdown(outcomes);
  out += "\nPublished peaks not simulated:\n\n| run | published | reason |\n|---|---|---|\n";
  for (const Field& item : left_out.items()) {
    out += fmt::format("| {} | {} | {} |\n", item.require("id").as_string(), item.require("published").as_string(),
                       item.require("reason").as_string());
  }
  return out;
}

/// The rows of each published kind and of all (validation_support.h: Bound; its GPU names the kind
/// here). Written at the figures of the passes' working memory (sim/engine/working_memory.h) plus the
/// margins Bound names; the memory model is expected to move them (issue 35), and its change edits them.
constexpr Bound kMemoryBounds[] = {
    // group, published kind, rows, median |error|, largest |error|, signed mean in [low, high]; today's figures
    {"memory", "all", 27, 0.053, 0.239, -0.082, -0.042},        // 3.8 %, 20.9 %, -6.2 %
    {"memory", "allocated", 14, 0.045, 0.180, -0.060, -0.020},  // 3.0 %, 15.0 %, -4.0 %
    {"memory", "reserved", 13, 0.111, 0.239, -0.105, -0.065},   // 9.6 %, 20.9 %, -8.5 %
};
/// Rows predicted more than 5 % below their published peak today (TorchTitan's 70B and 405B rows,
/// Moonlight-16B's three and the Llama 3 70B TP 8 row); no change may add one.
constexpr std::size_t kUnderPredictedRowsToday = 11;

/// Every row of the file (MPSIM_VALIDATION_ROW: those whose id contains it), simulated and printed.
std::vector<MemoryRow> simulate_memory_rows(const Field& rows) {
  std::vector<MemoryRow> outcomes;
  for (const Field& row : rows.items()) {
    if (const char* only = std::getenv("MPSIM_VALIDATION_ROW");
        only != nullptr && row.require("id").as_string().find(only) == std::string::npos) {
      continue;
    }
    outcomes.push_back(memory_row(row));
    const Outcome& o = outcomes.back().outcome;
    std::printf("%-64s %4d GPUs  %-9s predicted %6.2f GiB  published %6.2f GiB  error %+6.1f%%\n", o.id.c_str(),
                o.gpus, o.figure.c_str(), o.predicted, o.published, o.error() * 100);
  }
  return outcomes;
}

// Every row expressible and simulating (a plan check or engine error fails the test), each kind of
// published peak within its bound, and no more rows under-predicted by over 5 % than today.
TEST(MeasuredMemory, PeaksHoldOnTodaysRuns) {
  const YamlDocument doc = YamlDocument::load(repo_path("tests/validation/measured_memory.yaml"));
  std::vector<MemoryRow> memory_rows;
  EXPECT_NO_THROW(memory_rows = simulate_memory_rows(doc.root().require("rows")));
  std::vector<Outcome> outcomes;
  for (const MemoryRow& r : memory_rows) outcomes.push_back(r.outcome);
  // Each row ran: on its own GPUs' capacity (the TorchTitan rows' 96 GiB by topology_set), mpsim's peak
  // must fit (issue 35: a published run that ran is not predicted out of memory).
  for (const Outcome& o : outcomes) EXPECT_FALSE(o.oom) << o.id << ": " << o.peak_gib << " of " << o.capacity_gib << " GiB";
  // MPSIM_VALIDATION_ROW (one row for a developer) leaves groups short: their counts are not checked then.
  const bool count_rows = std::getenv("MPSIM_VALIDATION_ROW") == nullptr;
  for (const auto& [kind, rows] : by_kind(outcomes)) {
    const Summary s = summarize(rows);
    std::printf("memory %-9s %3zu rows  median |error| %5.1f%%  max %5.1f%%  signed mean %+5.1f%%  under by >5%% %zu\n",
                kind.c_str(), s.rows, s.median_abs * 100, s.max_abs * 100, s.mean_signed * 100,
                under_predicted_rows(rows));
    const auto bound = std::find_if(std::begin(kMemoryBounds), std::end(kMemoryBounds),
                                    [&](const Bound& b) { return b.gpu == kind; });
    if (bound == std::end(kMemoryBounds)) {
      ADD_FAILURE() << "memory rows of kind " << kind << " have no bound";
      continue;
    }
    validation::expect_summary_within("memory " + kind, s, *bound, count_rows);
    if (kind == "all") {
      EXPECT_LE(under_predicted_rows(rows), kUnderPredictedRowsToday);
      // The headroom the planner prefers among plans of about equal speed (planner/memory_margin.h) is
      // every row's worst under-prediction.
      if (count_rows) {
        const auto worst = std::min_element(rows.begin(), rows.end(),
                                            [](const Outcome* a, const Outcome* b) { return a->error() < b->error(); });
        EXPECT_NEAR((*worst)->error(), -planner::kWorstMeasuredUnderPrediction, 0.0005) << (*worst)->id;
      }
    }
    // The planner's default margin is these rows' worst under-prediction (planner/memory_margin.h): a
    // plan it ranks fits whenever its peak is under-predicted no worse than every row here.
    if (kind == "allocated") {
      for (const Outcome* o : rows) EXPECT_GE(o->error(), -planner::kDefaultMemoryMargin) << o->id;
      // The band every report prints beside its peak (calibration::memory_spread) is these rows'
      // measured / predicted - 1, their coverage_band, as compiled in.
      std::vector<double> measured_off;
      for (const Outcome* o : rows) measured_off.push_back(o->published / o->predicted - 1);
      const calibration::ErrorSpread& spread = calibration::memory_spread();
      const auto band = calibration::coverage_band(measured_off);
      ASSERT_TRUE(band.has_value()) << measured_off.size() << " rows";
      std::printf("memory band: measured / predicted - 1 from %+.3f to %+.3f over %zu rows\n", band->low, band->high,
                  measured_off.size());
      EXPECT_NEAR(spread.low, band->low, 0.0005);
      EXPECT_NEAR(spread.high, band->high, 0.0005);
      EXPECT_EQ(spread.predictions, static_cast<int>(measured_off.size()));
      // The margin covers the band: a plan the planner ranks, its peak at most (1 - margin) of the memory,
      // fits at the band's top, (1 + high) times its peak at most.
      EXPECT_LE((1 + spread.high) * (1 - planner::kDefaultMemoryMargin), 1.0);
    }
  }
  // The one-row calibration's held-out figures (docs/validation.md), held to today's: median |error|
  // over every held-out prediction 10.6 % (uncalibrated 3.8 %) plus 1.5 points, and no more rows under
  // by more than 5 % than today's 63 of 200 (90 uncalibrated).
  const auto held_out = held_out_by_source(leave_one_out(memory_rows));
  if (count_rows) {
    EXPECT_LE(held_out.at("all").second.median_abs, 0.121);
    EXPECT_LE(held_out.at("all").second.under, 63u);
  }
  for (const auto& [group, s] : held_out) {
    std::printf("memory calibrated on one row, %-24s %3zu held out: median |error| %5.1f%% -> %5.1f%%, max %5.1f%% -> "
                "%5.1f%%, under by >5%% %zu -> %zu\n",
                group.c_str(), s.first.count, s.first.median_abs * 100, s.second.median_abs * 100, s.first.max_abs * 100,
                s.second.max_abs * 100, s.first.under, s.second.under);
  }
  if (const char* path = std::getenv("MPSIM_VALIDATION_MEMORY_TABLE")) {
    std::ofstream(path) << memory_markdown(outcomes, doc.root().require("left_out")) << calibrated_markdown(memory_rows);
  }
}

}  // namespace
}  // namespace mpsim
