#!/usr/bin/env bash
# Builds the Release benchmarks, runs them and prints their medians; then measures whole 4096-GPU
# simulations, replicas folded and unfolded (wall time, peak memory), and counts the instructions of a
# 64-GPU one. docs/benchmarks.md explains each number.
#
# Usage: bench/report.sh [--quick]
#   --quick           skip the 4096-GPU cases and valgrind
#   MPSIM_BENCH_DIR   build directory (default /tmp/mpsim-bench)
set -euo pipefail

quick=0
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "report.sh: unknown argument '$arg' (try --help)" >&2; exit 2 ;;
  esac
done

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${MPSIM_BENCH_DIR:-/tmp/mpsim-bench}"
jobs="$(nproc 2>/dev/null || echo 2)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

section() { printf '\n== %s ==\n' "$1"; }

section "build (Release) in $build"
generator=()
if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then generator=(-G Ninja); fi
cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DMPSIM_BUILD_TESTS=OFF >"$work/cmake.log" \
  || { cat "$work/cmake.log"; exit 1; }
cmake --build "$build" -j "$jobs" --target simulator_bench topology_bench mpsim >"$work/build.log" \
  || { tail -50 "$work/build.log"; exit 1; }
echo "built: simulator_bench, topology_bench, mpsim"

mpsim="$build/cli/mpsim"
gpt3="$root/configs/models/gpt3-175b.yaml"
dgx_x512="$root/topologies/512x-dgx-h100.yaml"

# Runs a benchmark program with three repetitions and prints the header and the median rows.
run_bench() {
  local program="$1"; shift
  local log="$work/$(basename "$program").txt"
  "$program" --benchmark_repetitions=3 --benchmark_report_aggregates_only=true "$@" >"$log" 2>&1 \
    || { cat "$log"; exit 1; }
  grep -E '^(Benchmark|-{10})' "$log" | head -2
  grep -E '_median ' "$log" || true
}

section "topology_bench (median of 3)"
run_bench "$build/bench/topology_bench"

section "simulator_bench (median of 3)"
if (( quick )); then
  run_bench "$build/bench/simulator_bench" --benchmark_filter=-4096
else
  run_bench "$build/bench/simulator_bench"
fi

if (( ! quick )); then
  section "one 4096-GPU step: GPT-3 175B, TP 8 x PP 16 x DP 32, 64 microbatches"
  cat >"$work/plan-4096.yaml" <<'EOF'
parallelism: { tensor: 8, pipeline: 16 }
batch: { global: 2048, micro: 1 }
schedule: 1f1b
EOF
  if [[ -x /usr/bin/time ]]; then
    printf '%-34s %8s %8s %12s %10s\n' "" "wall s" "user s" "max RSS MiB" "step time"
    # Default (replicas folded), then --unfold: every device and flow simulated.
    for mode in folded unfolded; do
      flags=()
      [[ $mode == unfolded ]] && flags=(--unfold)
      /usr/bin/time -v "$mpsim" simulate "${flags[@]}" --topology "$dgx_x512" --model "$gpt3" \
        --plan "$work/plan-4096.yaml" >"$work/simulate-$mode.txt" 2>"$work/time-$mode.txt" \
        || { cat "$work/time-$mode.txt"; exit 1; }
      step="$(awk '/^ +step time/ { print $3, $4 }' "$work/simulate-$mode.txt")"
      awk -F': ' -v label="mpsim simulate ($mode)" -v step="$step" '
        /Elapsed \(wall clock\) time/ { n = split($2, p, ":"); wall = 0; for (i = 1; i <= n; ++i) wall = wall * 60 + p[i] }
        /User time \(seconds\)/       { user = $2 }
        /Maximum resident set size/   { rss = $2 / 1024 }
        END { printf "%-34s %8.2f %8.2f %12.1f %10s\n", label, wall, user, rss, step }
      ' "$work/time-$mode.txt"
    done
  else
    echo "/usr/bin/time not found (Debian/Ubuntu package 'time'): peak memory not measured"
  fi

  section "instructions of one 64-GPU step (callgrind): GPT-3 175B, TP 8 x PP 8, 64 microbatches, 8x DGX H100"
  if command -v valgrind >/dev/null; then
    cat >"$work/plan-64.yaml" <<'EOF'
parallelism: { tensor: 8, pipeline: 8 }
batch: { micro: 1, microbatches: 64 }
schedule: 1f1b
EOF
    args=(simulate --topology "$dgx_x512" --set topology.nodes=8 --model "$gpt3" --plan "$work/plan-64.yaml")
    collected() { grep -E '== Collected :' "$1" | awk '{ print $NF }'; }
    valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.total" "$mpsim" "${args[@]}" \
      >/dev/null 2>"$work/callgrind-total.txt"
    valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.simulate" \
      "--toggle-collect=mpsim::engine::simulate(*Plan const&, mpsim::engine::EngineOptions const&)" \
      "$mpsim" "${args[@]}" >/dev/null 2>"$work/callgrind-simulate.txt"
    printf '%-44s %15s\n' "" "instructions"
    printf '%-44s %15s\n' "whole command (load, simulate, print)" "$(collected "$work/callgrind-total.txt")"
    printf '%-44s %15s\n' "engine::simulate only" "$(collected "$work/callgrind-simulate.txt")"
    echo "top functions (whole command):"
    callgrind_annotate "$work/callgrind.total" 2>/dev/null | grep -E '^ *[0-9,]+ \( *[0-9.]+%\)  ' | grep -v TOTALS \
      | head -8 | sed -E -e 's/ \[[^]]*\]$//' -e 's/ \[clone [^]]*\]$//' -e "s/'[0-9]+$//" -e 's/ const$//' \
        -e 's/\(([^()]|\([^()]*\))*\)$//' -e 's/^( *[0-9,]+ \( *[0-9.]+%\)  )[^:]*:/\1/'
  else
    echo "valgrind not found: instruction counts skipped"
  fi
fi
