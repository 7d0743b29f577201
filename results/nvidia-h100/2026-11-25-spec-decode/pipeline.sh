#!/usr/bin/env bash
# Issue 34's run on one GPU (started by scripts/device_run.sh start THIS; $W: its folder):
#   1. the conformance suite on the backends given in CONFORMANCE (default: every one that takes
#      a window, a cap or a multi-token query; its draws include all three, and properties 9 and
#      10: q_len = n equals n single-token calls on the prefixes, a window equals no window over
#      the last tokens), each to CONF_S seconds (NAME:SECONDS: its own limit)
#   2. the 'spec-decode' workload (q_len 1, 2, 4, 8) and the 'window' workload (a 4096 window on
#      32k-128k, Gemma-2's cap of 50) on every backend installed here; each run under its own
#      time limit (SIGINT: tables written, the run marked incomplete)
set -u
cd "$(dirname "$0")/../../.."
run() {  # name, seconds, harness options
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout -s INT "$limit" python3 -m harness run "$@" --timing cold --no-tuning-cache --out "$W/$name" > "$W/$name.log" 2>&1
  echo "$name rc $? in $((SECONDS - start)) s"; tail -2 "$W/$name.log"
}
for entry in ${CONFORMANCE-triton gluon cupy flashinfer flash_attn3}; do  # NAME or NAME:SECONDS
  b=${entry%%:*}; limit=${CONF_S:-150}; [ "$entry" != "$b" ] && limit=${entry#*:}
  start=$SECONDS
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-6} timeout "$limit" python3 -m pytest conformance -q \
    -p no:cacheprovider -k "$b" -W ignore::DeprecationWarning > "$W/conformance-$b.log" 2>&1
  echo "conformance $b rc $? in $((SECONDS - start)) s"; tail -1 "$W/conformance-$b.log"
done
VENDORS=${VENDORS:-flashinfer,flash_attn3}
run spec ${SPEC_S:-480} --workloads spec-decode --backends triton,gluon,cupy,$VENDORS
run window ${WINDOW_S:-360} --workloads window --backends triton,gluon,cupy,$VENDORS
[ -n "${OTHERS-numba,helion}" ] && run others 200 --workloads spec-decode,window --quick --backends ${OTHERS-numba,helion}
echo "pipeline done"
