#!/usr/bin/env bash
# Session 63, call B: where does sharing an SM stop paying? One-pass dense, 160 x 8 programs of
# n tokens (GQA 4, bf16; 9.7 waves of one program an SM), the rule's config against the shared
# one (Triton: the tile a 4-way share fits; CuPy: 2-warp x 2-stage CTAs), then the rule's again.
set -u
cd "$(dirname "$0")/.."
lane() {  # gpu backend dims shared-config
  local f="--workload-file gpu-session/sw$3.json --variants dense"
  ( export CUDA_VISIBLE_DEVICES=$1
    RUNS="rule|110|$f --backends $2$([ $2 = triton ] && echo ,gluon); shared|90|$f --backends $2 --config $4; again|90|$f --backends $2" \
      W=$W/$2-d$3 bash scripts/gpu_pipeline.sh ) > "$W/lane-$2-d$3.log" 2>&1
}
lane 0 triton 128 '{"block_n":32}' &
lane 1 triton 224 '{"block_n":16}' &
lane 2 cupy 128 '{"num_warps":2,"num_stages":2}' &
lane 3 cupy 224 '{"num_warps":2,"num_stages":2}' &
wait
python3 - "$W" <<'PY'
import json, glob, sys, os
for d in sorted(glob.glob(sys.argv[1] + "/*-d*/")):
    t = {}
    for run in ("rule", "shared", "again"):
        f = d + run + "/rows.jsonl"
        if not os.path.exists(f): continue
        for r in map(json.loads, open(f)):
            if r["status"] == "PASS": t.setdefault(r["problem"].split(" b")[0] + " " + r["backend"], {})[run] = r["median_us"]
    for k, v in t.items(): print(os.path.basename(d.rstrip("/")), k, v)
PY
echo "s63b done"
