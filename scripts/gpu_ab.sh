#!/usr/bin/env bash
# Old code against new on one GPU, one after the other: the A/B every rule or kernel change is
# measured by. Two steps:
#   here:    bash scripts/gpu_ab.sh old REV   the tracked files that differ from REV (impls,
#            specs, harness, scripts), as REV has them, into ab-old/ (untracked: it travels with
#            the tree to the device machine), and the ones REV lacks listed in ab-old/.absent
#   device:  RUNS="name|seconds|options; ..." W=<folder> bash scripts/gpu_ab.sh run
#            a copy of the tree with ab-old/ laid over it runs RUNS (scripts/gpu_pipeline.sh) into
#            W/old, then this tree into W/new, then `harness compare` per run: W/compare-NAME.txt;
#            ORDERS=2 runs a second pair the other way round (W/new2, then W/old2) and compares
#            with both (`compare --again`): a row moves only where both orders agree, so a GPU
#            that drifts between consecutive runs does not pass for a change (twice the time);
#            ORDERS=back runs only that second pair (to complete a first one a lost machine left)
#   device:  W=<folder> bash scripts/gpu_ab.sh lanes "OPTIONS" FILE0.json FILE1.json ...
#            one such A/B a GPU at once: lane i runs `--workload-file FILEi OPTIONS` (harness run
#            options every lane shares) on GPU i as run NAME (FILEi's name without .json), within
#            LANE_S seconds a run (default 110), into W/NAME; then each lane's changed rows
# The old code runs from a copy outside the tree: a device call made while the pipeline runs
# copies the working tree again, which would swap the code under a running A/B. Only RUNS runs
# twice (leave CONFORMANCE and NCU unset); do not commit ab-old/.
set -uo pipefail
cd "$(dirname "$0")/.."
PARTS=(impls specs harness scripts)
case "${1:-}" in
old)
  rev=${2:?which revision is the old code}
  git rev-parse --verify -q "$rev^{commit}" >/dev/null || { echo "old: no commit $rev" >&2; exit 2; }
  rm -rf ab-old && mkdir -p ab-old
  : > ab-old/.absent
  git diff --name-status --no-renames "$rev" -- "${PARTS[@]}" | while read -r status path; do
    if [ "$status" = A ]; then echo "$path" >> ab-old/.absent; continue; fi
    mkdir -p "ab-old/$(dirname "$path")" && git show "$rev:$path" > "ab-old/$path"
  done
  git rev-parse "$rev" > ab-old/.rev
  echo "ab-old/: $(find ab-old -type f ! -name '.*' | wc -l) files as $(cut -c1-7 ab-old/.rev) has them," \
       "$(wc -l < ab-old/.absent) it lacks" ;;
run)
  W=${W:?set W: the folder for the runs and comparisons}
  : "${RUNS:?set RUNS: the runs to make with the old code and the new}"
  case "${ORDERS:-1}" in 1|2|back) ;; *) echo "run: ORDERS=$ORDERS: 1, 2 or back" >&2; exit 2 ;; esac
  [ -f ab-old/.rev ] || { echo "run: no ab-old/ (bash scripts/gpu_ab.sh old REV first)" >&2; exit 2; }
  here=$(pwd) old=$(mktemp -d)
  cp -r "${PARTS[@]}" conformance pyproject.toml "$old"/
  (cd ab-old && find . -type f ! -name '.*' -exec cp --parents {} "$old"/ \;)
  while read -r path; do [ -n "$path" ] && rm -f "$old/$path"; done < ab-old/.absent
  # the runs' workload files (relative to the tree) travel too: the old code runs from its copy
  for file in $(grep -oE -- '--workload-file[= ][^ ;|]*' <<< "$RUNS" | cut -c17-); do
    [ -f "$file" ] && mkdir -p "$old/$(dirname "$file")" && cp "$file" "$old/$file"
  done
  mkdir -p "$W"
  echo "old: $(cat ab-old/.rev)" > "$W/ab.txt"
  run_old() { (cd "$old" && DECODE_BENCH_COMMIT=$(cat "$here/ab-old/.rev") W="$W/$1" bash scripts/gpu_pipeline.sh); }
  if [ "${ORDERS:-1}" != back ]; then
    run_old old
    W="$W/new" bash scripts/gpu_pipeline.sh
  fi
  again=()
  if [ "${ORDERS:-1}" != 1 ]; then  # the second pair new first: a drift between runs cancels
    W="$W/new2" bash scripts/gpu_pipeline.sh
    run_old old2
  fi
  # ORDERS=back: the second pair only (a first pair a lost machine left; compare them here)
  [ "${ORDERS:-1}" = back ] && { rm -rf "$old"; exit 0; }
  runs_text=${RUNS-}
  IFS=';' read -ra runs <<< "${runs_text//$'\n'/ }"  # RUNS may span lines
  for entry in "${runs[@]}"; do
    name=${entry%%|*}; name=${name// }
    [ -n "$name" ] || continue
    [ "${ORDERS:-1}" = 2 ] && again=(--again "$W/old2/$name" "$W/new2/$name")
    "${PY:-python3}" -m harness compare "$W/old/$name" "$W/new/$name" "${again[@]}" \
      > "$W/compare-$name.txt" 2>&1
    echo "$name: $(grep -E '^summary' "$W/compare-$name.txt")"
  done
  rm -rf "$old" ;;
lanes)
  W=${W:?set W: the folder for the lanes}
  options=${2:?lanes: the harness run options every lane shares}; shift 2
  [ $# -gt 0 ] || { echo "lanes: no workload files" >&2; exit 2; }
  mkdir -p "$W"
  gpu=0
  for file in "$@"; do
    name=$(basename "$file" .json)
    ( export CUDA_VISIBLE_DEVICES=$gpu
      RUNS="$name|${LANE_S:-110}|--workload-file $file $options" W="$W/$name" bash scripts/gpu_ab.sh run ) \
      > "$W/lane-$name.log" 2>&1 &
    gpu=$((gpu + 1))
  done
  wait
  for file in "$@"; do
    name=$(basename "$file" .json)
    grep -E "(faster|slower|same)$|^summary" "$W/$name/compare-$name.txt" 2>/dev/null \
      || { echo "$name: no comparison (lane log:)"; tail -3 "$W/lane-$name.log"; }
  done ;;
*) echo "usage: gpu_ab.sh old REV | RUNS=... W=... gpu_ab.sh run | W=... gpu_ab.sh lanes OPTIONS FILE..." >&2
   exit 2 ;;
esac
