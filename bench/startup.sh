#!/usr/bin/env bash
# Start-up of the mpsim command: the median wall time and the largest resident memory of `mpsim
# --version` and of `mpsim simulate` of a shipped plan, over N runs each, and the shared libraries
# the executable loads (no CUDA, cuBLAS or NCCL: the CUDA backend is a module opened by
# `execute --backend cuda`). docs/benchmarks.md quotes the figures.
#
# Usage: bench/startup.sh [MPSIM] [N]     (default build/cli/mpsim, 21 runs)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mpsim="${1:-$root/build/cli/mpsim}"
runs="${2:-21}"
[[ -x "$mpsim" ]] || { echo "startup.sh: no executable $mpsim (build first)" >&2; exit 2; }
[[ -x /usr/bin/time ]] || { echo "startup.sh: needs /usr/bin/time (Debian package 'time')" >&2; exit 2; }

measure() {
  local label="$1"; shift
  local times=() kib=0
  for ((i = 0; i < runs; i++)); do
    local start end rss
    start=$(date +%s%N)
    /usr/bin/time -o "$work/rss" -f '%M' "$mpsim" "$@" >/dev/null 2>&1
    rss=$(tail -1 "$work/rss")
    end=$(date +%s%N)
    times+=($(( (end - start) / 1000 )))
    (( rss > kib )) && kib=$rss
  done
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
  printf '%-34s median %6.1f ms   max resident %6.1f MB   (%d runs)\n' "$label" "$(echo "$median / 1000" | bc -l)" \
    "$(echo "$kib / 1024" | bc -l)" "$runs"
}

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cd "$root"
measure "mpsim --version" --version
measure "mpsim simulate (gpt3-13b, 32 GPUs)" simulate --topology topologies/4x-p4d.yaml \
  --model configs/models/gpt3-13b.yaml --plan configs/plans/gpt3-13b-4x-p4d.yaml
echo "libraries: $(ldd "$mpsim" | awk '{print $1}' | grep -E 'cuda|cublas|nccl|mpi' | tr '\n' ' ')"
