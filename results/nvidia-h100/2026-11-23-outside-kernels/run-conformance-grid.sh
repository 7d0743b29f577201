set -uo pipefail
export PYTHONUNBUFFERED=1 DECODE_BENCH_COMMIT=$C
mkdir -p $OUT
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python3 -c "import torch,triton,cupy,numba_cuda,numpy;print('torch',torch.__version__,'triton',triton.__version__,'cupy',cupy.__version__,'numba-cuda',numba_cuda.__version__,'numpy',numpy.__version__)"; python3 -c "import tqdm; print('tqdm', tqdm.__version__)"; df -h /tmp | tail -1; } > $OUT/env.txt 2>&1
s=$(date +%s); DECODE_BENCH_PROFILE=gpu DECODE_BENCH_PLUGINS=tests.plugin_out_only timeout 240 python3 -m pytest conformance -q -p no:cacheprovider -k "timed_calls or plugin-out-only" -W ignore::DeprecationWarning > $OUT/conformance.log 2>&1; echo "conformance rc $? in $(( $(date +%s) - s )) s" | tee -a $OUT/conformance.log
s=$(date +%s); timeout 270 python3 -m harness run --workloads grid --backends triton,cupy,torch-cudnn,torch-fa2 --timing cold,graph --save-cases /tmp/cases --out $OUT/grid > $OUT/grid.log 2>&1; echo "grid rc $? in $(( $(date +%s) - s )) s"
s=$(date +%s); timeout 120 python3 -m harness replay /tmp/cases > $OUT/replay.log 2>&1; echo "replay rc $? in $(( $(date +%s) - s )) s" | tee -a $OUT/replay.log
python3 results/nvidia-h100/2026-11-23-outside-kernels/disk_probe.py $OUT/grid > $OUT/disk.txt 2>&1
tail -4 $OUT/conformance.log; grep -E "passed|failed|xfail" $OUT/conformance.log | tail -3
grep -E "FAIL|ERROR" $OUT/grid.log | head -5; tail -3 $OUT/grid.log; tail -2 $OUT/replay.log; cat $OUT/disk.txt; cat $OUT/env.txt
