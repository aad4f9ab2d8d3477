#!/usr/bin/env bash
# Configures and builds mpsim into build/ (or $MPSIM_BUILD_DIR). Extra arguments go to CMake.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${MPSIM_BUILD_DIR:-$repo/build}
jobs=${MPSIM_JOBS:-$(nproc)}
cmake -S "$repo" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${MPSIM_BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
cmake --build "$build" -j "$jobs"
