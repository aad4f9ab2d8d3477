// Megatron-LM launch scripts: the bash reader (quotes, arrays, expansions, arithmetic) and the
// arguments read from them into a plan and a model, with the vocabulary from the script's tokenizer and,
// as `plan import --vocab-size` gives it, from the caller; and the tokenizer-name lookup on the raw bytes.
#include "interop/import/megatron_import.h"
#include "sim/core/input_error.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text = mpsim::fuzz::text_of(data, size);
  mpsim::fuzz::expect_only<mpsim::InputError>(
      [&] { (void)mpsim::interop::import_megatron(text, "fuzz.sh", std::nullopt, true); });
  // The caller's vocabulary replaces the tokenizer's: the padding runs on a size no script wrote.
  mpsim::fuzz::expect_only<mpsim::InputError>(
      [&] { (void)mpsim::interop::import_megatron(text, "fuzz.sh", std::nullopt, true, 1'000'000'000); });
  (void)mpsim::interop::known_vocabulary("HuggingFaceTokenizer", text);
  return 0;
}
