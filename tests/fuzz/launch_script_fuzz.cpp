// Megatron-LM launch scripts: the bash reader (quotes, arrays, expansions, arithmetic) and the
// arguments read from them into a plan and a model.
#include "interop/import/megatron_import.h"
#include "sim/core/input_error.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::InputError>(
      [&] { (void)mpsim::interop::import_megatron(mpsim::fuzz::text_of(data, size), "fuzz.sh", std::nullopt, true); });
  return 0;
}
