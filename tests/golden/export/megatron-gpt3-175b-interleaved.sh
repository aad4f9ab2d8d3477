#!/bin/bash
# Megatron-LM launch of gpt3-175b (megatron-175b-interleaved.yaml), written by `mpsim plan export --to megatron`.
# TP 8 x CP 1 x PP 8 x DP 2 = 128 GPUs on 16 node(s) of 8; 256 microbatches of 1 per step.
# Run it on every node with NODE_RANK and MASTER_ADDR set; the data, tokenizer, optimizer and
# checkpoint arguments follow it on the command line ("$@").
set -euo pipefail

export CUDA_DEVICE_MAX_CONNECTIONS=1
# The predicted peak is of tensors: expandable segments keep the allocator's fragmentation from
# failing a plan that fits (Megatron-Bridge's memory tuning); a setting made before this stands.
export PYTORCH_CUDA_ALLOC_CONF=${PYTORCH_CUDA_ALLOC_CONF:-expandable_segments:True}
GPUS_PER_NODE=8
NUM_NODES=16

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --node_rank ${NODE_RANK:-0}
    --master_addr ${MASTER_ADDR:-localhost}
    --master_port ${MASTER_PORT:-6000}
)

MODEL_ARGS=(
    --num-layers 96
    --hidden-size 12288
    --ffn-hidden-size 49152
    --num-attention-heads 96
    --seq-length 2048
    --max-position-embeddings 2048
    --position-embedding-type learned_absolute
    --normalization LayerNorm
    --norm-epsilon 1.0e-05
    --vocab-size 51200
    --make-vocab-size-divisible-by 1
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size 8
    --pipeline-model-parallel-size 8
    --num-layers-per-virtual-pipeline-stage 6
)

BATCH_ARGS=(
    --micro-batch-size 1
    --global-batch-size 512
)

TRAINING_ARGS=(
    --bf16
    --recompute-granularity full
    --recompute-method uniform
    --recompute-num-layers 1
    --use-distributed-optimizer
)

torchrun "${DISTRIBUTED_ARGS[@]}" pretrain_gpt.py \
    "${MODEL_ARGS[@]}" \
    "${MODEL_PARALLEL_ARGS[@]}" \
    "${BATCH_ARGS[@]}" \
    "${TRAINING_ARGS[@]}" \
    "$@"
