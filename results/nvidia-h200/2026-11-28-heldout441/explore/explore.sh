#!/usr/bin/env bash
# Exploration (session 66), not a validation: CuPy's and Triton's split-K and one-pass on the 14
# problems of heldout:441 at head dim >= 192 (where both fall under 0.9x), the rule against
# rings sized for several programs an SM, each config a run, one GPU (the 2-GPU kind was
# withdrawn): CuPy's runs, then Triton's.
set -u
cd "$(dirname "$0")/.."
F="--workload-file gpu-session/large441.json"
( RUNS="c-rule|110|$F --backends cupy;
        c-w2s3|110|$F --backends cupy --config {\"num_warps\":2,\"num_stages\":3};
        c-w2s2|110|$F --backends cupy --config {\"num_warps\":2,\"num_stages\":2};
        c-w4s2|110|$F --backends cupy --config {\"num_warps\":4,\"num_stages\":2}" \
  W=$W/cupy bash scripts/gpu_pipeline.sh ) > "$W/cupy.log" 2>&1
( RUNS="t-rule|110|$F --backends triton,gluon;
        t-n16s2|110|$F --backends triton --config {\"block_n\":16,\"num_stages\":2};
        t-n32s2|110|$F --backends triton --config {\"block_n\":32,\"num_stages\":2};
        t-n64s2|110|$F --backends triton --config {\"block_n\":64,\"num_stages\":2}" \
  W=$W/triton bash scripts/gpu_pipeline.sh ) > "$W/triton.log" 2>&1
cat "$W/cupy.log" "$W/triton.log"
for d in cupy/c-w2s3 cupy/c-w2s2 cupy/c-w4s2; do python3 -m harness compare "$W/cupy/c-rule" "$W/$d" > "$W/$(basename $d).txt" 2>&1; tail -1 "$W/$(basename $d).txt"; done
for d in triton/t-n16s2 triton/t-n32s2 triton/t-n64s2; do python3 -m harness compare "$W/triton/t-rule" "$W/$d" > "$W/$(basename $d).txt" 2>&1; tail -1 "$W/$(basename $d).txt"; done
echo "explore done"
