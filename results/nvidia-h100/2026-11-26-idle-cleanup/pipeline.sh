# the idle worker's clean-up: 3b74646 (gc.collect + empty_cache after every batch) against cb4f663
set -u
unset DECODE_BENCH_ENV_TILELANG
S="--workloads grid,ragged --fresh-caches --backends triton,numba,cupy,torch-fa2"
RUNS="batches|280|$S" W=$W bash scripts/gpu_ab.sh run
for r in old new; do python3 -c "
import json; d=json.load(open('$W/$r/batches/results.json')); p=d['provenance']; print('$r', p.get('wall_s'), p.get('complete'), len(d['rows']))"; done
