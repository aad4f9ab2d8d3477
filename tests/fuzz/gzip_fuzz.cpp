// gzip decompression as every trace reader applies it to .json.gz files (sim/core/gzip.h).
#include "sim/core/gzip.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // A lower output limit than the readers' keeps each input well under the run's 1 s timeout.
  constexpr std::size_t kMaxOutputBytes = std::size_t{16} << 20;
  mpsim::fuzz::expect_only<mpsim::GzipError>(
      [&] { (void)mpsim::gunzip(mpsim::fuzz::text_of(data, size), kMaxOutputBytes); });
  return 0;
}
