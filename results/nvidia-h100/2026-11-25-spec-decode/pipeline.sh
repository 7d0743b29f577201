#!/usr/bin/env bash
# Issue 34's run on one GPU (started by scripts/device_run.sh start THIS; $W: its folder):
#   1. the conformance suite on the backends given in CONFORMANCE (default: every one that takes
#      a window, a cap or a multi-token query), the properties in PROPS (default: those whose
#      draws and checks are about the new axes: 1 against the oracle, 9 q_len = n equals n
#      single-token calls on the prefixes, 10 a window equals no window over the last tokens, 11 a
#      far cap equals none), each backend to CONF_S seconds (NAME:SECONDS: its own limit); -v, so
#      a backend cut by its limit still lists the tests it passed
#   2. CuPy's two split-K merges against the reference, launch after launch (drafts included)
#   3. the 'spec-decode' workload (q_len 1, 2, 4, 8) and the 'window' workload (a 4096 window on
#      32k-128k, Gemma-2's cap of 50) on every backend installed here; each run under its own
#      time limit (SIGINT: tables written, the run marked incomplete)
#   4. Nsight Compute on the cells named in NCU (impl:model:batch:seq:layout:q_len, space-separated)
set -u
cd "$(dirname "$0")/../../.."
run() {  # name, seconds, harness options
  local name=$1 limit=$2; shift 2
  local start=$SECONDS
  timeout -s INT "$limit" python3 -m harness run "$@" --timing cold --no-tuning-cache --out "$W/$name" > "$W/$name.log" 2>&1
  echo "$name rc $? in $((SECONDS - start)) s"; tail -2 "$W/$name.log"
}
PROPS=${PROPS:-matches_reference or query_tokens or window_is_last_tokens or far_cap_is_none}
for entry in ${CONFORMANCE-triton gluon cupy flashinfer flash_attn3 flash_attn4}; do  # NAME or NAME:SECONDS
  b=${entry%%:*}; limit=${CONF_S:-150}; [ "$entry" != "$b" ] && limit=${entry#*:}
  start=$SECONDS
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-6} timeout "$limit" python3 -m pytest conformance -v \
    -p no:cacheprovider -k "$b and ($PROPS)" -W ignore::DeprecationWarning > "$W/conformance-$b.log" 2>&1
  echo "conformance $b rc $? in $((SECONDS - start)) s: $(grep -c PASSED "$W/conformance-$b.log") passed, $(grep -c FAILED "$W/conformance-$b.log") failed"
done
if [ -n "${MERGES-1}" ]; then
  timeout 200 python3 -m pytest tests/test_split_merges.py -q -p no:cacheprovider -k cupy > "$W/split-merges.log" 2>&1
  echo "split merges rc $?"; tail -1 "$W/split-merges.log"
fi
VENDORS=${VENDORS:-flashinfer,flash_attn3,flash_attn4}
[ "${SPEC_S:-480}" != 0 ] && run spec ${SPEC_S:-480} --workloads spec-decode --backends ${DSLS:-triton,gluon,cupy},$VENDORS
[ "${WINDOW_S:-360}" != 0 ] && run window ${WINDOW_S:-360} --workloads window --backends ${DSLS:-triton,gluon,cupy},$VENDORS
[ -n "${OTHERS-numba,helion}" ] && run others 200 --workloads spec-decode,window --quick --backends ${OTHERS-numba,helion}
for cell in ${NCU-}; do  # impl:model:batch:seq:layout:q_len
  IFS=: read -r impl model batch seq layout qlen <<< "$cell"
  problem=$(python3 -c "import json; from specs import workloads as w
print(json.dumps(w.model_problem('$model', [$seq] * $batch, '$layout').replace(q_len=$qlen).to_dict()))")
  timeout 240 python3 -m harness profile "$impl" --problem "$problem" --ncu \
    > "$W/ncu-${impl//\//-}-$model-b$batch-q$qlen-$layout.txt" 2>&1
  echo "ncu $cell rc $?"
done
echo "pipeline done"
