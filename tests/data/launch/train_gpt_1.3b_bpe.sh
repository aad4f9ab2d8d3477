#!/bin/bash
# A GPT-3 XL (1.3B) pre-training script in the shape most GPT scripts for Megatron-LM take: GPT-2's BPE
# tokenizer files (no --vocab-size: the vocabulary is the files'), and both attention switches, the
# older --use-flash-attn kept beside --attention-backend. Two nodes of eight GPUs.
export CUDA_DEVICE_MAX_CONNECTIONS=1

GPUS_PER_NODE=8
NNODES=${NNODES:-2}
NODE_RANK=${NODE_RANK:-0}
MASTER_ADDR=${MASTER_ADDR:-localhost}
MASTER_PORT=6000

CHECKPOINT_PATH=/checkpoints/gpt-1.3b
DATA_PATH=/data/openwebtext/owt_text_document
VOCAB_FILE=/data/gpt2-vocab.json
MERGE_FILE=/data/gpt2-merges.txt

DISTRIBUTED_ARGS="--nproc_per_node $GPUS_PER_NODE --nnodes $NNODES --node_rank $NODE_RANK \
  --master_addr $MASTER_ADDR --master_port $MASTER_PORT"

GPT_ARGS="
    --num-layers 24 \
    --hidden-size 2048 \
    --num-attention-heads 16 \
    --seq-length 2048 \
    --max-position-embeddings 2048 \
    --attention-backend fused \
    --use-flash-attn \
    --tensor-model-parallel-size 2 \
    --pipeline-model-parallel-size 1 \
    --sequence-parallel \
    --micro-batch-size 4 \
    --global-batch-size 512 \
    --lr 2.0e-4 \
    --min-lr 2.0e-5 \
    --lr-decay-style cosine \
    --lr-warmup-fraction 0.01 \
    --train-iters 300000 \
    --weight-decay 0.1 \
    --clip-grad 1.0 \
    --bf16 \
    --use-distributed-optimizer \
    --overlap-grad-reduce
"

DATA_ARGS="
    --data-path $DATA_PATH \
    --tokenizer-type GPT2BPETokenizer \
    --vocab-file $VOCAB_FILE \
    --merge-file $MERGE_FILE \
    --split 949,50,1
"

OUTPUT_ARGS="
    --log-interval 100 \
    --save-interval 10000 \
    --eval-interval 1000 \
    --eval-iters 10
"

torchrun $DISTRIBUTED_ARGS pretrain_gpt.py \
    $GPT_ARGS \
    $DATA_ARGS \
    $OUTPUT_ARGS \
    --save $CHECKPOINT_PATH \
    --load $CHECKPOINT_PATH
