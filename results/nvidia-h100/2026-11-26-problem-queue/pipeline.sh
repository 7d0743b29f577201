# issue 37: --gpus 2 then plain on GPU 0, both cold, grid + ragged, every backend
set -u
S="--workloads grid,ragged --fresh-caches"
RUNS="gpus2|560|$S --gpus 2" W=$W bash scripts/gpu_pipeline.sh
CUDA_VISIBLE_DEVICES=0 RUNS="plain|600|$S" W=$W bash scripts/gpu_pipeline.sh
python3 -m harness compare $W/plain $W/gpus2 > $W/compare-plain-gpus2.txt 2>&1
tail -25 $W/compare-plain-gpus2.txt
for r in gpus2 plain; do python3 -c "import json; p=json.load(open('$W/$r/provenance.json')); print('$r', p.get('wall_s'), p.get('complete'), p.get('cells_total'))"; done
