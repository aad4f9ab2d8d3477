#!/usr/bin/env bash
# The closed loop on this machine, as the commands a user would type: profile the machine and every
# layer of the model at each micro batch the plans use (mpsim profile), plan on the profiled model
# (mpsim plan), then for several plans predict one step (mpsim simulate) and measure it (mpsim execute,
# Adam), both given the same profiled model and the same plan file, compare the two (mpsim compare), and
# say whether the ranking by prediction is the ranking by measurement. The profiled model carries what
# the executor ran: its layers' times, its optimizer's time per parameter, and the model it was profiled
# from, which `execute` trains; so both sides split the layers as the one plan file says.
#
# Usage: bench/closed_loop.sh [--mpsim PATH] [--model FILE] [--ranks N] [--steps S] [--global-batch B]
#                             [--backend cpu|cuda] [--keep DIR] [--reprofile]
#   --mpsim         the mpsim binary (default: $MPSIM, else build/cli/mpsim)
#   --model         a model the CPU backend trains in about a second (default configs/models/cpu-gpt-small.yaml)
#   --ranks         pipeline ranks (default 2)
#   --steps         steps execute measures (default 9; the report is the median one)
#   --global-batch  samples per step, the same for every plan (default 8)
#   --backend       the executor backend that profiles and measures (default cpu; cuda needs a GPU per rank)
#   --keep          keep the profile, plans, traces and comparisons in DIR
#   --reprofile     time the layers again right before each plan is predicted and measured (for a machine
#                   whose load changes within the loop; the prediction still comes before the measurement)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mpsim="${MPSIM:-$root/build/cli/mpsim}"
model="$root/configs/models/cpu-gpt-small.yaml"
ranks=2
steps=9
batch=8
keep=""
reprofile=0
backend=cpu
while [[ $# -gt 0 ]]; do
  case "$1" in
    --mpsim) mpsim="$2"; shift 2 ;;
    --model) model="$2"; shift 2 ;;
    --ranks) ranks="$2"; shift 2 ;;
    --steps) steps="$2"; shift 2 ;;
    --global-batch) batch="$2"; shift 2 ;;
    --keep) keep="$2"; shift 2 ;;
    --backend) backend="$2"; shift 2 ;;
    --reprofile) reprofile=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "closed_loop.sh: unknown argument '$1' (try --help)" >&2; exit 2 ;;
  esac
done
for tool in jq awk; do
  command -v "$tool" >/dev/null || { echo "closed_loop.sh: needs $tool" >&2; exit 2; }
done
[[ -x "$mpsim" ]] || { echo "closed_loop.sh: no mpsim binary at $mpsim (build it, or give --mpsim)" >&2; exit 2; }
[[ -f "$model" ]] || { echo "closed_loop.sh: no model file $model" >&2; exit 2; }

if [[ -n "$keep" ]]; then
  work="$keep"
  mkdir -p "$work"
else
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
fi

section() { printf '\n== %s ==\n' "$1"; }

# The micro batches the plans use; each gets its own profiled model (a profiled time is that of one
# microbatch of that many samples).
micros=(1 2)

# Shared-memory transfers between the ranks. mpsim execute turns Open MPI's single-copy (CMA) transfers off
# unless the environment says otherwise, since some containers forbid them, and then sends messages up to
# 256 KiB eagerly (executor/launch/mpirun_launch.cpp): above the eager limit a message moves in fragments
# that each need the sender inside MPI, and a rank that sends an activation and goes on computing would
# hold it until its next MPI call. Where the profile works with single copy (Open MPI's default), the loop
# keeps it on for execute too, as the profile measured the links.
set_single_copy=0
if [[ -z "${OMPI_MCA_btl_vader_single_copy_mechanism:-}" ]]; then
  export OMPI_MCA_btl_vader_single_copy_mechanism=cma
  set_single_copy=1
fi

# The machine and the layers are profiled by separate runs: timed right after the machine's
# measurements (64 MiB ping-pongs, 128 MiB bandwidth buffers, all-reduces), the layers ran 8-20%
# slower than alone, and their rounds spread 13-30% instead of 2-10%.
section "profile ($ranks $backend ranks): the machine"
profile_first() {
  "$mpsim" profile --backend "$backend" --ranks "$ranks" --model "$model" -o "$work/profiled.yaml" >"$work/profile.txt"
}
if ! profile_first; then
  [[ "$set_single_copy" == 1 ]] || exit 1
  echo "closed_loop.sh: the profile failed with single-copy transfers; again without them" >&2
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  profile_first
fi
cat "$work/profile.txt"
echo "Open MPI shared-memory single copy: $OMPI_MCA_btl_vader_single_copy_mechanism"
for micro in "${micros[@]}"; do
  section "profile ($ranks ranks): the model's layers at micro batch $micro"
  "$mpsim" profile --backend "$backend" --ranks "$ranks" --model "$model" --micro-batch "$micro" \
    --model-out "$work/model-mb$micro.yaml" | tee "$work/profile-mb$micro.txt"
done
# The planner plans on the profiled model, so only for what was profiled: micro batch 1 and no tensor
# parallelism (the times are those of one microbatch of 1 sample on one rank). The profiled model's
# optimizer time per parameter prices the optimizer step.
section "plan on the profiled model"
"$mpsim" plan --topology "$work/profiled.yaml" --model "$work/model-mb${micros[0]}.yaml" --global-batch "$batch" \
  --gpus "$ranks" --max-micro-batch "${micros[0]}" --max-tensor 1 --top 5 -o "$work/plan-best.yaml" | tee "$work/plan.txt"

# The plans: the planner's best (micro batch 1), then each schedule at two microbatch counts (micro batch 1
# and 2), all with the same global batch over `ranks` pipeline stages: plan files as a user writes them.
# simulate and execute resolve `partition: balanced` alike, from the one plan file and the one profiled model.
declare -A plan_micro=([best]="${micros[0]}")
plan_file() {  # NAME SCHEDULE MICRO [VIRTUAL]
  local name="$1" schedule="$2" micro="$3" virtual="${4:-1}"
  cat >"$work/plan-$name.yaml" <<EOF
parallelism: { tensor: 1, pipeline: $ranks, data: 1, virtual_stages: $virtual }
batch: { global: $batch, micro: $micro }
schedule: $schedule
partition: balanced
EOF
  plan_micro[$name]="$micro"
}
names=(best)
for schedule in gpipe 1f1b zb-h1 zb-h2; do
  for micro in "${micros[@]}"; do
    plan_file "$schedule-mb$((batch / micro))" "$schedule" "$micro"
    names+=("$schedule-mb$((batch / micro))")
  done
done
plan_file "interleaved-1f1b-mb$batch" interleaved-1f1b "${micros[0]}" 2
names+=("interleaved-1f1b-mb$batch")

have_execute=1
if ! "$mpsim" execute --help >/dev/null 2>&1; then
  have_execute=0
  echo "closed_loop.sh: this mpsim has no 'execute' command: predictions only" >&2
fi

section "predict, measure, compare"
: >"$work/results.tsv"
for name in "${names[@]}"; do
  plan="$work/plan-$name.yaml"
  profiled="$work/model-mb${plan_micro[$name]}.yaml"
  if [[ "$reprofile" == 1 ]]; then
    profiled="$work/model-$name.yaml"
    "$mpsim" profile --backend "$backend" --ranks "$ranks" --model "$model" --micro-batch "${plan_micro[$name]}" \
      --model-out "$profiled" >"$work/profile-$name.txt" || { echo "  $name: profile failed"; continue; }
  fi
  if ! "$mpsim" simulate --topology "$work/profiled.yaml" --model "$profiled" --plan "$plan" \
      --trace "$work/pred-$name.json" --json >"$work/pred-$name.report.json" 2>"$work/pred-$name.err"; then
    echo "  $name: simulate failed: $(head -1 "$work/pred-$name.err")"
    continue
  fi
  schedule="$(jq -r '.plan.schedule' "$work/pred-$name.report.json")"
  micro="$(jq -r '.plan.batch.microbatches' "$work/pred-$name.report.json")"
  predicted="$(jq -r '.step_time_s' "$work/pred-$name.report.json")"
  spread="$(jq -r '.profile_spread // 0' "$work/pred-$name.report.json")"
  if [[ "$have_execute" == 0 ]]; then
    printf '%s\t%s\t%s\t%s\t-\t-\t%s\n' "$name" "$schedule" "$micro" "$predicted" "$spread" >>"$work/results.tsv"
    continue
  fi
  # The prediction's model and plan: execute trains the model the profiled one was profiled from.
  if ! "$mpsim" execute --backend "$backend" --topology "$work/profiled.yaml" --model "$profiled" --plan "$plan" \
      --ranks "$ranks" --steps "$steps" --optimizer adam --trace "$work/meas-$name.json" >"$work/meas-$name.out" \
      2>"$work/meas-$name.err"; then
    echo "  $name: execute failed: $(grep -m1 'error' "$work/meas-$name.err" || head -1 "$work/meas-$name.err")"
    continue
  fi
  "$mpsim" compare "$work/pred-$name.json" "$work/meas-$name.json" --json >"$work/compare-$name.json"
  measured="$(jq -r '.measured_step_time_s' "$work/compare-$name.json")"
  error="$(jq -r '.step_time_error' "$work/compare-$name.json")"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$schedule" "$micro" "$predicted" "$measured" "$error" "$spread" \
    >>"$work/results.tsv"
  echo "  $name: predicted $predicted s (profile spread $spread), measured $measured s"
done

section "closed loop: $(basename "$model"), $ranks ranks, global batch $batch"
awk -F'\t' '
  function ms(s) { return s == "-" ? "-" : sprintf("%.1f ms", s * 1000) }
  function pct(e) { return e == "-" ? "-" : sprintf("%.1f%%", e * 100) }
  # Ranks 1..n of v[1..n] (ties share the mean rank).
  function rank_of(v, r, n,   i, j, less, same) {
    for (i = 1; i <= n; i++) {
      less = 0; same = 0
      for (j = 1; j <= n; j++) { if (v[j] < v[i]) less++; else if (v[j] == v[i]) same++ }
      r[i] = less + (same + 1) / 2
    }
  }
  # Over the measured plans whose names match `pattern`: how many are within 10% (`plans`, `within`),
  # and over their pairs whose predictions differ by more than the profile spread says a prediction
  # can be trusted to (the larger spread of the two plans), how many (`resolved`) were measured in the
  # predicted order (`agree`).
  function tally(pattern,   i, j, s2, lo) {
    plans = 0; within = 0; resolved = 0; agree = 0
    for (i = 1; i <= k; i++) {
      if (nn[i] !~ pattern) continue
      plans++
      if (ee[i] <= 0.10) within++
      for (j = i + 1; j <= k; j++) {
        if (nn[j] !~ pattern) continue
        s2 = ss[i] > ss[j] ? ss[i] : ss[j]
        lo = pp[i] < pp[j] ? pp[i] : pp[j]
        if ((pp[i] - pp[j] > s2 * lo) || (pp[j] - pp[i] > s2 * lo)) {
          resolved++
          if ((pp[i] < pp[j]) == (mm[i] < mm[j])) agree++
        }
      }
    }
  }
  {
    n++; name[n] = $1; sched[n] = $2; mb[n] = $3; p[n] = $4; m[n] = $5; e[n] = $6; sp_of[n] = $7
  }
  END {
    if (n == 0) { print "no plan ran"; exit 1 }
    printf "%-26s %-17s %12s %12s %21s %12s %8s\n", "plan", "schedule", "microbatches", "predicted", "band (profile spread)",
           "measured", "error"
    k = 0
    for (i = 1; i <= n; i++) {
      band = sprintf("%.1f-%.1f ms", p[i] * (1 - sp_of[i] / 2) * 1000, p[i] * (1 + sp_of[i] / 2) * 1000)
      printf "%-26s %-17s %12s %12s %21s %12s %8s\n", name[i], sched[i], mb[i], ms(p[i]), band, ms(m[i]), pct(e[i])
      if (e[i] != "-") { k++; errs[k] = e[i]; ee[k] = e[i]; pp[k] = p[i]; mm[k] = m[i]; nn[k] = name[i]; ss[k] = sp_of[i] }
    }
    if (k == 0) { print "\nno measurement: the loop stopped at the prediction"; exit 0 }
    # Median error.
    for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (errs[j] < errs[i]) { t = errs[i]; errs[i] = errs[j]; errs[j] = t }
    med = (k % 2 == 1) ? errs[(k + 1) / 2] : (errs[k / 2] + errs[k / 2 + 1]) / 2
    printf "\nmedian step time error: %.1f%% over %d plans\n", med * 100, k
    # Spearman rank correlation between predicted and measured step times.
    rank_of(pp, rp, k); rank_of(mm, rm, k)
    same = 1; sp = 0; sm = 0; spm = 0; spp = 0; smm = 0
    for (i = 1; i <= k; i++) {
      if (rp[i] != rm[i]) same = 0
      sp += rp[i]; sm += rm[i]
    }
    for (i = 1; i <= k; i++) {
      dp = rp[i] - sp / k; dm = rm[i] - sm / k
      spm += dp * dm; spp += dp * dp; smm += dm * dm
    }
    rho = (spp > 0 && smm > 0) ? spm / sqrt(spp * smm) : 1
    printf "ranking by prediction vs by measurement: Spearman rho %.2f; same order: %s\n", rho, same ? "yes" : "no"
    tally("")
    printf "within 10%%: %d of %d plans; pairs whose predictions differ by more than the spread: %d, measured in the predicted order: %d\n",
           within, plans, resolved, agree
    # The same counts over the schedules the loop is judged on: gpipe, 1f1b and zb-h1 at 4 and 8 microbatches.
    tally("^(gpipe|1f1b|zb-h1)-mb[48]$")
    printf "gpipe, 1f1b and zb-h1 at 4 and 8 microbatches: within 10%%: %d of %d; pairs apart by more than the spread: %d, in the predicted order: %d\n",
           within, plans, resolved, agree
    # The fastest plan each way.
    bp = 1; bm = 1
    for (i = 2; i <= k; i++) { if (pp[i] < pp[bp]) bp = i; if (mm[i] < mm[bm]) bm = i }
    printf "fastest predicted: %s; fastest measured: %s\n", nn[bp], nn[bm]
  }' "$work/results.tsv"
