#!/usr/bin/env bash
# The whole test suite: packages, build, every CTest test. With --sanitize, a second build with
# AddressSanitizer + UndefinedBehaviorSanitizer runs the unit tests as well, and a clang build of the
# libFuzzer harnesses runs each for $MPSIM_FUZZ_SECONDS (default 15; docs/reliability.md).
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tools/deps.sh"
"$repo/tools/build.sh"
ctest --test-dir "$repo/build" --output-on-failure -j "$(nproc)"
if [[ "${1:-}" == "--sanitize" ]]; then
  # Only the unit tests run here: the CUDA backend (its tests need a GPU), the Qt viewer (its tests
  # run in the build above) and the benchmarks are built once, by the build above, which keeps the
  # whole suite within CI's 30 minutes on 2 cores.
  MPSIM_BUILD_DIR="$repo/build-asan" MPSIM_BUILD_TYPE=Debug "$repo/tools/build.sh" -DMPSIM_SANITIZE=ON \
    -DMPSIM_WITH_CUDA=OFF -DMPSIM_WITH_QT=OFF -DMPSIM_BUILD_BENCH=OFF
  ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir "$repo/build-asan" --output-on-failure -j "$(nproc)" -L unit
  # The fuzzers: only the harnesses and the libraries they read with, optimised (-O1) so each 15 s
  # runs tens to hundreds of thousands of inputs.
  cmake -S "$repo" -B "$repo/build-fuzz" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-g -O1" \
    -DCMAKE_CXX_COMPILER=clang++ -DMPSIM_SANITIZE=ON -DMPSIM_FUZZ=ON -DMPSIM_WITH_CUDA=OFF -DMPSIM_WITH_QT=OFF \
    -DMPSIM_BUILD_BENCH=OFF >/dev/null
  cmake --build "$repo/build-fuzz" --target mpsim_fuzzers -j "$(nproc)"
  "$repo/tools/fuzz.sh" "$repo/build-fuzz" "${MPSIM_FUZZ_SECONDS:-15}"
fi
