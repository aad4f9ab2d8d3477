#pragma once
/// Software profile files (docs/calibration.md, "Profile files"): YAML in and out, and the JSON that
/// `mpsim calibrate --json` prints.
#include <filesystem>
#include <string>

#include <nlohmann/json_fwd.hpp>

#include "sim/calibration/software_profile.h"
#include "sim/core/yaml_field_fwd.h"

namespace mpsim::calibration {

/// Reads a `profile:` document. Throws InputError at the field (an unknown factor names the known ones).
[[nodiscard]] SoftwareProfile load_profile(const Field& root);
[[nodiscard]] SoftwareProfile load_profile_file(const std::filesystem::path& path);
/// The profile as a `profile:` document; load_profile reads it back to the same values (6 significant digits).
[[nodiscard]] std::string write_profile_yaml(const SoftwareProfile& profile);
[[nodiscard]] nlohmann::json profile_json(const SoftwareProfile& profile);

}  // namespace mpsim::calibration
