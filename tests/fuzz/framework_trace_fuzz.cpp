// A framework's measured run for `mpsim compare`: PyTorch profiler (Kineto) traces and step-time logs.
#include "interop/trace/framework_trace.h"
#include "sim/trace/trace_reader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(mpsim::fuzz::text_of(data, size));
  mpsim::fuzz::expect_only<mpsim::trace::TraceReadError>([&] {
    mpsim::interop::TraceKernels kernels;  // the kernels by class too (mpsim calibrate's reading)
    (void)mpsim::interop::read_kineto_step({{"fuzz.json", text}}, 8, 2, &kernels);
  });
  mpsim::fuzz::expect_only<mpsim::trace::TraceReadError>(
      [&] { (void)mpsim::interop::read_step_time_log(text, "fuzz.log"); });
  return 0;
}
