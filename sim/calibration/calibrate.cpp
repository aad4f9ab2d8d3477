#include "sim/calibration/calibrate.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include <Eigen/Dense>

#include "sim/engine/simulator.h"

namespace mpsim::calibration {

namespace {

/// The value a factor is probed at to measure its elasticity.
constexpr double kProbe = 0.8;
/// The second probe of a factor the first finds idle: a rate a quarter of the catalogue's.
constexpr double kFarProbe = 0.25;
constexpr double kFloor = kSmallestRateFactor;
constexpr int kMaxIterations = 16;
/// The fit is done when every run's step is within this of its measurement (log error: 0.1 %).
constexpr double kMatched = 1e-3;
/// A factor pinned at its bound leaves this much error or more: the next factor joins the fit.
constexpr double kUnexplained = 0.01;

struct StepRun {
  const MeasuredRun* run = nullptr;  ///< with the read factors applied to its cluster
  double measured_s = 0;
  double uncalibrated_s = 0;  ///< predicted with the read factors only (those the fit starts from)
  double catalogue_s = 0;     ///< predicted at the catalogue's rates
};

struct Candidate {
  FactorKind kind;
  std::string gpu_kind;        ///< empty: shared (Factor::gpu_kind)
  Eigen::VectorXd elasticity;  ///< by run
};

/// Whether two job GPUs of one node talk over PCIe: a node with two or more of them, one of which has no
/// NVLink (a g4dn's T4s, a PCIe-only server). On NVLink machines PCIe carries only the hop to a NIC, which
/// network_transfers stands for.
bool gpus_talk_over_pcie(const topology::Cluster& cluster) {
  std::set<std::uint32_t> on_nvlink;
  for (const topology::Link& l : cluster.links()) {
    if (l.kind != topology::LinkKind::NvLink) continue;
    on_nvlink.insert(l.a.value);
    on_nvlink.insert(l.b.value);
  }
  std::map<int, int> job_gpus_by_node;
  for (const topology::DeviceId g : cluster.gpus()) ++job_gpus_by_node[cluster.device(g).node];
  return std::any_of(cluster.gpus().begin(), cluster.gpus().end(), [&](topology::DeviceId g) {
    return !on_nvlink.contains(g.value) && job_gpus_by_node[cluster.device(g).node] > 1;
  });
}

/// Whether a factor can move the run at all (saves its probe): FP8 GEMMs only under an FP8 precision,
/// network links only between nodes, PCIe only between GPUs without NVLink, a GPU kind's factor only where
/// the run has GPUs of that kind.
bool can_move(FactorKind kind, const std::string& gpu_kind, const MeasuredRun& run) {
  if (!gpu_kind.empty()) {
    const std::vector<std::string> kinds = run.gpu_kinds();
    if (std::find(kinds.begin(), kinds.end(), gpu_kind) == kinds.end()) return false;
  }
  if (kind == FactorKind::Fp8Gemm) return run.plan.precision != plan::Precision::Bf16 && run.plan.precision != plan::Precision::Fp16 &&
                                        run.plan.precision != plan::Precision::Fp32;
  if (kind == FactorKind::NetworkTransfers) return run.cluster.node_count > 1;
  if (kind == FactorKind::PcieTransfers) return gpus_talk_over_pcie(run.cluster);
  return true;
}

/// ln(t(value) / t(1)) / ln(1 / value): the share of the run's step that scales with the factor's rate
/// between `value` and 1.
double elasticity(const StepRun& run, FactorKind kind, const std::string& gpu_kind, double value) {
  return std::log(predict(*run.run, {{kind, value, gpu_kind}}).step_time_s / run.uncalibrated_s) / std::log(1 / value);
}

/// The factors the fit may choose among: each of options.factors (but activation_memory: no step
/// moves with it, fit_activation_memory), once; with per_kind, each GPU factor once per GPU kind of
/// the runs, in the kinds' order.
std::vector<std::pair<FactorKind, std::string>> factor_keys(const std::vector<StepRun>& runs,
                                                           const CalibrationOptions& options) {
  std::set<std::string> kinds;
  for (const StepRun& run : runs) {
    for (const std::string& kind : run.run->gpu_kinds()) kinds.insert(kind);
  }
  std::vector<std::pair<FactorKind, std::string>> keys;
  const auto add = [&](FactorKind kind, const std::string& gpu_kind) {
    // A kind listed twice is one candidate: two would be fitted as two factors on the same rate.
    if (std::find(keys.begin(), keys.end(), std::pair{kind, gpu_kind}) == keys.end()) keys.emplace_back(kind, gpu_kind);
  };
  for (FactorKind kind : options.factors) {
    if (kind == FactorKind::ActivationMemory) continue;
    if (options.per_kind && is_gpu_factor(kind)) {
      for (const std::string& gpu_kind : kinds) add(kind, gpu_kind);
    } else {
      add(kind, "");
    }
  }
  return keys;
}

/// The candidates with their elasticities, most influential first (summed over the runs); ties keep
/// kFactorKinds' order, so the choice is deterministic.
std::vector<Candidate> probe_factors(const std::vector<StepRun>& runs, const CalibrationOptions& options) {
  std::vector<Candidate> candidates;
  for (const auto& [kind, gpu_kind] : factor_keys(runs, options)) {
    Candidate c{kind, gpu_kind, Eigen::VectorXd::Zero(static_cast<Eigen::Index>(runs.size()))};
    for (std::size_t i = 0; i < runs.size(); ++i) {
      if (!can_move(kind, gpu_kind, *runs[i].run)) continue;
      c.elasticity[static_cast<Eigen::Index>(i)] = elasticity(runs[i], kind, gpu_kind, kProbe);
    }
    // Work hidden under other work (communication under compute) moves the step only once its rate
    // falls far enough to surface: a factor the first probe finds idle everywhere is probed again far out.
    if (c.elasticity.maxCoeff() < kSmallestElasticity) {
      for (std::size_t i = 0; i < runs.size(); ++i) {
        if (can_move(kind, gpu_kind, *runs[i].run)) {
          c.elasticity[static_cast<Eigen::Index>(i)] = elasticity(runs[i], kind, gpu_kind, kFarProbe);
        }
      }
    }
    if (c.elasticity.maxCoeff() >= kSmallestElasticity) candidates.push_back(std::move(c));
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const Candidate& a, const Candidate& b) { return a.elasticity.sum() > b.elasticity.sum(); });
  return candidates;
}

/// The first of `candidates` the runs tell apart (see the header), at most `limit`.
std::vector<const Candidate*> distinct_factors(const std::vector<Candidate>& candidates, std::size_t limit) {
  std::vector<const Candidate*> kept;
  for (const Candidate& c : candidates) {
    if (kept.size() >= limit) break;
    Eigen::MatrixXd e(c.elasticity.size(), static_cast<Eigen::Index>(kept.size() + 1));
    for (std::size_t k = 0; k < kept.size(); ++k) e.col(static_cast<Eigen::Index>(k)) = kept[k]->elasticity;
    e.col(static_cast<Eigen::Index>(kept.size())) = c.elasticity;
    const Eigen::VectorXd singular = Eigen::JacobiSVD<Eigen::MatrixXd>(e).singularValues();
    if (singular[singular.size() - 1] >= kDistinctFactors * singular[0]) kept.push_back(&c);
  }
  return kept;
}

/// Least squares of the runs' log step errors over the factors' log values, by Gauss-Newton with
/// Broyden's updates of the Jacobian (first the probes' elasticities, re-measured once when a step
/// stops helping) and step halving.
class Fit {
 public:
  /// `start`: values to begin from (a narrower fit's), 1 for the factors it lacks.
  Fit(const std::vector<StepRun>& runs, std::vector<const Candidate*> factors, const std::vector<Factor>& start = {})
      : runs_(&runs), factors_(std::move(factors)) {
    const auto k = static_cast<Eigen::Index>(factors_.size());
    const auto n = static_cast<Eigen::Index>(runs_->size());
    x_ = Eigen::VectorXd::Zero(k);
    lower_ = Eigen::VectorXd::Constant(k, std::log(kFloor));
    upper_.resize(k);
    jacobian_.resize(n, k);
    for (Eigen::Index j = 0; j < k; ++j) {
      // The profile applies to every run's GPUs: the lowest of the runs' ceilings (runs of several GPU kinds).
      const Candidate& factor = *factors_[static_cast<std::size_t>(j)];
      double ceiling = std::numeric_limits<double>::infinity();
      for (const StepRun& run : *runs_) ceiling = std::min(ceiling, factor_ceiling(factor.kind, run.run->cluster, factor.gpu_kind));
      // Beside a rate's own factor, all_rates multiplies it: held at 1 or below there, it cannot carry
      // that rate past the own factor's bound.
      if (factor.kind == FactorKind::AllRates && k > 1) ceiling = std::min(ceiling, 1.0);
      upper_[j] = std::log(ceiling);
      jacobian_.col(j) = -factors_[static_cast<std::size_t>(j)]->elasticity;
    }
    log_measured_.resize(n);
    log_steps_.resize(n);
    for (Eigen::Index i = 0; i < n; ++i) {
      log_measured_[i] = std::log((*runs_)[static_cast<std::size_t>(i)].measured_s);
      log_steps_[i] = std::log((*runs_)[static_cast<std::size_t>(i)].uncalibrated_s);
    }
    for (const Factor& f : start) {
      for (Eigen::Index j = 0; j < k; ++j) {
        const Candidate& c = *factors_[static_cast<std::size_t>(j)];
        if (c.kind == f.kind && c.gpu_kind == f.gpu_kind) x_[j] = std::min(std::log(f.value), upper_[j]);
      }
    }
    if (!start.empty()) log_steps_ = log_steps_at(x_);
  }

  void solve() {
    // No factor moves the runs (or none of those allowed): nothing to solve for, and an empty
    // step's largest coefficient is undefined.
    if (x_.size() == 0) return;
    bool remeasured = false;
    for (int iteration = 0; iteration < kMaxIterations && residual().cwiseAbs().maxCoeff() > kMatched; ++iteration) {
      const Eigen::VectorXd r = residual();
      const Eigen::VectorXd delta = step_within_bounds(r);
      bool improved = false;
      double scale = 1;
      for (int halving = 0; halving < 4 && !improved; ++halving, scale /= 2) {
        const Eigen::VectorXd next = (x_ + scale * delta).cwiseMax(lower_).cwiseMin(upper_);
        const Eigen::VectorXd dx = next - x_;
        if (dx.cwiseAbs().maxCoeff() < 1e-6) break;  // pinned at the bounds
        const Eigen::VectorXd next_steps = log_steps_at(next);
        const Eigen::VectorXd next_residual = next_steps - log_measured_;
        // Broyden: the Jacobian made to agree with the step just taken.
        jacobian_ += ((next_steps - log_steps_) - jacobian_ * dx) * dx.transpose() / dx.squaredNorm();
        if (next_residual.squaredNorm() < r.squaredNorm()) {
          x_ = next;
          log_steps_ = next_steps;
          improved = true;
        }
      }
      if (improved) continue;
      if (remeasured) break;
      remeasure_jacobian();
      remeasured = true;
    }
  }

  [[nodiscard]] std::vector<Factor> factors() const { return factors_at(x_); }
  /// The Gauss-Newton step over the factors free to move: one at a bound that the step would push
  /// further out is held there, and the others share the step without it.
  [[nodiscard]] Eigen::VectorXd step_within_bounds(const Eigen::VectorXd& r) const {
    Eigen::MatrixXd free = jacobian_;
    Eigen::VectorXd delta = free.completeOrthogonalDecomposition().solve(-r);
    for (int pass = 0; pass < static_cast<int>(x_.size()); ++pass) {
      bool held = false;
      for (Eigen::Index j = 0; j < x_.size(); ++j) {
        const bool outward = (x_[j] >= upper_[j] - 1e-9 && delta[j] > 0) || (x_[j] <= lower_[j] + 1e-9 && delta[j] < 0);
        if (outward && free.col(j).squaredNorm() > 0) {
          free.col(j).setZero();
          held = true;
        }
      }
      if (!held) break;
      delta = free.completeOrthogonalDecomposition().solve(-r);
    }
    return delta;
  }
  [[nodiscard]] Eigen::VectorXd residual() const { return log_steps_ - log_measured_; }
  [[nodiscard]] Eigen::VectorXd log_steps() const { return log_steps_; }
  [[nodiscard]] bool pinned() const {
    for (Eigen::Index j = 0; j < x_.size(); ++j) {
      if (x_[j] >= upper_[j] - 1e-9 || x_[j] <= lower_[j] + 1e-9) return true;
    }
    return false;
  }

 private:
  [[nodiscard]] std::vector<Factor> factors_at(const Eigen::VectorXd& x) const {
    std::vector<Factor> out;
    for (std::size_t k = 0; k < factors_.size(); ++k) {
      out.push_back({factors_[k]->kind, std::exp(x[static_cast<Eigen::Index>(k)]), factors_[k]->gpu_kind});
    }
    return out;
  }
  [[nodiscard]] Eigen::VectorXd log_steps_at(const Eigen::VectorXd& x) const {
    const auto factors = factors_at(x);
    Eigen::VectorXd out(static_cast<Eigen::Index>(runs_->size()));
    for (std::size_t i = 0; i < runs_->size(); ++i) {
      out[static_cast<Eigen::Index>(i)] = std::log(predict(*(*runs_)[i].run, factors).step_time_s);
    }
    return out;
  }
  /// A one-sided difference towards the inside of the bounds.
  void remeasure_jacobian() {
    constexpr double kStep = 0.05;
    for (Eigen::Index j = 0; j < x_.size(); ++j) {
      Eigen::VectorXd moved = x_;
      moved[j] += moved[j] + kStep <= upper_[j] ? kStep : -kStep;
      jacobian_.col(j) = (log_steps_at(moved) - log_steps_) / (moved[j] - x_[j]);
    }
  }

  const std::vector<StepRun>* runs_;
  std::vector<const Candidate*> factors_;
  Eigen::VectorXd x_, lower_, upper_, log_measured_, log_steps_;
  Eigen::MatrixXd jacobian_;
};

constexpr double kGib = 1024.0 * 1024.0 * 1024.0;

void fit_steps(const std::vector<StepRun>& steps, const CalibrationOptions& options, SoftwareProfile& profile);

/// A device's peak bytes as fixed + factor x activations (measured_kind_peak_gib).
struct PeakLine {
  double fixed = 0;
  double activations = 0;
  double optimizer_step = 0;  ///< what the optimizer step holds beside `fixed`, no activation then
};

std::vector<PeakLine> peak_lines(const trace::Report& prediction, PeakKind kind, std::optional<int> stage) {
  std::vector<PeakLine> lines;
  for (const trace::DeviceReport& d : prediction.devices) {
    if (stage && d.stage != *stage) continue;
    const trace::MemoryBreakdown& m = d.memory;
    const double runtime = kind == PeakKind::Reserved ? static_cast<double>(m.reserved) : 0.0;
    lines.push_back({static_cast<double>(m.weights + m.gradients + m.optimizer) + runtime,
                     static_cast<double>(m.activations), static_cast<double>(m.optimizer_step)});
  }
  return lines;
}

/// activation_memory from the runs that measured a peak: each run's own factor (activation_factor_for_peak), their
/// median; the runs' residuals at it.
void fit_activation_memory(const std::vector<MeasuredRun>& runs, SoftwareProfile& profile) {
  struct PeakRun {
    const MeasuredRun* run;
    trace::Report prediction;
  };
  std::vector<PeakRun> peaks;
  std::vector<double> factors;
  for (const MeasuredRun& run : runs) {
    if (!run.measured_peak_gib) continue;
    PeakRun p{&run, predict(run, {})};
    factors.push_back(activation_factor_for_peak(p.prediction, run.peak_kind, *run.measured_peak_gib,
                                                 factor_ceiling(FactorKind::ActivationMemory, run.cluster),
                                                 run.peak_stage));
    peaks.push_back(std::move(p));
  }
  if (peaks.empty()) return;
  std::sort(factors.begin(), factors.end());
  const std::size_t mid = factors.size() / 2;
  const double factor = factors.size() % 2 == 1 ? factors[mid] : (factors[mid - 1] + factors[mid]) / 2;
  profile.factors.push_back({FactorKind::ActivationMemory, factor});
  for (const PeakRun& p : peaks) {
    profile.peak_residuals.push_back({p.run->id, p.run->peak_kind, *p.run->measured_peak_gib,
                                      measured_kind_peak_gib(p.prediction, p.run->peak_kind, factor, p.run->peak_stage),
                                      measured_kind_peak_gib(p.prediction, p.run->peak_kind, 1.0, p.run->peak_stage),
                                      p.run->peak_stage});
  }
}

}  // namespace

double measured_kind_peak_gib(const trace::Report& prediction, PeakKind kind, double activation_factor,
                              std::optional<int> stage) {
  double peak = 0;
  for (const PeakLine& l : peak_lines(prediction, kind, stage)) {
    peak = std::max({peak, l.fixed + activation_factor * l.activations, l.fixed + l.optimizer_step});
  }
  return peak / kGib;
}

double activation_factor_for_peak(const trace::Report& prediction, PeakKind kind, double measured_gib, double ceiling,
                                  std::optional<int> stage) {
  double factor = ceiling;
  for (const PeakLine& l : peak_lines(prediction, kind, stage)) {
    if (l.activations > 0) factor = std::min(factor, (measured_gib * kGib - l.fixed) / l.activations);
  }
  return std::clamp(factor, kFloor, ceiling);
}

trace::Report predict(const MeasuredRun& run, const std::vector<Factor>& factors) {
  if (factors.empty()) return engine::simulate(run.cluster, run.model, run.plan).report;
  topology::Cluster cluster = run.cluster;
  apply_factors(factors, cluster);
  return engine::simulate(cluster, run.model, run.plan).report;
}

SoftwareProfile calibrate(const std::vector<MeasuredRun>& runs, std::string name, const CalibrationOptions& options) {
  const bool fits_memory = std::find(options.factors.begin(), options.factors.end(), FactorKind::ActivationMemory) !=
                           options.factors.end();
  const bool fits_steps = std::any_of(options.factors.begin(), options.factors.end(),
                                      [](FactorKind k) { return k != FactorKind::ActivationMemory; });
  // The factors read from kernel traces are held: the runs the fit simulates have them applied.
  std::vector<Factor> read;
  for (const ReadFactor& r : options.read) read.push_back({r.kind, r.value});
  std::vector<MeasuredRun> held_runs;
  if (!read.empty()) {
    held_runs = runs;
    for (MeasuredRun& run : held_runs) apply_factors(read, run.cluster);
  }
  std::vector<StepRun> steps;
  std::set<std::string> gpu_kinds;
  bool any_peak = false;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const MeasuredRun& run = runs[i];
    if (run.measured_peak_gib && fits_memory) {
      any_peak = true;
      gpu_kinds.insert(run.gpu_kind());
    }
    if (run.measured <= 0 || !fits_steps) continue;  // a peak memory alone
    const trace::Report uncalibrated = predict(run, {});
    const MeasuredRun& held = read.empty() ? run : held_runs[i];
    const double start_s = read.empty() ? uncalibrated.step_time_s : predict(held, {}).step_time_s;
    steps.push_back({&held, run.measured_step_s(uncalibrated), start_s, uncalibrated.step_time_s});
    for (const std::string& kind : run.gpu_kinds()) gpu_kinds.insert(kind);
  }
  if (steps.empty() && !any_peak) {
    throw std::invalid_argument(fits_memory ? "no run gives a step time, a throughput or a peak memory to calibrate on"
                                            : "no run gives a step time or a throughput to calibrate on");
  }
  SoftwareProfile profile;
  profile.name = std::move(name);
  if (!steps.empty()) {
    CalibrationOptions rest = options;  // the factors not read
    // all_rates would scale what was read as well, and per kind it would take the part of the step the
    // kinds share, leaving their own factors nothing to tell apart: there, the step is left to the others.
    std::erase_if(rest.factors, [&](FactorKind k) {
      return (k == FactorKind::AllRates && (!read.empty() || options.per_kind)) ||
             std::any_of(read.begin(), read.end(), [&](const Factor& f) { return f.kind == k; });
    });
    fit_steps(steps, rest, profile);
  }
  profile.factors.insert(profile.factors.begin(), read.begin(), read.end());
  profile.read_factors = options.read;
  fit_activation_memory(fits_memory ? runs : std::vector<MeasuredRun>{}, profile);
  // The shared factors first, then each kind's (SoftwareProfile::factors; the file lists them apart).
  std::stable_partition(profile.factors.begin(), profile.factors.end(), [](const Factor& f) { return f.gpu_kind.empty(); });
  profile.gpu_kinds.assign(gpu_kinds.begin(), gpu_kinds.end());
  return profile;
}

namespace {

/// The rate factors that best explain `steps` (the header's fit), and the runs' residuals.
void fit_steps(const std::vector<StepRun>& steps, const CalibrationOptions& options, SoftwareProfile& profile) {
  const std::vector<Candidate> candidates = probe_factors(steps, options);
  const std::size_t limit = std::min<std::size_t>(
      steps.size(), options.max_factors > 0 ? static_cast<std::size_t>(options.max_factors) : candidates.size());
  std::vector<const Candidate*> chosen = distinct_factors(candidates, limit);
  Fit fit(steps, chosen);
  fit.solve();
  // A factor stopped at its bound leaves the rest of the error to the next most influential factor, which
  // the pinned one no longer competes with.
  while (fit.pinned() && fit.residual().cwiseAbs().maxCoeff() >= kUnexplained &&
         (options.max_factors == 0 || chosen.size() < static_cast<std::size_t>(options.max_factors))) {
    const auto next = std::find_if(candidates.begin(), candidates.end(), [&](const Candidate& c) {
      return std::find(chosen.begin(), chosen.end(), &c) == chosen.end();
    });
    if (next == candidates.end()) break;
    chosen.push_back(&*next);
    Fit wider(steps, chosen, fit.factors());
    wider.solve();
    fit = std::move(wider);
  }

  profile.factors = fit.factors();
  // A factor the widening loop brought in that stayed at the catalogue's rate changes no prediction.
  std::erase_if(profile.factors, [](const Factor& f) { return f.value == 1.0; });
  // Per kind, the profile says which runs set each factor: those of its kind whose step it moves.
  if (options.per_kind) {
    for (const Factor& f : profile.factors) {
      const auto c = std::find_if(chosen.begin(), chosen.end(),
                                  [&](const Candidate* k) { return k->kind == f.kind && k->gpu_kind == f.gpu_kind; });
      FactorRuns set{f.kind, f.gpu_kind, {}};
      for (std::size_t i = 0; i < steps.size(); ++i) {
        if ((*c)->elasticity[static_cast<Eigen::Index>(i)] >= kSmallestElasticity) set.runs.push_back(steps[i].run->id);
      }
      profile.set_by.push_back(std::move(set));
    }
  }
  const Eigen::VectorXd log_steps = fit.log_steps();
  for (std::size_t i = 0; i < steps.size(); ++i) {
    profile.residuals.push_back(
        {steps[i].run->id, steps[i].measured_s, std::exp(log_steps[static_cast<Eigen::Index>(i)]), steps[i].catalogue_s});
  }
}

}  // namespace

}  // namespace mpsim::calibration
