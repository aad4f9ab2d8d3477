// TorchTitan job TOMLs: toml++'s parser and the keys read from it into a plan, and the schedule CSV
// a job may name. The CSV is the input's own bytes after a line "#csv" (the TOML before it), so
// both readers run from one input without files.
#include "interop/import/torchtitan_import.h"
#include "sim/core/input_error.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view input = mpsim::fuzz::text_of(data, size);
  constexpr std::string_view kSeparator = "\n#csv\n";
  const std::size_t cut = input.find(kSeparator);
  const std::string_view job = input.substr(0, cut);
  const std::string csv(cut == std::string_view::npos ? std::string_view{} : input.substr(cut + kSeparator.size()));
  mpsim::interop::TorchTitanImportOptions options;
  options.read_csv = [&](const std::string& written) { return mpsim::interop::ScheduleCsvFile{written, csv}; };
  mpsim::fuzz::expect_only<mpsim::InputError>(
      [&] { (void)mpsim::interop::import_torchtitan(job, "fuzz.toml", options); });
  return 0;
}
