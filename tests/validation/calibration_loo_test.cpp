// Calibration validated leave-one-out (docs/validation.md, "Calibrated"): the published runs of
// tests/validation fall into cells of one software release, one GPU kind and one group (dense, mixture
// of experts, context parallel). In each cell, a profile is fitted on k = 1 run (`mpsim calibrate` on
// that row alone) and predicts every other run of the cell; every run is the calibration run in turn.
// With k = 2, each pair of neighbouring rows (in the file's order) calibrates and the rest are predicted.
// Errors are those of the uncalibrated table: measured step / predicted step - 1 (= predicted
// throughput / published - 1).
//
// With MPSIM_VALIDATION_LOO_TABLE=path the Markdown for docs/validation.md is written there.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "sim/calibration/calibrate.h"
#include "sim/calibration/measured_run.h"
#include "sim/calibration/prediction_band.h"
#include "sim/calibration/profile_file.h"
#include "tests/validation/validation_support.h"

namespace mpsim {
namespace {

using calibration::MeasuredRun;

/// The software release a row's id names: `mbridge-26.04.01-...` → mbridge-26.04.01, `nemo2407-...` →
/// nemo2407, `nemo-longseq-...` → nemo-longseq, `megatronlm-...` → megatronlm.
std::string release_of(const std::string& id) {
  const auto first = id.find('-');
  if (first == std::string::npos) return id;
  const std::string head = id.substr(0, first);
  if (head != "mbridge" && head != "nemo") return head;
  const auto second = id.find('-', first + 1);
  return id.substr(0, second);
}

struct LooCell {
  std::string release;
  std::string gpu;
  std::string group;
  std::vector<std::size_t> runs;            ///< indices into the fixture's runs
  std::vector<double> uncalibrated_errors;  ///< by run
  std::vector<double> k1_errors;            ///< every (calibration run, held-out run) pair
  std::vector<double> k2_errors;            ///< every (neighbouring pair, held-out run)
};

/// Runs `task(0..count-1)` on a few threads; each task writes only its own slot, so the results do not
/// depend on the thread count.
template <typename Task>
void parallel_for(std::size_t count, Task task) {
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 4);
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> pool;
  for (std::size_t t = 0; t < threads; ++t) {
    pool.emplace_back([&] {
      for (std::size_t i = next++; i < count; i = next++) task(i);
    });
  }
  for (std::thread& thread : pool) thread.join();
}

struct Spread {
  double median_abs = 0;
  double max_abs = 0;
  std::size_t count = 0;
};
Spread spread_of(const std::vector<double>& errors) {
  Spread s;
  s.count = errors.size();
  if (errors.empty()) return s;
  std::vector<double> abs;
  for (double e : errors) abs.push_back(std::fabs(e));
  s.median_abs = validation::median(abs);
  s.max_abs = *std::max_element(abs.begin(), abs.end());
  return s;
}
std::string spread_cell(const Spread& s) {
  return s.count == 0 ? "-" : fmt::format("{:.1f} / {:.1f} %", s.median_abs * 100, s.max_abs * 100);
}

/// Held-out coverage of the calibrated bands per group, today's less 5 points (calibrated_bands_on_held_out_cells).
/// Against every other cell's band: 69.7 % of 66 context-parallel predictions, 69.9 % of 272 dense, 80.6 %
/// of 206 mixture-of-experts (the share the band text states). Against the other releases' only: 9.1 %,
/// 69.9 %, 79.6 %; most context-parallel predictions then have no band at all, their cells' other
/// releases giving fewer than calibration::kFewestRows predictions. Short of the 80 % the band holds of
/// one more error of its own kind: a cell's errors share its software's offset (docs/calibration.md).
const std::map<std::string, double> kOtherCellsCoverageToday = {
    {"context parallel", 0.647}, {"dense", 0.649}, {"mixture of experts", 0.756}};
const std::map<std::string, double> kOtherReleasesCoverageToday = {
    {"context parallel", 0.041}, {"dense", 0.649}, {"mixture of experts", 0.746}};

class LeaveOneOut : public ::testing::Test {
 public:
  static void SetUpTestSuite() {
    const std::vector<std::filesystem::path> shipped{std::string(MPSIM_SOURCE_DIR) + "/topologies"};
    for (const char* file : {"published_runs.yaml", "moe_runs.yaml", "context_runs.yaml"}) {
      for (MeasuredRun& run :
           calibration::load_measured_runs(std::string(MPSIM_SOURCE_DIR) + "/tests/validation/" + file, shipped)) {
        runs_->push_back(std::move(run));
      }
    }
    const std::size_t n = runs_->size();
    measured_step_s_->resize(n);
    uncalibrated_step_s_->resize(n);
    one_run_profiles_->resize(n);
    parallel_for(n, [](std::size_t i) {
      const MeasuredRun& run = (*runs_)[i];
      const trace::Report uncalibrated = calibration::predict(run, {});
      (*uncalibrated_step_s_)[i] = uncalibrated.step_time_s;
      (*measured_step_s_)[i] = run.measured_step_s(uncalibrated);
      (*one_run_profiles_)[i] = calibration::calibrate({run}, "k1");
    });
    std::map<std::tuple<std::string, std::string, std::string>, LooCell> by_key;
    for (std::size_t i = 0; i < n; ++i) {
      const MeasuredRun& run = (*runs_)[i];
      LooCell& cell = by_key[{run.group(), release_of(run.id), run.gpu_label}];
      cell.release = release_of(run.id);
      cell.gpu = run.gpu_label;
      cell.group = run.group();
      cell.runs.push_back(i);
      cell.uncalibrated_errors.push_back((*measured_step_s_)[i] / (*uncalibrated_step_s_)[i] - 1);
    }
    for (auto& [key, cell] : by_key) cells_->push_back(std::move(cell));

    // Every held-out prediction: (cell, calibration run or pair, held-out run), each a slot of its own.
    struct Prediction {
      LooCell* cell;
      std::size_t first;   ///< position in the cell of the calibration run (k = 1) or the pair's first (k = 2)
      std::size_t held_out;
      bool pair;
      double error = 0;
    };
    std::vector<Prediction> predictions;
    std::vector<std::pair<LooCell*, std::size_t>> pairs;  ///< k = 2 calibrations
    for (LooCell& cell : *cells_) {
      const std::size_t size = cell.runs.size();
      for (std::size_t a = 0; a < size; ++a) {
        for (std::size_t b = 0; b < size; ++b) {
          if (a != b) predictions.push_back({&cell, a, b, false});
          if (size >= 3 && b != a && b != (a + 1) % size) predictions.push_back({&cell, a, b, true});
        }
        if (size >= 3) pairs.push_back({&cell, a});
      }
    }
    std::vector<calibration::SoftwareProfile> pair_profiles(pairs.size());
    parallel_for(pairs.size(), [&](std::size_t p) {
      const LooCell& cell = *pairs[p].first;
      const std::size_t a = pairs[p].second;
      pair_profiles[p] = calibration::calibrate(
          {(*runs_)[cell.runs[a]], (*runs_)[cell.runs[(a + 1) % cell.runs.size()]]}, "k2");
    });
    const auto pair_profile = [&](const LooCell* cell, std::size_t a) -> const calibration::SoftwareProfile& {
      for (std::size_t p = 0; p < pairs.size(); ++p) {
        if (pairs[p].first == cell && pairs[p].second == a) return pair_profiles[p];
      }
      throw std::logic_error("no such pair");
    };
    parallel_for(predictions.size(), [&](std::size_t p) {
      Prediction& prediction = predictions[p];
      const std::size_t held_out = prediction.cell->runs[prediction.held_out];
      const calibration::SoftwareProfile& profile = prediction.pair
                                                        ? pair_profile(prediction.cell, prediction.first)
                                                        : (*one_run_profiles_)[prediction.cell->runs[prediction.first]];
      prediction.error = (*measured_step_s_)[held_out] /
                             calibration::predict((*runs_)[held_out], profile.factors).step_time_s - 1;
    });
    for (const Prediction& prediction : predictions) {
      (prediction.pair ? prediction.cell->k2_errors : prediction.cell->k1_errors).push_back(prediction.error);
    }
  }
  // The checks, each over the data above (the test below runs them all).
  static void held_out_table();
  static void one_run_is_matched();
  static void band_tables_are_todays();
  static void ranking_tolerances_are_todays();
  static void calibrated_bands_on_held_out_cells();

  static inline std::vector<MeasuredRun>* runs_ = new std::vector<MeasuredRun>;
  static inline std::vector<double>* measured_step_s_ = new std::vector<double>;
  static inline std::vector<double>* uncalibrated_step_s_ = new std::vector<double>;
  static inline std::vector<calibration::SoftwareProfile>* one_run_profiles_ = new std::vector<calibration::SoftwareProfile>;
  static inline std::vector<LooCell>* cells_ = new std::vector<LooCell>;
};

std::string loo_markdown(const std::vector<LooCell>& cells) {
  std::string out =
      "| group | release | GPU | rows | uncalibrated median / max | k = 1 median / max | k = 2 median / max |\n"
      "|---|---|---|---:|---:|---:|---:|\n";
  std::map<std::string, std::array<std::vector<double>, 3>> by_group;
  for (const LooCell& c : cells) {
    if (c.runs.size() < 2) continue;
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", c.group, c.release, c.gpu, c.runs.size(),
                       spread_cell(spread_of(c.uncalibrated_errors)), spread_cell(spread_of(c.k1_errors)),
                       spread_cell(spread_of(c.k2_errors)));
    auto& g = by_group[c.group];
    g[0].insert(g[0].end(), c.uncalibrated_errors.begin(), c.uncalibrated_errors.end());
    g[1].insert(g[1].end(), c.k1_errors.begin(), c.k1_errors.end());
    g[2].insert(g[2].end(), c.k2_errors.begin(), c.k2_errors.end());
  }
  out += "\n| group | uncalibrated median / max | k = 1 median / max (predictions) | k = 2 median / max (predictions) |\n"
         "|---|---:|---:|---:|\n";
  for (const auto& [group, errors] : by_group) {
    out += fmt::format("| {} | {} | {} ({}) | {} ({}) |\n", group, spread_cell(spread_of(errors[0])),
                       spread_cell(spread_of(errors[1])), errors[1].size(), spread_cell(spread_of(errors[2])),
                       errors[2].size());
  }
  return out;
}

void LeaveOneOut::held_out_table() {
  ASSERT_EQ(runs_->size(), 138U);
  const std::string table = loo_markdown(*cells_);
  std::printf("%s", table.c_str());
  if (const char* path = std::getenv("MPSIM_VALIDATION_LOO_TABLE")) std::ofstream(path) << table;
}

// One run: the profile brings that run's prediction to its measurement (within 1 %): when the
// factor that dominates it stops at its physical bound, the next one takes the rest.
void LeaveOneOut::one_run_is_matched() {
  for (std::size_t i = 0; i < runs_->size(); ++i) {
    const MeasuredRun& run = (*runs_)[i];
    const calibration::SoftwareProfile& profile = (*one_run_profiles_)[i];
    ASSERT_EQ(profile.residuals.size(), 1U);
    EXPECT_LE(std::fabs(profile.residuals.front().error()), 0.01) << run.id << " factor "
        << calibration::write_profile_yaml(profile);
  }
}

/// How the calibrated bands do on cells they were not drawn from: each cell's k = 1 held-out predictions
/// against coverage_band of the group's other cells' (every other cell, or only the other releases'),
/// per group. Predictions without a band (too few other predictions) count as outside one.
struct HeldOutCoverage {
  int inside = 0;
  int predictions = 0;
  int without_band = 0;
  std::vector<double> half_widths;  ///< (high - low) / 2 over 1 + error: the band around each prediction
  [[nodiscard]] double share() const { return predictions == 0 ? 0.0 : static_cast<double>(inside) / predictions; }
};
std::map<std::string, HeldOutCoverage> held_out_coverage(const std::vector<LooCell>& cells, bool other_releases_only) {
  std::map<std::string, HeldOutCoverage> by_group;
  for (const LooCell& cell : cells) {
    if (cell.k1_errors.empty()) continue;
    std::vector<double> others;
    for (const LooCell& other : cells) {
      const bool apart = other_releases_only ? other.release != cell.release : &other != &cell;
      if (other.group == cell.group && apart) others.insert(others.end(), other.k1_errors.begin(), other.k1_errors.end());
    }
    const auto band = calibration::coverage_band(others);
    HeldOutCoverage& c = by_group[cell.group];
    for (double e : cell.k1_errors) {
      ++c.predictions;
      if (!band) {
        ++c.without_band;
        continue;
      }
      c.inside += (e >= band->low && e <= band->high) ? 1 : 0;
      c.half_widths.push_back((band->high - band->low) / 2 / (1 + e));
    }
  }
  return by_group;
}

/// The spreads of the errors: uncalibrated, each group's check rows on each GPU kind (kinds of
/// calibration::kFewestRows rows or more) and on every kind; calibrated, each group's k = 1 held-out predictions.
struct Spreads {
  std::vector<calibration::ErrorSpread> uncalibrated;
  std::vector<calibration::ErrorSpread> calibrated;
  std::vector<std::string> names;  ///< owns the views' text
};

Spreads todays_spreads(const std::vector<MeasuredRun>& runs, const std::vector<double>& measured,
                       const std::vector<double>& uncalibrated, const std::vector<LooCell>& cells) {
  // (group, kind or "") -> each check row's release and error
  std::map<std::pair<std::string, std::string>, std::vector<std::pair<std::string, double>>> by_kind;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].fit.empty()) continue;  // fit rows say nothing of the model
    const std::pair<std::string, double> row{release_of(runs[i].id), measured[i] / uncalibrated[i] - 1};
    by_kind[{runs[i].group(), runs[i].gpu_kind()}].push_back(row);
    by_kind[{runs[i].group(), ""}].push_back(row);
  }
  const auto errors_of = [](const std::vector<std::pair<std::string, double>>& rows, const std::string& except) {
    std::vector<double> errors;
    for (const auto& [release, error] : rows) {
      if (release != except) errors.push_back(error);
    }
    return errors;
  };
  // How an uncalibrated band does on a release it was not drawn from: each release's rows against the
  // band of the other releases' rows, the kind's or, where those are too few, the group's over every
  // kind (as step_band falls back).
  const auto held_out_releases = [&](const std::pair<std::string, std::string>& key) {
    const auto& rows = by_kind.at(key);
    const auto& group_rows = by_kind.at({key.first, ""});
    int inside = 0;
    for (const auto& [release, error] : rows) {
      auto band = calibration::coverage_band(errors_of(rows, release));
      if (!band) band = calibration::coverage_band(errors_of(group_rows, release));
      inside += band && error >= band->low && error <= band->high ? 1 : 0;
    }
    return static_cast<double>(inside) / static_cast<double>(rows.size());
  };
  std::map<std::string, std::vector<double>> by_group;
  for (const LooCell& cell : cells) {
    by_group[cell.group].insert(by_group[cell.group].end(), cell.k1_errors.begin(), cell.k1_errors.end());
  }
  const std::map<std::string, HeldOutCoverage> held_out = held_out_coverage(cells, false);
  Spreads out;
  out.names.reserve(4 * (by_kind.size() + by_group.size()));
  const auto keep = [&](const std::string& text) -> std::string_view { return out.names.emplace_back(text); };
  for (const auto& [key, rows] : by_kind) {
    const auto band = calibration::coverage_band(errors_of(rows, ""));  // none from a kind of too few rows
    if (!band) continue;
    out.uncalibrated.push_back({keep(key.first), keep(key.second), band->low, band->high, static_cast<int>(rows.size()),
                                held_out_releases(key)});
  }
  for (const auto& [group, errors] : by_group) {
    const auto band = calibration::coverage_band(errors);
    if (!band) continue;
    out.calibrated.push_back(
        {keep(group), "", band->low, band->high, static_cast<int>(errors.size()), held_out.at(group).share()});
  }
  return out;
}

std::string cpp_rows(const std::vector<calibration::ErrorSpread>& spreads) {
  std::string out;
  for (const auto& s : spreads) {
    out += s.held_out_coverage > 0
               ? fmt::format("    ErrorSpread{{\"{}\", \"{}\", {:.3f}, {:.3f}, {}, {:.3f}}},\n", s.group, s.gpu_kind, s.low,
                             s.high, s.predictions, s.held_out_coverage)
               : fmt::format("    ErrorSpread{{\"{}\", \"{}\", {:.3f}, {:.3f}, {}}},\n", s.group, s.gpu_kind, s.low,
                             s.high, s.predictions);
  }
  return out;
}

void expect_same_spreads(std::span<const calibration::ErrorSpread> compiled,
                         const std::vector<calibration::ErrorSpread>& today, const char* table) {
  EXPECT_EQ(compiled.size(), today.size()) << table;
  for (const auto& t : today) {
    const auto found = std::find_if(compiled.begin(), compiled.end(), [&](const calibration::ErrorSpread& c) {
      return c.group == t.group && c.gpu_kind == t.gpu_kind;
    });
    if (found == compiled.end()) {
      ADD_FAILURE() << table << " lacks " << t.group << " / " << t.gpu_kind;
      continue;
    }
    EXPECT_NEAR(found->low, t.low, 0.0015) << table << " " << t.group << " / " << t.gpu_kind;
    EXPECT_NEAR(found->high, t.high, 0.0015) << table << " " << t.group << " / " << t.gpu_kind;
    EXPECT_EQ(found->predictions, t.predictions) << table << " " << t.group << " / " << t.gpu_kind;
    EXPECT_NEAR(found->held_out_coverage, t.held_out_coverage, 0.0015) << table << " " << t.group << " / " << t.gpu_kind;
  }
}

// The bands every prediction carries (sim/calibration/prediction_band.h) are today's spreads of the
// validation's errors: a change that moves predictions must rewrite them (this prints the rows).
void LeaveOneOut::band_tables_are_todays() {
  const Spreads today = todays_spreads(*runs_, *measured_step_s_, *uncalibrated_step_s_, *cells_);
  std::printf("uncalibrated:\n%scalibrated:\n%s", cpp_rows(today.uncalibrated).c_str(), cpp_rows(today.calibrated).c_str());
  expect_same_spreads(calibration::uncalibrated_spreads(), today.uncalibrated, "uncalibrated");
  expect_same_spreads(calibration::calibrated_spreads(), today.calibrated, "calibrated");
}

// The ranking tolerances (prediction_band.h) are today's: pairs of check rows that ran one model on one
// cluster in one release, the median |error| of mpsim's ratio between the two (this prints the rows).
void LeaveOneOut::ranking_tolerances_are_todays() {
  using Job = std::tuple<std::string, std::string, std::string, std::int64_t, double, std::size_t>;
  std::map<Job, std::vector<std::size_t>> by_job;
  for (std::size_t i = 0; i < runs_->size(); ++i) {
    const MeasuredRun& run = (*runs_)[i];
    if (!run.fit.empty()) continue;  // fit rows say nothing of the model
    by_job[{release_of(run.id), run.gpu_label, run.group(), run.model.parameters(),
            run.model.training_flops_per_sample().count(), run.cluster.gpus().size()}]
        .push_back(i);
  }
  std::map<std::string, std::vector<double>> by_group;  // "" pools every group
  for (const auto& [job, rows] : by_job) {
    for (std::size_t a = 0; a < rows.size(); ++a) {
      for (std::size_t b = a + 1; b < rows.size(); ++b) {
        const double measured = (*measured_step_s_)[rows[a]] / (*measured_step_s_)[rows[b]];
        const double predicted = (*uncalibrated_step_s_)[rows[a]] / (*uncalibrated_step_s_)[rows[b]];
        const double error = std::fabs(measured / predicted - 1);
        by_group[std::get<2>(job)].push_back(error);
        by_group[""].push_back(error);
      }
    }
  }
  std::string rows;
  for (const auto& [group, errors] : by_group) {
    rows += fmt::format("    RankingTolerance{{\"{}\", {:.3f}, {}}},\n", group, validation::median(errors), errors.size());
  }
  std::printf("ranking tolerances:\n%s", rows.c_str());
  const auto compiled = calibration::ranking_tolerances();
  EXPECT_EQ(compiled.size(), by_group.size());
  for (const auto& [group, errors] : by_group) {
    const auto found = std::find_if(compiled.begin(), compiled.end(),
                                    [&](const calibration::RankingTolerance& t) { return t.group == group; });
    if (found == compiled.end()) {
      ADD_FAILURE() << "no ranking tolerance for '" << group << "'";
      continue;
    }
    EXPECT_NEAR(found->share, validation::median(errors), 0.0015) << group;
    EXPECT_EQ(found->pairs, static_cast<int>(errors.size())) << group;
  }
}

// Bands are honest on runs they were not drawn from: each cell's calibrated held-out predictions
// against the band the group's other cells give, with two readings of "other": every other cell (a
// release and GPU kind the table does not hold together, as a user's own run usually is: the share
// the band text states), and only the other releases' cells (a release the table does not hold).
void LeaveOneOut::calibrated_bands_on_held_out_cells() {
  for (const bool other_releases_only : {false, true}) {
    const char* reading = other_releases_only ? "the other releases'" : "the other cells'";
    for (const auto& [group, c] : held_out_coverage(*cells_, other_releases_only)) {
      std::printf("%-20s held-out predictions inside %s band: %.1f %% of %d (%d without one); median half-width %.1f %%\n",
                  group.c_str(), reading, c.share() * 100, c.predictions, c.without_band,
                  c.half_widths.empty() ? 0.0 : validation::median(c.half_widths) * 100);
      const auto& floor = other_releases_only ? kOtherReleasesCoverageToday : kOtherCellsCoverageToday;
      EXPECT_GE(c.share(), floor.at(group)) << group << " against " << reading << " band";
    }
  }
}

// The checks above share one simulation of every held-out prediction (a few minutes): one test, so that
// ctest, which runs each test in a process of its own, runs it once.
TEST_F(LeaveOneOut, CalibrationOnHeldOutRuns) {
  {
    SCOPED_TRACE("held-out table");
    held_out_table();
  }
  {
    SCOPED_TRACE("one run is matched");
    one_run_is_matched();
  }
  {
    SCOPED_TRACE("band tables are today's");
    band_tables_are_todays();
  }
  {
    SCOPED_TRACE("ranking tolerances are today's");
    ranking_tolerances_are_todays();
  }
  {
    SCOPED_TRACE("calibrated bands on held-out cells");
    calibrated_bands_on_held_out_cells();
  }
}

}  // namespace
}  // namespace mpsim
