#!/usr/bin/env bash
# The whole test suite: packages, build, every CTest test. With --sanitize, a second build with
# AddressSanitizer + UndefinedBehaviorSanitizer (clang, with the libFuzzer harnesses) runs the unit
# tests as well, then each harness for $MPSIM_FUZZ_SECONDS (default 10; docs/reliability.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
# Variables that make tests pass without testing (tests/support/check_environment.cmake fails the
# suite on them too; stopping here saves the build).
for variable in MPSIM_UPDATE_GOLDEN MPSIM_VALIDATION_ROW; do
  if [[ -n "${!variable+set}" ]]; then
    echo "tools/test.sh: $variable is set: the suite would pass without testing; unset it" >&2
    exit 1
  fi
done
"$repo/tools/deps.sh"
"$repo/tools/build.sh"
ctest --test-dir "$repo/build" --no-tests=error --output-on-failure -j "$(nproc)"
if [[ "${1:-}" == "--sanitize" ]]; then
  # One clang build with AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage
  # instrumentation serves both: the unit tests run in it, then each fuzzer for $MPSIM_FUZZ_SECONDS.
  # Only the unit tests and the harnesses are built (the command, the integration tests, the CUDA
  # backend, the Qt viewer and the benchmarks were built and run above), optimised (-O1) so the tests
  # and each fuzzer's seconds run several times faster than at -O0; line tables name file and line.
  # That keeps the whole suite within CI's 30 minutes on 2 cores.
  cmake -S "$repo" -B "$repo/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-gline-tables-only -O1" \
    -DCMAKE_CXX_COMPILER=clang++ -DMPSIM_SANITIZE=ON -DMPSIM_FUZZ=ON -DMPSIM_WITH_CUDA=OFF -DMPSIM_WITH_QT=OFF \
    -DMPSIM_BUILD_BENCH=OFF >/dev/null
  cmake --build "$repo/build-asan" --target mpsim_unit_tests mpsim_fuzzers -j "$(nproc)"
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$repo/build-asan" --no-tests=error --output-on-failure -j "$(nproc)" -L unit
  "$repo/tools/fuzz.sh" "$repo/build-asan" "${MPSIM_FUZZ_SECONDS:-10}"
fi
