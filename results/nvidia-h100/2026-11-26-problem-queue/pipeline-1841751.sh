# issue 37: --gpus 2 at the commit that queues the repeats and measures the GPUs first
set -u
S="--workloads grid,ragged --fresh-caches"
RUNS="gpus2|560|$S --gpus 2" W=$W bash scripts/gpu_pipeline.sh
python3 -c "import json; p=json.load(open('$W/gpus2/results.json'))['provenance']; print('gpus2', p.get('wall_s'), p.get('complete'), p.get('cells_total'))"
