# issue 32/34: the split tile on the one-tile plan, two cells where the rule's split-K was slower
set -u
unset DECODE_BENCH_ENV_TILELANG
mapfile -t P < gpu-session/probs.txt
ARGS=(--problem "${P[0]}" --problem "${P[1]}" --backends triton --variants split-k --seed 17)
run() { name=$1; shift; timeout 150 python3 -m harness run "${ARGS[@]}" "$@" --out $W/$name > $W/$name.log 2>&1; echo "$name rc $?"; }
run rule
run s0 --config '{"dim_split":0}'
run rule-n1 --num-splits 1
run s0-n1 --config '{"dim_split":0}' --num-splits 1
run rule2 
for r in rule s0 rule-n1 s0-n1 rule2; do python3 -c "
import json; d=json.load(open('$W/$r/results.json'))
for x in d['rows']: print('$r', x['problem'][:40], x['status'], x.get('median_us'), x.get('ci_lo_us'), x.get('ci_hi_us'), x.get('config_summary'), x.get('config',{}).get('d_hi'))"; done
