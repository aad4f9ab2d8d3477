// Chrome Trace Event JSON as the viewer and `compare` read it (events, metadata, the report).
#include "sim/trace/trace_reader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  mpsim::fuzz::expect_only<mpsim::trace::TraceReadError>(
      [&] { (void)mpsim::trace::parse_trace(mpsim::fuzz::text_of(data, size), "fuzz.json"); });
  return 0;
}
