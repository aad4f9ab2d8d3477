#!/usr/bin/env bash
# Writes configs/profiles/: one software profile (`mpsim calibrate`, docs/calibration.md) per release,
# GPU kind and group (dense, mixture of experts, context parallel) of the published runs in
# tests/validation, each fitted on every row of that cell (the rows named below; the cells are those of
# docs/validation.md "Calibrated (leave-one-out)", which measures how a profile fitted on part of a
# cell predicts the rest). Cells of one row are left out: one row fits its own step and says nothing
# of the next. With a directory argument, writes there instead (the profiles_current test compares it
# with configs/profiles). Each line: the profile's name, its runs files, the ids of the rows it fits.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${MPSIM_BUILD_DIR:-$repo/build}
target=${1:-$repo/configs/profiles}
mkdir -p "$target"
runs=$repo/tests/validation
while read -r name files ids; do
  [[ -z "$name" || "$name" == \#* ]] && continue
  IFS=, read -r -a paths <<<"$files"
  "$build/cli/mpsim" calibrate "${paths[@]/#/$runs/}" --only "$ids" -o "$target/$name.yaml" >/dev/null
done <<'CELLS'
nemo2407-h100-sxm-dense published_runs.yaml nemo2407-gpt3-5b-64gpu-h100-fp8,nemo2407-gpt3-20b-64gpu-h100-fp8,nemo2407-gpt3-175b-128gpu-h100-fp8,nemo2407-gpt3-175b-512gpu-h100-fp8,nemo2407-llama2-7b-8gpu-h100-fp8,nemo2407-llama2-13b-16gpu-h100-fp8,nemo2407-llama2-70b-64gpu-h100-fp8,nemo2407-nemotron-8b-64gpu-h100-fp8,nemo2407-nemotron-22b-64gpu-h100-fp8,nemo2407-nemotron-340b-128gpu-h100-fp8
nemo-longseq-h100-sxm-dense context_runs.yaml,published_runs.yaml nemo-longseq-llama2_7b-8k-h100-cp1,nemo-longseq-llama2_7b-16k-h100-cp1,nemo-longseq-llama2_7b-4k-h100-cp1
mbridge-25.09-gb200-dense published_runs.yaml mbridge-25.09-llama3_8b-dgx-gb200-8gpu-fp8,mbridge-25.09-llama3_8b-dgx-gb200-8gpu-mxfp8,mbridge-25.09-llama31_405b-dgx-gb200-128gpu-fp8,mbridge-25.09-llama3_70b-dgx-gb200-64gpu-fp8,mbridge-25.09-llama3_70b-dgx-gb200-64gpu-mxfp8
mbridge-25.09-b200-dense published_runs.yaml mbridge-25.09-llama3_8b-dgx-b200-8gpu-fp8,mbridge-25.09-llama3_8b-dgx-b200-8gpu-mxfp8
mbridge-25.09-h100-sxm-dense published_runs.yaml mbridge-25.09-llama3_8b-dgx-h100-8gpu-fp8,mbridge-25.09-llama3_70b-dgx-h100-64gpu-fp8
mbridge-25.11-gb300-dense published_runs.yaml mbridge-25.11-llama3_8b-dgx-gb300-8gpu-fp8,mbridge-25.11-llama3_8b-dgx-gb300-8gpu-mxfp8,mbridge-25.11-llama3_70b-dgx-gb300-64gpu-fp8
mbridge-25.11-gb200-dense published_runs.yaml mbridge-25.11-llama3_8b-dgx-gb200-8gpu-fp8,mbridge-25.11-llama3_8b-dgx-gb200-8gpu-mxfp8,mbridge-25.11-llama31_405b-dgx-gb200-256gpu-fp8,mbridge-25.11-llama3_70b-dgx-gb200-64gpu-fp8
mbridge-25.11-b200-dense published_runs.yaml mbridge-25.11-llama3_8b-dgx-b200-8gpu-fp8,mbridge-25.11-llama3_8b-dgx-b200-8gpu-mxfp8
mbridge-25.11-h100-sxm-dense published_runs.yaml mbridge-25.11-llama3_8b-dgx-h100-8gpu-fp8,mbridge-25.11-llama3_70b-dgx-h100-64gpu-fp8
mbridge-26.04.01-gb300-dense published_runs.yaml mbridge-26.04.01-llama3_70b-dgx-gb300-64gpu-fp8,mbridge-26.04.01-llama3_70b-dgx-gb300-64gpu-mxfp8,mbridge-26.04.01-llama31_405b-dgx-gb300-256gpu-fp8
mbridge-26.04.01-gb200-dense published_runs.yaml mbridge-26.04.01-llama3_70b-dgx-gb200-64gpu-fp8,mbridge-26.04.01-llama3_70b-dgx-gb200-64gpu-mxfp8,mbridge-26.04.01-llama31_405b-dgx-gb200-256gpu-fp8,mbridge-26.04.01-llama31_405b-dgx-gb200-256gpu-mxfp8
megatronlm-h100-sxm-dense published_runs.yaml megatronlm-weak-1.7b-h100-48gpu,megatronlm-weak-7.1b-h100-96gpu,megatronlm-weak-16b-h100-192gpu,megatronlm-weak-32b-h100-384gpu,megatronlm-weak-70b-h100-768gpu,megatronlm-weak-119b-h100-1536gpu,megatronlm-weak-177b-h100-2304gpu,megatronlm-strong-gpt3-177b-h100-96gpu,megatronlm-strong-gpt3-177b-h100-4608gpu,megatronlm-weak-314b-h100-3072gpu,megatronlm-weak-462b-h100-6144gpu
mbridge-25.09-gb200-moe moe_runs.yaml mbridge-25.09-qwen3_30b_a3b-dgx-gb200-8gpu-fp8,mbridge-25.09-qwen3_30b_a3b-dgx-gb200-8gpu-mxfp8,mbridge-25.09-qwen3_235b_a22b-dgx-gb200-64gpu-fp8,mbridge-25.09-qwen3_235b_a22b-dgx-gb200-64gpu-mxfp8,mbridge-25.09-deepseekv3-dgx-gb200-256gpu-fp8,mbridge-25.09-deepseekv3-dgx-gb200-256gpu-mxfp8
mbridge-25.09-b200-moe moe_runs.yaml mbridge-25.09-qwen3_30b_a3b-dgx-b200-8gpu-fp8,mbridge-25.09-qwen3_235b_a22b-dgx-b200-64gpu-fp8,mbridge-25.09-qwen3_235b_a22b-dgx-b200-64gpu-mxfp8,mbridge-25.09-deepseekv3-dgx-b200-256gpu-fp8,mbridge-25.09-deepseekv3-dgx-b200-256gpu-mxfp8
mbridge-25.09-h100-sxm-moe moe_runs.yaml mbridge-25.09-qwen3_30b_a3b-dgx-h100-16gpu-fp8,mbridge-25.09-qwen3_235b_a22b-dgx-h100-256gpu-fp8,mbridge-25.09-deepseekv3-dgx-h100-1024gpu-fp8,mbridge-25.09-deepseekv3-dgx-h100-1024gpu-fp8-blockwise
mbridge-25.11-gb300-moe moe_runs.yaml mbridge-25.11-gptoss120b-dgx-gb300-64gpu-bf16,mbridge-25.11-qwen3_30b_a3b-dgx-gb300-8gpu-mxfp8,mbridge-25.11-qwen3_235b_a22b-dgx-gb300-256gpu-bf16,mbridge-25.11-deepseekv3-dgx-gb300-256gpu-bf16,mbridge-25.11-deepseekv3-dgx-gb300-256gpu-mxfp8
mbridge-25.11-gb200-moe moe_runs.yaml mbridge-25.11-deepseekv3-dgx-gb200-256gpu-bf16,mbridge-25.11-gptoss120b-dgx-gb200-64gpu-bf16,mbridge-25.11-qwen3_30b_a3b-dgx-gb200-8gpu-mxfp8,mbridge-25.11-qwen3_235b_a22b-dgx-gb200-256gpu-bf16,mbridge-25.11-deepseekv3-dgx-gb200-256gpu-mxfp8
mbridge-25.11-b200-moe moe_runs.yaml mbridge-25.11-gptoss120b-dgx-b200-64gpu-bf16,mbridge-25.11-qwen3_30b_a3b-dgx-b200-8gpu-mxfp8,mbridge-25.11-qwen3_235b_a22b-dgx-b200-64gpu-mxfp8,mbridge-25.11-deepseekv3-dgx-b200-256gpu-mxfp8
mbridge-25.11-h100-sxm-moe moe_runs.yaml mbridge-25.11-gptoss120b-dgx-h100-64gpu-bf16,mbridge-25.11-qwen3_30b_a3b-dgx-h100-16gpu-fp8,mbridge-25.11-qwen3_235b_a22b-dgx-h100-256gpu-fp8
mbridge-26.04.01-gb300-moe moe_runs.yaml mbridge-26.04.01-gptoss120b-dgx-gb300-64gpu-bf16,mbridge-26.04.01-qwen3_30b_a3b-dgx-gb300-8gpu-mxfp8,mbridge-26.04.01-qwen3_235b_a22b-dgx-gb300-256gpu-mxfp8,mbridge-26.04.01-deepseekv3-dgx-gb300-256gpu-mxfp8,mbridge-26.04.01-kimi_k2-dgx-gb300-256gpu-mxfp8
mbridge-26.04.01-gb200-moe moe_runs.yaml mbridge-26.04.01-gptoss120b-dgx-gb200-64gpu-bf16,mbridge-26.04.01-qwen3_30b_a3b-dgx-gb200-8gpu-mxfp8,mbridge-26.04.01-qwen3_235b_a22b-dgx-gb200-256gpu-mxfp8,mbridge-26.04.01-deepseekv3-dgx-gb200-256gpu-mxfp8
mbridge-26.04.01-b300-moe moe_runs.yaml mbridge-26.04.01-gptoss120b-dgx-b300-64gpu-bf16,mbridge-26.04.01-qwen3_30b_a3b-dgx-b300-8gpu-mxfp8,mbridge-26.04.01-qwen3_235b_a22b-dgx-b300-256gpu-mxfp8,mbridge-26.04.01-deepseekv3-dgx-b300-256gpu-mxfp8
mbridge-26.04.01-b200-moe moe_runs.yaml mbridge-26.04.01-gptoss120b-dgx-b200-64gpu-bf16,mbridge-26.04.01-qwen3_30b_a3b-dgx-b200-8gpu-mxfp8,mbridge-26.04.01-qwen3_235b_a22b-dgx-b200-256gpu-mxfp8,mbridge-26.04.01-deepseekv3-dgx-b200-256gpu-mxfp8
mbridge-26.04.01-h100-sxm-moe moe_runs.yaml mbridge-26.04.01-gptoss120b-dgx-h100-64gpu-bf16,mbridge-26.04.01-qwen3_30b_a3b-dgx-h100-16gpu-fp8,mbridge-26.04.01-qwen3_235b_a22b-dgx-h100-256gpu-fp8
mbridge-26.08-gb300-moe moe_runs.yaml mbridge-26.08-gptoss120b-dgx-gb300-64gpu-mxfp8,mbridge-26.08-qwen3_30b_a3b-dgx-gb300-8gpu-mxfp8,mbridge-26.08-qwen3_235b_a22b-dgx-gb300-256gpu-mxfp8,mbridge-26.08-deepseekv3-dgx-gb300-256gpu-mxfp8
mbridge-26.08-gb200-moe moe_runs.yaml mbridge-26.08-gptoss120b-dgx-gb200-64gpu-mxfp8,mbridge-26.08-qwen3_30b_a3b-dgx-gb200-8gpu-mxfp8,mbridge-26.08-qwen3_235b_a22b-dgx-gb200-256gpu-mxfp8,mbridge-26.08-deepseekv3-dgx-gb200-256gpu-mxfp8
nemo2407-h100-sxm-cp context_runs.yaml nemo2407-llama3-8b-8gpu-h100-fp8,nemo2407-llama3-70b-64gpu-h100-fp8
nemo-longseq-b200-dense context_runs.yaml nemo-longseq-llama3_8b-8k-b200-cp1,nemo-longseq-llama3_8b-16k-b200-cp1
nemo-longseq-b200-cp context_runs.yaml nemo-longseq-llama3_8b-32k-b200-cp2,nemo-longseq-llama3_8b-64k-b200-cp4,nemo-longseq-llama3_8b-128k-b200-cp4,nemo-longseq-llama3_8b-256k-b200-cp4,nemo-longseq-llama3_8b-512k-b200-cp8,nemo-longseq-llama3_8b-1024k-b200-cp16
nemo-longseq-h100-sxm-cp context_runs.yaml nemo-longseq-llama2_7b-32k-h100-cp2,nemo-longseq-llama2_7b-64k-h100-cp2,nemo-longseq-llama2_7b-128k-h100-cp4,nemo-longseq-llama2_7b-256k-h100-cp8,nemo-longseq-llama2_7b-512k-h100-cp16,nemo-longseq-llama2_7b-1024k-h100-cp32
mbridge-25.09-b200-cp context_runs.yaml mbridge-25.09-llama31_405b-dgx-b200-128gpu-fp8,mbridge-25.09-llama31_405b-dgx-b200-128gpu-mxfp8
mbridge-25.11-b200-cp context_runs.yaml mbridge-25.11-llama31_405b-dgx-b200-128gpu-fp8,mbridge-25.11-llama31_405b-dgx-b200-128gpu-mxfp8
CELLS
