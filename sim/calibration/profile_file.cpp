#include "sim/calibration/profile_file.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/core/did_you_mean.h"
#include "sim/core/yaml_field.h"
#include "sim/topology/gpu_kind.h"

namespace mpsim::calibration {

namespace {
/// A factor beyond this is a unit mistake, not a software stack (ten times the catalogue's rate).
constexpr double kLargestFactor = 10;

/// `text` as a double-quoted YAML scalar, escaped as YAML needs (a quote, a backslash, a control
/// character), so that load_profile reads back the same string: run ids are file paths and the
/// runs files' ids, names are what --name says.
std::string quoted(const std::string& text) {
  YAML::Emitter out;
  out << YAML::DoubleQuoted << text;
  return out.c_str();
}

std::string known_factors() {
  std::string known;
  for (std::string_view n : factor_names()) known += (known.empty() ? "" : ", ") + std::string(n);
  return known;
}

/// A `factors:` mapping (the shared one, or a GPU kind's under `per_kind:`) into `out`.
void read_factor_map(const Field& factors, const std::string& gpu_kind, std::vector<Factor>& out) {
  if (!factors.is_map()) factors.fail("expected a mapping of factor names to values (e.g. gemm: 0.9)");
  for (const auto& [key, value] : factors.entries()) {
    const auto kind = factor_kind_named(key);
    if (!kind) value.fail(fmt::format("unknown factor '{}'{} (one of {})", key, did_you_mean(key, factor_names()), known_factors()));
    if (!gpu_kind.empty() && !is_gpu_factor(*kind)) {
      value.fail(fmt::format("'{}' {}, shared by every GPU kind: give it under 'factors'", key,
                             *kind == FactorKind::AllRates ? "scales the links too" : "is a link's factor"));
    }
    out.push_back({*kind, value.as_double_in(1e-6, kLargestFactor), gpu_kind});
  }
}

/// `per_kind:`: each GPU kind's factors, keyed by its catalogue id (an alias reads as its id).
void read_per_kind(const Field& per_kind, std::vector<Factor>& out) {
  if (!per_kind.is_map()) per_kind.fail("expected a mapping of GPU kinds to their factors (e.g. t4-16gb: {gemm: 1.2})");
  const topology::GpuCatalog& catalog = topology::GpuCatalog::builtin();
  std::vector<std::string> seen;
  for (const auto& [key, factors] : per_kind.entries()) {
    const topology::GpuKind* kind = catalog.find(key);
    if (kind == nullptr) {
      const std::vector<std::string> names = catalog.names();
      const std::vector<std::string_view> views(names.begin(), names.end());
      factors.fail(fmt::format("unknown GPU kind '{}'{} (a catalogue id of configs/hardware/gpus.yaml)", key,
                               did_you_mean(key, views)));
    }
    if (std::find(seen.begin(), seen.end(), kind->id) != seen.end()) {
      factors.fail(fmt::format("GPU kind '{}' is given twice (as '{}' here)", kind->id, key));
    }
    seen.push_back(kind->id);
    read_factor_map(factors, kind->id, out);
  }
}
}  // namespace

SoftwareProfile load_profile(const Field& root) {
  root.expect_keys({"profile"});
  const Field p = root.require("profile");
  p.expect_keys({"name", "gpu_kinds", "factors", "per_kind", "set_by", "runs", "peak_runs", "read_from_kernels"});
  SoftwareProfile profile;
  if (auto name = p.get("name")) profile.name = name->as_string();
  if (auto kinds = p.get("gpu_kinds")) {
    for (const Field& kind : kinds->items_or_scalar()) profile.gpu_kinds.push_back(kind.as_string());
    std::sort(profile.gpu_kinds.begin(), profile.gpu_kinds.end());
  }
  // A profile of per-kind factors alone may leave out the shared ones.
  if (!p.has("per_kind") || p.has("factors")) read_factor_map(p.require("factors"), "", profile.factors);
  if (auto per_kind = p.get("per_kind")) read_per_kind(*per_kind, profile.factors);
  if (auto set_by = p.get("set_by")) {
    for (const Field& entry : set_by->items()) {
      entry.expect_keys({"factor", "gpu_kind", "runs"});
      const Field factor = entry.require("factor");
      const auto kind = factor_kind_named(factor.as_string());
      if (!kind) factor.fail(fmt::format("unknown factor '{}' (one of {})", factor.as_string(), known_factors()));
      FactorRuns r{*kind, {}, {}};
      if (auto gpu = entry.get("gpu_kind")) {
        const topology::GpuKind* named = topology::GpuCatalog::builtin().find(gpu->as_string());
        if (named == nullptr) gpu->fail(fmt::format("unknown GPU kind '{}'", gpu->as_string()));
        r.gpu_kind = named->id;
      }
      if (std::none_of(profile.factors.begin(), profile.factors.end(),
                       [&](const Factor& f) { return f.kind == r.kind && f.gpu_kind == r.gpu_kind; })) {
        factor.fail(fmt::format("'{}'{} is not among the profile's factors", factor.as_string(),
                                r.gpu_kind.empty() ? "" : " of " + r.gpu_kind));
      }
      for (const Field& run : entry.require("runs").items_or_scalar()) r.runs.push_back(run.as_string());
      profile.set_by.push_back(std::move(r));
    }
  }
  if (auto runs = p.get("runs")) {
    for (const Field& run : runs->items()) {
      run.expect_keys({"id", "measured_step_s", "predicted_step_s", "uncalibrated_step_s"});
      profile.residuals.push_back({run.require("id").as_string(), run.require("measured_step_s").as_double_in(1e-12, 1e12),
                                   run.require("predicted_step_s").as_double_in(1e-12, 1e12),
                                   run.require("uncalibrated_step_s").as_double_in(1e-12, 1e12)});
    }
  }
  if (auto runs = p.get("peak_runs")) {
    for (const Field& run : runs->items()) {
      run.expect_keys({"id", "kind", "stage", "measured_gib", "predicted_gib", "uncalibrated_gib"});
      const Field kind = run.require("kind");
      const auto named = peak_kind_named(kind.as_string());
      if (!named) kind.fail(fmt::format("'{}' is not a kind of peak (allocated or reserved)", kind.as_string()));
      profile.peak_residuals.push_back({run.require("id").as_string(), *named,
                                        run.require("measured_gib").as_double_in(1e-12, 1e12),
                                        run.require("predicted_gib").as_double_in(1e-12, 1e12),
                                        run.require("uncalibrated_gib").as_double_in(1e-12, 1e12), std::nullopt});
      if (auto stage = run.get("stage")) profile.peak_residuals.back().stage = static_cast<int>(stage->as_int_in(0, 1'000'000));
    }
  }
  if (auto read = p.get("read_from_kernels")) {
    for (const Field& entry : read->items()) {
      entry.expect_keys({"factor", "kernels", "measured_s_per_step", "predicted_s_per_step", "clamped"});
      const Field factor = entry.require("factor");
      const auto kind = factor_kind_named(factor.as_string());
      if (!kind) factor.fail(fmt::format("unknown factor '{}'", factor.as_string()));
      const auto listed = std::find_if(profile.factors.begin(), profile.factors.end(),
                                       [&](const Factor& f) { return f.kind == *kind && f.gpu_kind.empty(); });
      if (listed == profile.factors.end()) factor.fail(fmt::format("'{}' is not among the profile's factors", factor.as_string()));
      ReadFactor r{*kind, listed->value, 0, 0, 0, false};
      r.kernels = entry.require("kernels").as_int_in(0, std::int64_t{1} << 50);
      r.measured_s = entry.require("measured_s_per_step").as_double_in(0, 1e12);
      r.predicted_s = entry.require("predicted_s_per_step").as_double_in(0, 1e12);
      if (auto clamped = entry.get("clamped")) r.clamped = clamped->as_bool();
      profile.read_factors.push_back(r);
    }
  }
  return profile;
}

SoftwareProfile load_profile_file(const std::filesystem::path& path) {
  return load_profile(YamlDocument::load(path).root());
}

std::string write_profile_yaml(const SoftwareProfile& profile) {
  std::string out = "profile:\n";
  out += fmt::format("  name: {}\n", quoted(profile.name));
  out += "  gpu_kinds: [";
  for (std::size_t i = 0; i < profile.gpu_kinds.size(); ++i) out += (i ? ", " : "") + quoted(profile.gpu_kinds[i]);
  out += "]\n  factors:";
  const auto shared = [](const Factor& f) { return f.gpu_kind.empty(); };
  if (std::none_of(profile.factors.begin(), profile.factors.end(), shared)) out += " {}";
  out += "\n";
  for (const Factor& f : profile.factors) {
    if (!shared(f)) continue;
    // Where some were read from kernel traces, each line says how its factor was set.
    const std::string source = profile.read_factors.empty() ? "" : "  # " + profile.factor_source(f.kind);
    out += fmt::format("    {}: {:.6g}{}\n", to_string(f.kind), f.value, source);
  }
  // Each GPU kind's own factors, in the order its first one is listed.
  std::vector<std::string> kinds;
  for (const Factor& f : profile.factors) {
    if (!shared(f) && std::find(kinds.begin(), kinds.end(), f.gpu_kind) == kinds.end()) kinds.push_back(f.gpu_kind);
  }
  if (!kinds.empty()) {
    out += "  # factors of one GPU kind, which override the shared factors of their names on that kind\n  per_kind:\n";
    for (const std::string& kind : kinds) {
      out += fmt::format("    {}:\n", quoted(kind));
      for (const Factor& f : profile.factors) {
        if (f.gpu_kind == kind) out += fmt::format("      {}: {:.6g}\n", to_string(f.kind), f.value);
      }
    }
  }
  if (!profile.set_by.empty()) {
    out += "  # the runs whose predicted steps each factor moves by 2 % or more, which set its value\n  set_by:\n";
    for (const FactorRuns& r : profile.set_by) {
      std::string runs;
      for (const std::string& run : r.runs) runs += (runs.empty() ? "" : ", ") + quoted(run);
      out += fmt::format("    - {{factor: {}{}, runs: [{}]}}\n", to_string(r.kind),
                         r.gpu_kind.empty() ? "" : ", gpu_kind: " + quoted(r.gpu_kind), runs);
    }
  }
  if (!profile.residuals.empty()) {
    out += "  # the runs it was fitted on: measured step, the step predicted with the profile and without\n  runs:\n";
    for (const FitResidual& r : profile.residuals) {
      out += fmt::format("    - {{id: {}, measured_step_s: {:.6g}, predicted_step_s: {:.6g}, uncalibrated_step_s: {:.6g}}}\n",
                         quoted(r.run), r.measured_step_s, r.predicted_step_s, r.uncalibrated_step_s);
    }
  }
  if (!profile.read_factors.empty()) {
    out += "  # the factors read from kernel traces (the others were fitted): the kernels read over the ranks and\n"
           "  # steps, their time per step on a rank as measured and as predicted at the catalogue's rates\n"
           "  read_from_kernels:\n";
    for (const ReadFactor& r : profile.read_factors) {
      out += fmt::format("    - {{factor: {}, kernels: {}, measured_s_per_step: {:.6g}, predicted_s_per_step: {:.6g}, "
                         "clamped: {}}}\n",
                         to_string(r.kind), r.kernels, r.measured_s, r.predicted_s, r.clamped);
    }
  }
  if (!profile.peak_residuals.empty()) {
    out += "  # the runs activation_memory was fitted on: measured peak, the peak predicted with the profile and "
           "without\n  peak_runs:\n";
    for (const PeakResidual& r : profile.peak_residuals) {
      out += fmt::format("    - {{id: {}, kind: {}, {}measured_gib: {:.6g}, predicted_gib: {:.6g}, uncalibrated_gib: {:.6g}}}\n",
                         quoted(r.run), to_string(r.kind), r.stage ? fmt::format("stage: {}, ", *r.stage) : std::string(),
                         r.measured_gib, r.predicted_gib, r.uncalibrated_gib);
    }
  }
  return out;
}

nlohmann::json profile_json(const SoftwareProfile& profile) {
  nlohmann::json factors = nlohmann::json::object();
  nlohmann::json per_kind = nlohmann::json::object();
  for (const Factor& f : profile.factors) {
    (f.gpu_kind.empty() ? factors : per_kind[f.gpu_kind])[std::string(to_string(f.kind))] = f.value;
  }
  nlohmann::json set_by = nlohmann::json::array();
  for (const FactorRuns& r : profile.set_by) {
    set_by.push_back({{"factor", to_string(r.kind)}, {"gpu_kind", r.gpu_kind}, {"runs", r.runs}});
  }
  nlohmann::json runs = nlohmann::json::array();
  for (const FitResidual& r : profile.residuals) {
    runs.push_back({{"id", r.run},
                    {"measured_step_s", r.measured_step_s},
                    {"predicted_step_s", r.predicted_step_s},
                    {"uncalibrated_step_s", r.uncalibrated_step_s},
                    {"error", r.error()}});
  }
  nlohmann::json peak_runs = nlohmann::json::array();
  for (const PeakResidual& r : profile.peak_residuals) {
    peak_runs.push_back({{"id", r.run},
                         {"kind", to_string(r.kind)},
                         {"stage", r.stage ? nlohmann::json(*r.stage) : nlohmann::json()},
                         {"measured_gib", r.measured_gib},
                         {"predicted_gib", r.predicted_gib},
                         {"uncalibrated_gib", r.uncalibrated_gib},
                         {"error", r.error()}});
  }
  nlohmann::json sources = nlohmann::json::object();
  for (const Factor& f : profile.factors) {
    if (f.gpu_kind.empty()) sources[std::string(to_string(f.kind))] = profile.factor_source(f.kind);
  }
  nlohmann::json read = nlohmann::json::array();
  for (const ReadFactor& r : profile.read_factors) {
    read.push_back({{"factor", to_string(r.kind)},
                    {"value", r.value},
                    {"kernels", r.kernels},
                    {"measured_s_per_step", r.measured_s},
                    {"predicted_s_per_step", r.predicted_s},
                    {"clamped", r.clamped}});
  }
  return {{"name", profile.name},      {"gpu_kinds", profile.gpu_kinds}, {"factors", factors},
          {"per_kind", per_kind},         {"set_by", set_by},               {"factor_sources", sources},
          {"read_from_kernels", read},    {"runs", runs},                   {"peak_runs", peak_runs}};
}

}  // namespace mpsim::calibration
