#!/usr/bin/env bash
# Runs the libFuzzer harnesses of a build made with -DMPSIM_FUZZ=ON (see docs/reliability.md).
#   tools/fuzz.sh BUILD_DIR SECONDS [HARNESS ...]
# Each harness starts from its seed corpus (shipped files, the malformed-input cases, and
# tests/fuzz/regressions/HARNESS: every crasher found so far) and runs for SECONDS. Any crash,
# sanitizer report, leak, uncaught exception other than the reader's own error, or input slower
# than 1 s fails the run; the input is left in $MPSIM_FUZZ_OUT (default BUILD_DIR/fuzz-out). The
# corpus each harness grows there is kept, so a later run in the same place goes on from it.
# Harnesses run $(nproc) at a time.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:?usage: tools/fuzz.sh BUILD_DIR SECONDS [HARNESS ...]}
seconds=${2:?usage: tools/fuzz.sh BUILD_DIR SECONDS [HARNESS ...]}
shift 2
all=(topology_fuzz model_fuzz plan_fuzz override_fuzz nvidia_smi_fuzz nccl_xml_fuzz trace_fuzz torch_csv_fuzz
  step_record_fuzz launch_script_fuzz framework_trace_fuzz gzip_fuzz torchtitan_job_fuzz runs_file_fuzz profile_fuzz
  catalog_fuzz)
harnesses=("$@")
[[ ${#harnesses[@]} -eq 0 ]] && harnesses=("${all[@]}")
out=${MPSIM_FUZZ_OUT:-$build/fuzz-out}
mkdir -p "$out"

# seeds HARNESS DIR: fills DIR with the harness's seed inputs; prints the dictionary to use.
seeds() {
  local name=$1 dir=$2 m=$repo/tests/integration/malformed
  case $name in
    topology_fuzz) cp "$repo"/topologies/*.yaml "$m"/topo-*.yaml "$dir"; echo yaml ;;
    model_fuzz) cp "$repo"/configs/models/*.yaml "$m"/model-*.yaml "$dir"; echo yaml ;;
    plan_fuzz) cp "$repo"/configs/plans/*.yaml "$m"/plan-*.yaml "$dir"; echo yaml ;;
    override_fuzz) cp "$repo"/tests/fuzz/seeds/override/* "$dir"; echo yaml ;;
    nvidia_smi_fuzz) cp "$repo"/tests/data/import/*.txt "$dir"; echo "" ;;
    nccl_xml_fuzz) cp "$repo"/tests/data/import/*.xml "$dir"; echo xml ;;
    trace_fuzz) cp "$repo"/tests/fuzz/seeds/trace/* "$dir"; echo json ;;
    torch_csv_fuzz)
      # The first byte picks the pipeline shape (torch_csv_fuzz.cpp): 0 = ZB-V p4 m8, 1 = DualPipeV p4 m10.
      { printf '\000'; cat "$repo/tests/data/torch/zbv_p4_m8.csv"; } > "$dir/zbv_p4_m8"
      { printf '\001'; cat "$repo/tests/data/torch/dualpipev_p4_m10.csv"; } > "$dir/dualpipev_p4_m10"
      echo "" ;;
    step_record_fuzz) cp "$repo"/tests/fuzz/seeds/step_record/* "$dir"; echo "" ;;
    framework_trace_fuzz) cp "$repo"/tests/data/kineto/* "$dir"; echo json ;;
    gzip_fuzz)
      # .json.gz traces as `--trace x.json.gz` writes them.
      for f in "$repo"/tests/fuzz/seeds/trace/*; do gzip -n -c "$f" > "$dir/$(basename "$f").gz"; done
      echo "" ;;
    launch_script_fuzz) cp "$repo"/tests/data/launch/*.sh "$repo"/tests/golden/export/*.sh "$dir"; echo "" ;;
    torchtitan_job_fuzz)
      # Job TOMLs, and the one that names a schedule CSV with that CSV after a "#csv" line.
      cp "$repo"/tests/data/launch/*.toml "$repo"/tests/golden/export/*.toml "$dir"
      for f in "$repo"/tests/golden/export/*.csv; do
        { cat "${f%.csv}.toml"; printf '\n#csv\n'; cat "$f"; } > "$dir/$(basename "${f%.csv}")-with-csv"
      done
      echo "" ;;
    runs_file_fuzz) cp "$repo"/tests/fuzz/seeds/runs_file/* "$dir"; echo yaml ;;
    profile_fuzz) cp "$repo"/tests/fuzz/seeds/profile/* "$dir"; echo yaml ;;
    catalog_fuzz) cp "$repo"/configs/catalogs/*.yaml "$m"/catalog-*.yaml "$dir"; echo yaml ;;
    *) echo "tools/fuzz.sh: unknown harness '$name' (known: $(tr "\n" " " < "$out/known"))" >&2; return 1 ;;
  esac
}

run_one() {
  local name=$1 work=$out/$1
  rm -rf "$work/seeds" "$work/artifacts" "$work/log.txt"
  mkdir -p "$work/corpus" "$work/seeds" "$work/artifacts"
  local dict
  dict=$(seeds "$name" "$work/seeds")
  local regressions=$repo/tests/fuzz/regressions/$name
  local inputs=("$work/corpus" "$work/seeds")
  [[ -d $regressions ]] && inputs+=("$regressions")
  # A fixed seed: the same inputs in the same order on every run (MPSIM_FUZZ_SEED changes it).
  local args=(-max_total_time="$seconds" -timeout=1 -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1
    -seed="${MPSIM_FUZZ_SEED:-1}" -artifact_prefix="$work/artifacts/")
  [[ -n $dict ]] && args+=(-dict="$repo/tests/fuzz/dict/$dict.dict")
  if ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$build/tests/fuzz/$name" "${args[@]}" "${inputs[@]}" > "$work/log.txt" 2>&1; then
    echo "fuzz: $name: $(grep -m1 -o 'stat::number_of_executed_units: [0-9]*' "$work/log.txt" | awk '{print $2}') runs in ${seconds} s, nothing found"
  else
    echo "fuzz: $name FAILED; the input is in $work/artifacts, the log ends:" >&2
    tail -n 40 "$work/log.txt" >&2
    return 1
  fi
}

export -f run_one seeds
export repo build seconds out
printf '%s\n' "${all[@]}" > "$out/known"
printf '%s\n' "${harnesses[@]}" | xargs -P "$(nproc)" -I{} bash -c 'run_one "$1"' _ {}
