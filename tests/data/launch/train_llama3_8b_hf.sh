#!/bin/bash
# Llama 3 8B continued pre-training with Megatron-LM, the tokenizer taken from the HuggingFace Hub
# (--tokenizer-type HuggingFaceTokenizer --tokenizer-model NAME): the script gives no vocabulary size, the
# tokenizer has it. Four nodes of eight GPUs; the sizes come from arrays, as Megatron-LM's Llama examples write.
export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NUM_NODES=4
TP=4
PP=2
TOKENIZER=meta-llama/Meta-Llama-3-8B

DISTRIBUTED_ARGS=(
    --nproc_per_node $GPUS_PER_NODE
    --nnodes $NUM_NODES
    --master_addr ${MASTER_ADDR:-localhost}
    --master_port 6000
)

MODEL_ARGS=(
    --num-layers 32
    --hidden-size 4096
    --ffn-hidden-size 14336
    --num-attention-heads 32
    --group-query-attention
    --num-query-groups 8
    --seq-length 8192
    --max-position-embeddings 8192
    --position-embedding-type rope
    --rotary-base 500000
    --normalization RMSNorm
    --swiglu
    --disable-bias-linear
    --untie-embeddings-and-output-weights
    --attention-dropout 0.0
    --hidden-dropout 0.0
)

TRAINING_ARGS=(
    --micro-batch-size 1
    --global-batch-size 128
    --train-iters 10000
    --lr 1.0e-5
    --bf16
    --use-distributed-optimizer
    --recompute-granularity selective
)

MODEL_PARALLEL_ARGS=(
    --tensor-model-parallel-size $TP
    --pipeline-model-parallel-size $PP
    --sequence-parallel
)

DATA_ARGS=(
    --data-path /data/llama3/text_document
    --tokenizer-type HuggingFaceTokenizer
    --tokenizer-model $TOKENIZER
)

torchrun ${DISTRIBUTED_ARGS[@]} pretrain_gpt.py \
    ${MODEL_ARGS[@]} \
    ${TRAINING_ARGS[@]} \
    ${MODEL_PARALLEL_ARGS[@]} \
    ${DATA_ARGS[@]}
