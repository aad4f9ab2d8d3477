#!/usr/bin/env bash
# The main job: set up (packages, build), then a what-if on the default cluster and model.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tools/deps.sh"
"$repo/tools/build.sh"
mpsim="$repo/build/cli/mpsim"
inputs=(--topology "$repo/topologies/4x-p4d.yaml" --model "$repo/configs/models/gpt3-13b.yaml"
        --plan "$repo/configs/plans/gpt3-13b-4x-p4d.yaml")
echo "== The plan, predicted (trace: build/gpt3-13b-4x-p4d.trace.json, open it in Perfetto)"
"$mpsim" simulate "${inputs[@]}" --trace "$repo/build/gpt3-13b-4x-p4d.trace.json"
echo
echo "== What if the step used fewer or more microbatches?"
"$mpsim" simulate "${inputs[@]}" --sweep plan.microbatches=32,64,128,256
echo
echo "== What if the schedule changed?"
"$mpsim" simulate "${inputs[@]}" --sweep plan.schedule=gpipe,1f1b,zb-h1,zb-h2
echo
echo "== What if the EFA network were 4x slower (25 Gb/s per NIC)?"
"$mpsim" simulate "${inputs[@]}" --set topology.node.nics.bandwidth="25 Gb/s"
