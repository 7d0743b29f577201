"""Compress a committed run's data files (results.json, rows.jsonl, results.csv) to .xz, in
place: about 25x smaller, so the results kept in the repository stay small enough to travel with
the tree to a GPU machine (64 MiB a call). results.md and the plots stay as they are;
``python -m harness report`` and ``compare`` read the packed files as they are.
    python scripts/pack_results.py results/<gpu>/<run> [...]     (folders searched recursively)
"""

import lzma
import os
import sys
from pathlib import Path

DATA_FILES = ("results.json", "rows.jsonl", "results.csv")


def pack(path: Path) -> int:
    """Replace ``path`` by ``path.xz`` (written under a temporary name, then renamed); the bytes
    saved."""
    packed = path.with_name(path.name + ".xz")
    tmp = packed.with_name(packed.name + ".tmp")
    data = path.read_bytes()
    tmp.write_bytes(lzma.compress(data, preset=9))
    os.replace(tmp, packed)
    path.unlink()
    return len(data) - packed.stat().st_size


def main(folders: list[str]) -> int:
    if not folders:
        print(__doc__, file=sys.stderr)
        return 2
    saved = files = 0
    for folder in map(Path, folders):
        for path in sorted(p for p in folder.rglob("*") if p.name in DATA_FILES):
            saved += pack(path)
            files += 1
    print(f"packed {files} file(s), {saved / 2**20:.1f} MiB saved")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
