#!/usr/bin/env bash
set -u
cd "$(dirname "$0")/.."
CONFORMANCE="triton:200" W=$W/conformance bash scripts/gpu_pipeline.sh > "$W/conformance.log" 2>&1
tail -n 5 "$W/conformance.log"; echo "conf done"
