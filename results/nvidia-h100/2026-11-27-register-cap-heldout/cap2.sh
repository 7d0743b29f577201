#!/usr/bin/env bash
# rerun on81q8 (its files did not come back: 8 files a call), then seed 83 at q_len 1, rule then none; one tar
set -u
unset DECODE_BENCH_ENV_TILELANG
: "${DECODE_BENCH_COMMIT:?the commit measured (git rev-parse on the device reads a stale copy of .git)}"; export DECODE_BENCH_COMMIT
W=$OUT/w; mkdir -p $W
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $W/env.txt
RUNS="on81q8|200|--workloads heldout:81 --q-len 8 --backends gluon,triton;
on83|260|--workloads heldout:83 --backends gluon,triton;
off83|150|--workloads heldout:83 --backends gluon,triton --config {\"min_blocks\":0}" W=$W bash scripts/gpu_pipeline.sh
cd $OUT && tar czf runs.tgz w && rm -rf w
