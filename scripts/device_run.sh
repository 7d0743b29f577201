#!/usr/bin/env bash
# One GPU run over several device calls on one warm machine (a call is at most 600 s; the machine
# and what was written outside $OUT stay while calls follow each other). Phases, one per call:
#   copy DIR          a folder of wheel pieces (scripts/repack_wheels.sh) onto the machine
#   install DIR       source DIR/install.sh (the last folder; TARGET=... installs elsewhere)
#   start PIPELINE [SECONDS]  run PIPELINE (a bash script; $W is its folder) in the background,
#                     detached, wait for it up to SECONDS (default 520), then pack $W
#   wait [SECONDS]    wait for it (default 540 s), then pack $W
# Every call packs $W into $OUT/run.tar.xz: a machine given back between calls (idle 30 s) takes
# its disk with it, so what a call has seen comes back with it.
# Every phase prints the machine's boot id first: a different one from the last call's means a
# fresh machine (the wheels copied before are gone: start over); `wait` on a machine where no
# pipeline started exits 3. Every phase prints the pipeline log's tail. The vendor wheels go to
# /tmp/site, TileLang's to /tmp/site-tilelang (its pins conflict: its own environment,
# DECODE_BENCH_ENV_TILELANG).
#   OUT=<dir> bash scripts/device_run.sh PHASE [ARG]
# results/ (about 50 MB) leaves a 56 MiB wheel folder no room in one call's 64 MiB: `bash
# scripts/light_tree.sh on` before the calls (and `off` before any commit) lets each travel whole.
# The rows' commit: pass DECODE_BENCH_COMMIT=<hash> written out by the caller; `git rev-parse`
# run on the device reads the copy's .git, which can be older than the working tree it carries.
set -uo pipefail
W=/root/run
mkdir -p "$W"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=.:/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages
export DECODE_BENCH_ENV_TILELANG=/tmp/site-tilelang
MAX_WAIT=550  # a call runs 600 s at most: what this script did, the pack and the transfer back too
wait_pipeline() {  # until the pipeline ends or $1 seconds pass, and no later than MAX_WAIT s
  local end=$((SECONDS + $1))  # (SECONDS counts from this script's start)
  if [ "$end" -gt "$MAX_WAIT" ]; then
    echo "waiting until $MAX_WAIT s into the call, not $end: later leaves no time to pack (results lost)"
    end=$MAX_WAIT
  fi
  while [ -e "$W/running" ] && [ $SECONDS -lt $end ]; do sleep 5; done
  tail -c 2000 "$W/pipeline.log" 2>/dev/null; echo
  if [ -e "$W/running" ]; then echo "still running"; else echo "pipeline ended"; fi
}
pack() { tar -C "$W" -cJf "$OUT/run.tar.xz" --exclude='*.png' . ; }
# which machine this is: a machine given back between calls (idle, or taken back) is replaced by
# a fresh one without a word, and a pipeline started on the old one is gone with it
echo "machine $(cut -c1-8 /proc/sys/kernel/random/boot_id), up $(cut -d' ' -f1 /proc/uptime) s"
case "${1:-}" in
copy) mkdir -p /root/wh && cp "$2"/* /root/wh/ && ls /root/wh | wc -l ;;
install) source "$2/install.sh" && rm -rf /root/wh && echo "installed into ${TARGET:-/tmp/site}" ;;
start)
  rm -rf "${W:?}"/*; touch "$W/running"
  { nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
    python3 -c "import torch, triton; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version(), 'triton', triton.__version__)"
    # the versions the rows' provenance records (FA3 unpacked from vLLM's wheel included)
    ( [ -d "$DECODE_BENCH_ENV_TILELANG" ] || unset DECODE_BENCH_ENV_TILELANG
      python3 -c "from harness import provenance
for name, version in provenance.packages().items(): print(name, version)" )
    echo "commit ${DECODE_BENCH_COMMIT:-unset}"; } > "$W/env.txt" 2>&1
  cat "$W/env.txt"
  W=$W setsid bash -c "bash '$2'; rm -f '$W/running'" < /dev/null > "$W/pipeline.log" 2>&1 &
  wait_pipeline "${3:-520}"; pack ;;
wait)
  if [ ! -e "$W/env.txt" ]; then  # no start ran here
    echo "no pipeline on this machine: a fresh one (the machine that ran it was given back)" >&2
    exit 3
  fi
  wait_pipeline "${2:-540}"; pack ;;
*) echo "phase: copy DIR | install DIR | start PIPELINE | wait [SECONDS]" >&2; exit 2 ;;
esac
