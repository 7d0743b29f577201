set -u
# run as gpu-session/chk.sh from the repository root, won.json beside it
cd "$(dirname "$0")/.."
RUNS="rule|120|--workload-file gpu-session/won.json --backends triton --variants split-k;
      narrow|120|--workload-file gpu-session/won.json --backends triton --variants split-k --config {\"block_n\":32,\"num_stages\":2}" \
  W=$W/runs bash scripts/gpu_pipeline.sh > "$W/runs.log" 2>&1
python3 -m harness compare $W/runs/rule $W/runs/narrow > $W/compare.txt 2>&1
sed -n '/^implementation/,/^summary/p' $W/compare.txt | cut -c1-150
python3 - "$W" <<'PY'
import json, sys
for run in ("rule", "narrow"):
    for l in open(f"{sys.argv[1]}/runs/{run}/rows.jsonl"):
        r = json.loads(l); c = r["config"]
        print(run, r["problem"][:40], r["status"], c.get("resident"), c.get("block_n"), c.get("num_stages"), r["cold_us"])
PY
echo "chk done"
