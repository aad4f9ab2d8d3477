#!/usr/bin/env bash
# The main job: set up (packages, build), then a what-if on the default cluster and model.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
"$repo/tools/deps.sh"
"$repo/tools/build.sh"
mpsim="$repo/build/cli/mpsim"
topology="$repo/topologies/4x-p4d.yaml"
model="$repo/configs/models/gpt3-13b.yaml"
plan="$repo/configs/plans/gpt3-13b-4x-p4d.yaml"
echo "== cluster: $topology"
"$mpsim" topo show "$topology"
echo
echo "== model: $model"
"$mpsim" model show "$model"
echo
echo "== plan: $plan"
"$mpsim" plan check "$plan" --topology "$topology" --model "$model"
