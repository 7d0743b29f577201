#!/usr/bin/env bash
# One GPU run of several steps, each under its own time limit, logs and result folders in $W
# (default $OUT; scripts/device_run.sh start runs it detached with W set). Steps, all optional:
#   CONFORMANCE="triton gluon:120 ..."  the conformance suite per backend (NAME or NAME:SECONDS,
#        CONF_S the default limit), pytest -k PROPS within it (default: every property),
#        EXAMPLES draws a property (default 6); -v, so a backend cut by its limit lists what passed
#   RUNS="name|seconds|harness run options; ..."  harness runs, each to its time limit (SIGINT:
#        tables written, the run marked incomplete), --timing cold --no-tuning-cache unless the
#        options name a --timing
#   NCU="impl:model:batch:seq_len:layout:q_len ..."  Nsight Compute on those cells
#        (python -m harness profile --ncu); "impl:heldout:SEED:INDEX" names a held-out problem
#        (specs.workloads.heldout_problems(SEED)[INDEX]), "impl:heldout:SEED:INDEX:CONFIG" with a
#        launch config as JSON in the vocabulary (no spaces), e.g. '{"block_n":32}'; NCU_Q_LEN=N
#        gives the held-out ones N query tokens a sequence (the drafts of --q-len N)
#        NCU_SECTIONS="A,B,..." ncu's sections instead of harness profile's default set (e.g. with
#        ComputeWorkloadAnalysis,InstructionStats,SchedulerStats for a kernel bound by issue);
#        NCU_METRICS="m1,m2" raw metrics beside them (e.g. dram__bytes_read.sum,dram__bytes_write.sum)
# PY: the Python to run (default python3).
# e.g.  RUNS="spec|480|--workloads spec-decode --backends triton,gluon,cupy" W=runs/x bash scripts/gpu_pipeline.sh
set -u
cd "$(dirname "$0")/.."
W=${W:-${OUT:?set W or OUT: the folder for logs and results}}
mkdir -p "$W"
for entry in ${CONFORMANCE-}; do
  b=${entry%%:*}; limit=${CONF_S:-150}; [ "$entry" != "$b" ] && limit=${entry#*:}
  k="$b${PROPS:+ and ($PROPS)}"
  start=$SECONDS
  DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=${EXAMPLES:-6} timeout "$limit" "${PY:-python3}" -m pytest conformance -v \
    -p no:cacheprovider -k "$k" -W ignore::DeprecationWarning > "$W/conformance-$b.log" 2>&1
  echo "conformance $b rc $? in $((SECONDS - start)) s: $(grep -c PASSED "$W/conformance-$b.log") passed," \
       "$(grep -c FAILED "$W/conformance-$b.log") failed"
done
runs_text=${RUNS-}
IFS=';' read -ra runs <<< "${runs_text//$'\n'/ }"  # RUNS may span lines
for entry in "${runs[@]}"; do
  [ -n "${entry// }" ] || continue
  IFS='|' read -r name limit options <<< "$entry"
  name=${name// }; start=$SECONDS
  case "$options" in *--timing*|*--no-timing*) timing=() ;; *) timing=(--timing cold --no-tuning-cache) ;; esac
  # shellcheck disable=SC2086  # the options are words
  timeout -s INT "$limit" "${PY:-python3}" -m harness run $options "${timing[@]}" --out "$W/$name" > "$W/$name.log" 2>&1
  echo "$name rc $? in $((SECONDS - start)) s"; tail -2 "$W/$name.log"
done
for cell in ${NCU-}; do
  IFS=: read -r impl model batch seq layout qlen <<< "$cell"
  config=()
  if [ "$model" = heldout ]; then  # impl:heldout:SEED:INDEX[:CONFIG]
    problem=$("${PY:-python3}" -c "import json; from specs import workloads as w
print(json.dumps(w.with_q_len([w.heldout_problems($batch)[$seq]], ${NCU_Q_LEN:-None})[0].to_dict()))")
    given=${cell#*:heldout:"$batch":"$seq"}; given=${given#:}
    [ -n "$given" ] && config=(--config "$given")
    name="ncu-${impl//\//-}-heldout$batch.$seq${NCU_Q_LEN:+-q$NCU_Q_LEN}${given:+-$(printf %s "$given" | tr -c 'a-z0-9' _)}.txt"
  else
    problem=$("${PY:-python3}" -c "import json; from specs import workloads as w
print(json.dumps(w.model_problem('$model', [$seq] * $batch, '$layout').replace(q_len=${qlen:-1}).to_dict()))")
    name="ncu-${impl//\//-}-$model-b$batch-q${qlen:-1}-$layout.txt"
  fi
  sections=(); [ -n "${NCU_SECTIONS-}" ] && sections=(--sections "$NCU_SECTIONS")
  [ -n "${NCU_METRICS-}" ] && sections+=(--metrics "$NCU_METRICS")
  timeout 240 "${PY:-python3}" -m harness profile "$impl" --problem "$problem" "${config[@]}" "${sections[@]}" --ncu \
    > "$W/$name" 2>&1
  echo "ncu $cell rc $?"
done
echo "pipeline done"
