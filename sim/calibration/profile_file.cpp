#include "sim/calibration/profile_file.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "sim/core/did_you_mean.h"
#include "sim/core/yaml_field.h"

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
}  // namespace

SoftwareProfile load_profile(const Field& root) {
  root.expect_keys({"profile"});
  const Field p = root.require("profile");
  p.expect_keys({"name", "gpu_kinds", "factors", "runs", "peak_runs", "read_from_kernels"});
  SoftwareProfile profile;
  if (auto name = p.get("name")) profile.name = name->as_string();
  if (auto kinds = p.get("gpu_kinds")) {
    for (const Field& kind : kinds->items_or_scalar()) profile.gpu_kinds.push_back(kind.as_string());
    std::sort(profile.gpu_kinds.begin(), profile.gpu_kinds.end());
  }
  const Field factors = p.require("factors");
  if (!factors.is_map()) factors.fail("expected a mapping of factor names to values (e.g. gemm: 0.9)");
  for (const auto& [key, value] : factors.entries()) {
    const auto kind = factor_kind_named(key);
    if (!kind) {
      std::string known;
      for (std::string_view n : factor_names()) known += (known.empty() ? "" : ", ") + std::string(n);
      value.fail(fmt::format("unknown factor '{}'{} (one of {})", key, did_you_mean(key, factor_names()), known));
    }
    profile.factors.push_back({*kind, value.as_double_in(1e-6, kLargestFactor)});
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
      run.expect_keys({"id", "kind", "measured_gib", "predicted_gib", "uncalibrated_gib"});
      const Field kind = run.require("kind");
      const auto named = peak_kind_named(kind.as_string());
      if (!named) kind.fail(fmt::format("'{}' is not a kind of peak (allocated or reserved)", kind.as_string()));
      profile.peak_residuals.push_back({run.require("id").as_string(), *named,
                                        run.require("measured_gib").as_double_in(1e-12, 1e12),
                                        run.require("predicted_gib").as_double_in(1e-12, 1e12),
                                        run.require("uncalibrated_gib").as_double_in(1e-12, 1e12)});
    }
  }
  if (auto read = p.get("read_from_kernels")) {
    for (const Field& entry : read->items()) {
      entry.expect_keys({"factor", "kernels", "measured_s_per_step", "predicted_s_per_step", "clamped"});
      const Field factor = entry.require("factor");
      const auto kind = factor_kind_named(factor.as_string());
      if (!kind) factor.fail(fmt::format("unknown factor '{}'", factor.as_string()));
      const auto listed = std::find_if(profile.factors.begin(), profile.factors.end(),
                                       [&](const Factor& f) { return f.kind == *kind; });
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
  if (profile.factors.empty()) out += " {}";
  out += "\n";
  for (const Factor& f : profile.factors) {
    // Where some were read from kernel traces, each line says how its factor was set.
    const std::string source = profile.read_factors.empty() ? "" : "  # " + profile.factor_source(f.kind);
    out += fmt::format("    {}: {:.6g}{}\n", to_string(f.kind), f.value, source);
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
      out += fmt::format("    - {{id: {}, kind: {}, measured_gib: {:.6g}, predicted_gib: {:.6g}, uncalibrated_gib: {:.6g}}}\n",
                         quoted(r.run), to_string(r.kind), r.measured_gib, r.predicted_gib, r.uncalibrated_gib);
    }
  }
  return out;
}

nlohmann::json profile_json(const SoftwareProfile& profile) {
  nlohmann::json factors = nlohmann::json::object();
  for (const Factor& f : profile.factors) factors[std::string(to_string(f.kind))] = f.value;
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
                         {"measured_gib", r.measured_gib},
                         {"predicted_gib", r.predicted_gib},
                         {"uncalibrated_gib", r.uncalibrated_gib},
                         {"error", r.error()}});
  }
  nlohmann::json sources = nlohmann::json::object();
  for (const Factor& f : profile.factors) sources[std::string(to_string(f.kind))] = profile.factor_source(f.kind);
  nlohmann::json read = nlohmann::json::array();
  for (const ReadFactor& r : profile.read_factors) {
    read.push_back({{"factor", to_string(r.kind)},
                    {"value", r.value},
                    {"kernels", r.kernels},
                    {"measured_s_per_step", r.measured_s},
                    {"predicted_s_per_step", r.predicted_s},
                    {"clamped", r.clamped}});
  }
  return {{"name", profile.name},         {"gpu_kinds", profile.gpu_kinds}, {"factors", factors},
          {"factor_sources", sources},    {"read_from_kernels", read},      {"runs", runs},
          {"peak_runs", peak_runs}};
}

}  // namespace mpsim::calibration
