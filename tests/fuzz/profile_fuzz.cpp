// A software profile (`--profile FILE`, what `mpsim calibrate -o` writes): YAML, then the factors
// (shared and per GPU kind), GPU kinds, the runs that set each factor and the fitted runs. A profile that reads from UTF-8 text (what a file must be to be read at
// all, read_text_file) must also survive being written and read again (write_profile_yaml's
// promise): the same factors to 6 significant digits, the same names.
#include <cmath>
#include <cstdlib>
#include <string>
#include <string_view>

#include "sim/calibration/profile_file.h"
#include "sim/core/utf8.h"
#include "sim/core/yaml_field.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

bool same_to_six_digits(double a, double b) { return std::abs(a - b) <= 5e-6 * std::abs(b); }

/// Whether `text` is UTF-8, as a profile file must be to be read at all (read_text_file), so that only
/// such inputs reach the round trip. The strings it holds may still not be text (an escape such as \N
/// writes a lone byte): the reader refuses those (Field::as_string).
bool is_utf8(std::string_view text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t length = mpsim::utf8_character_at(text, i).length;
    if (length == 0) return false;
    i += length;
  }
  return true;
}

/// Aborts (a finding) when `read`, written and read back, is not the same profile or does not read.
void check_round_trip(const mpsim::calibration::SoftwareProfile& read) {
  const std::string written = mpsim::calibration::write_profile_yaml(read);
  mpsim::calibration::SoftwareProfile again;
  try {
    again = mpsim::calibration::load_profile(mpsim::YamlDocument::parse(written, "written.yaml").root());
  } catch (const mpsim::InputError&) {
    std::abort();
  }
  bool same = again.name == read.name && again.gpu_kinds == read.gpu_kinds &&
              again.factors.size() == read.factors.size() && again.residuals.size() == read.residuals.size() &&
              again.set_by == read.set_by;
  for (std::size_t i = 0; same && i < read.factors.size(); ++i) {
    same = again.factors[i].kind == read.factors[i].kind && again.factors[i].gpu_kind == read.factors[i].gpu_kind &&
           same_to_six_digits(again.factors[i].value, read.factors[i].value);
  }
  for (std::size_t i = 0; same && i < read.residuals.size(); ++i) {
    const auto& a = again.residuals[i];
    const auto& r = read.residuals[i];
    same = a.run == r.run && same_to_six_digits(a.measured_step_s, r.measured_step_s) &&
           same_to_six_digits(a.predicted_step_s, r.predicted_step_s) &&
           same_to_six_digits(a.uncalibrated_step_s, r.uncalibrated_step_s);
  }
  if (!same) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::calibration::SoftwareProfile profile;
  bool read = false;
  mpsim::fuzz::expect_only<mpsim::InputError>([&] {
    const auto doc = mpsim::YamlDocument::parse(std::string(mpsim::fuzz::text_of(data, size)), "fuzz.yaml");
    profile = mpsim::calibration::load_profile(doc.root());
    read = true;
  });
  if (read && is_utf8(mpsim::fuzz::text_of(data, size))) check_round_trip(profile);
  return 0;
}
