set -u
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
start=$SECONDS
DECODE_BENCH_PROFILE=gpu DECODE_BENCH_EXAMPLES=5 timeout 150 python3 -m pytest conformance -q \
  -p no:cacheprovider -k "triton" -W ignore::DeprecationWarning > $OUT/conformance-triton.log 2>&1
echo "conformance triton rc $? in $((SECONDS - start)) s"; tail -1 $OUT/conformance-triton.log
timeout 240 python3 -m harness run --backends triton --workloads window --timing cold --no-tuning-cache --out $OUT/window > $OUT/window.log 2>&1
echo "window rc $?"; tail -1 $OUT/window.log
sed -n '/== side by side ==/,/== against/p' $OUT/window.log | cut -c1-140
