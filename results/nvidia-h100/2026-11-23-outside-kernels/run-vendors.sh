set -uo pipefail
export PYTHONUNBUFFERED=1 DECODE_BENCH_COMMIT=$C
export PYTHONPATH=/tmp/site:/tmp/site/nvidia_cutlass_dsl/dsl_packages:${PYTHONPATH:-}
mkdir -p $OUT
s=$(date +%s); DECODE_BENCH_PROFILE=gpu timeout 260 python3 -m pytest conformance -q -p no:cacheprovider -k "timed_calls" -W ignore::DeprecationWarning > $OUT/conformance-timed.log 2>&1; echo "conformance rc $? in $(( $(date +%s) - s )) s" | tee -a $OUT/conformance-timed.log
s=$(date +%s); timeout 250 python3 -m harness run --workloads ragged --timing cold,graph --out $OUT/ragged > $OUT/ragged.log 2>&1; echo "ragged rc $? in $(( $(date +%s) - s )) s"
grep -E "passed|failed" $OUT/conformance-timed.log | tail -2; grep -E "SKIPPED" $OUT/conformance-timed.log | head
grep -E "FAIL|ERROR" $OUT/ragged.log | head -5; tail -2 $OUT/ragged.log
sed -n '/== side by side ==/,$p' $OUT/ragged.log | tail -14
