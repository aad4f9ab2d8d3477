#!/usr/bin/env bash
# The main job: set up (packages, build), then plan GPT-3 13B on four p4d.24xlarge, simulate the best
# plan with a trace, and ask what-if questions about it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tools/deps.sh"
"$repo/tools/build.sh"
mpsim="$repo/build/cli/mpsim"
best="$repo/build/gpt3-13b-4x-p4d.best.yaml"
trace="$repo/build/gpt3-13b-4x-p4d.trace.json"
echo "== How should GPT-3 13B be split over 4x p4d.24xlarge (32x A100 40GB, global batch 256)?"
# The defaults of `mpsim plan` are this job's topology, model and batch.
"$mpsim" plan --explain -o "$best"
echo
inputs=(--topology "$repo/topologies/4x-p4d.yaml" --model "$repo/configs/models/gpt3-13b.yaml" --plan "$best")
echo "== The best plan, predicted (plan: build/$(basename "$best"); trace: build/$(basename "$trace"), open it in Perfetto or mpsim-view)"
"$mpsim" simulate "${inputs[@]}" --trace "$trace"
echo
echo "== What if the step used other micro batch sizes?"
"$mpsim" simulate "${inputs[@]}" --sweep plan.batch.micro=1,2,4
echo
echo "== What if the schedule changed?"
"$mpsim" simulate "${inputs[@]}" --sweep plan.schedule=gpipe,1f1b,zb-h1,zb-h2
echo
echo "== What if the EFA network were 4x slower (25 Gb/s per NIC)? The best plan, and the best plan for that network:"
"$mpsim" simulate "${inputs[@]}" --set topology.node.nics.bandwidth="25 Gb/s"
"$mpsim" plan --set topology.node.nics.bandwidth="25 Gb/s" --top 3
