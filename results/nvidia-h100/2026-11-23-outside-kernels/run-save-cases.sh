set -uo pipefail
export PYTHONUNBUFFERED=1 DECODE_BENCH_COMMIT=$C
mkdir -p $OUT
s=$(date +%s); timeout 200 python3 -m harness run --workloads grid --backends cupy,torch-cudnn --no-timing --save-cases /tmp/cases --out $OUT/save > $OUT/save.log 2>&1; echo "save run rc $? in $(( $(date +%s) - s )) s"
s=$(date +%s); timeout 120 python3 -m harness replay /tmp/cases > $OUT/replay.log 2>&1; echo "replay rc $? in $(( $(date +%s) - s )) s" | tee -a $OUT/replay.log
du -sb /tmp/cases | tee -a $OUT/replay.log
python3 results/nvidia-h100/2026-11-23-outside-kernels/disk_probe.py $OUT/save --d2h > $OUT/disk.txt 2>&1
grep -E "FAIL|ERROR" $OUT/save.log | head -5; tail -3 $OUT/save.log; tail -3 $OUT/replay.log; cat $OUT/disk.txt
