#!/usr/bin/env bash
# Re-pack .gpu-wheels/ (made by the workplace's wheels.sh, 56 MiB folders) into folders small enough
# to travel beside this tree: a device call carries 64 MiB in all, the tracked tree included, so
# the folders get what the tree leaves (or $1 MiB). Same file names and install.sh (last folder),
# so the transfers go as wheels.sh prints them, one folder per call, in order.
#     bash scripts/repack_wheels.sh [MiB]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d .gpu-wheels ] || { echo "no .gpu-wheels: pack the wheels first (wheels.sh)" >&2; exit 2; }
tree=$(git ls-files -z | xargs -0 du -cb 2>/dev/null | tail -1 | cut -f1)
mib=${1:-$(( (64 * 1024 * 1024 - tree) / 1024 / 1024 - 2 ))}
[ "$mib" -ge 4 ] || { echo "the tree ($tree bytes) leaves no room for wheels" >&2; exit 2; }
tmp=$(mktemp -d)
cp .gpu-wheels/*/*.part.* "$tmp"/
cp "$(ls .gpu-wheels/*/install.sh | tail -1)" "$tmp"/
( cd "$tmp"
  for first in *.part.00; do
    name=${first%.part.00}
    cat "$name".part.* > "$name.whole" && rm "$name".part.*
    split -b $(( mib - 1 ))M -d -a 2 "$name.whole" "$name.part." && rm "$name.whole"
  done )
rm -rf .gpu-wheels
n=1; used=0; mkdir -p .gpu-wheels/1
for f in $(ls -S "$tmp"/*.part.*); do  # largest first, a new folder when this one is full
  size=$(stat -c %s "$f")
  if [ $((used + size)) -gt $((mib * 1024 * 1024)) ]; then n=$((n + 1)); used=0; mkdir -p .gpu-wheels/$n; fi
  mv "$f" .gpu-wheels/$n/; used=$((used + size))
done
mv "$tmp"/install.sh .gpu-wheels/$n/
rm -rf "$tmp"
echo "$n folders of at most $mib MiB; with .gpu-wheels/k there: mkdir -p /root/wh && cp .gpu-wheels/k/* /root/wh/"
echo "the last one: source .gpu-wheels/$n/install.sh && <your command>"
