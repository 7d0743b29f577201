#!/usr/bin/env bash
# the register cap's landed rule against none, on an unseen seed: $1 = seed, $2 = q_len
set -u
unset DECODE_BENCH_ENV_TILELANG
: "${DECODE_BENCH_COMMIT:?the commit measured (git rev-parse on the device reads a stale copy of .git)}"; export DECODE_BENCH_COMMIT
S=$1; Q=$2; N=${S}q$Q
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $OUT/env.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $OUT/env.txt
RUNS="on$N|${ON_S:-330}|--workloads heldout:$S --q-len $Q --backends gluon,triton;
off$N|${OFF_S:-230}|--workloads heldout:$S --q-len $Q --backends gluon,triton --config {\"min_blocks\":0}" W=$OUT bash scripts/gpu_pipeline.sh
