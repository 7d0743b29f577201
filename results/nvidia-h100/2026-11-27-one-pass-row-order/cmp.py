"""Every one-pass row of ab/: main (o*) against the branch (n*), by how many row blocks a KV head
takes (several: the order changed; one: only the index arithmetic did). Run in this folder."""
import json
import lzma
import os
import statistics

DRIFT = 3.5  # split-K's widest move between the two trees (its code untouched), in %


def rows_of(run: str) -> dict:
    """A run's passing timed rows by (impl, problem); results.json packed (.xz) or not."""
    path = f"{run}/results.json"
    data = json.load(lzma.open(path + ".xz") if os.path.exists(path + ".xz") else open(path))
    return {(r["impl"], r["problem"]): r for r in data["rows"]
            if r["status"] == "PASS" and r.get("median_us")}


def row_blocks(row: dict, q_len: int = 8) -> int:
    q_heads, kv_heads, _ = map(int, row["problem"].split()[1].split("/"))
    return -(-q_len * q_heads // kv_heads // row["config"]["block_h"])


def main() -> None:
    out = []
    for seed in (86, 46, 50):
        old, new = rows_of(f"ab/o{seed}"), rows_of(f"ab/n{seed}")
        for key, n in new.items():
            if key in old and n["variant"] in ("dense", "paged"):
                o = old[key]
                out.append((n["backend"], row_blocks(n), n["median_us"] / o["median_us"] - 1, n["impl"],
                            n["problem"], o["median_us"], n["median_us"], n["kv_bytes"]))
    for backend in ("gluon", "triton"):
        for several in (False, True):
            sel = [x for x in out if x[0] == backend and (x[1] > 1) == several]
            changes = sorted(100 * x[2] for x in sel)
            print(f"{backend} {'several' if several else 'one'} row block(s): {len(sel)} rows, median "
                  f"{statistics.median(changes):+.1f} %, {changes[0]:+.1f} to {changes[-1]:+.1f} %; "
                  f"{sum(c < -DRIFT for c in changes)} faster, {sum(c > DRIFT for c in changes)} slower by > {DRIFT} %")
            for x in sorted(sel, key=lambda x: x[2]):
                print(f"   {100 * x[2]:+6.1f}% {x[3]:<13} blocks {x[1]}  {x[5]:8.1f} -> {x[6]:8.1f} us  "
                      f"kv {x[7] / 1e6:6.0f} MB  {x[4]}")


if __name__ == "__main__":
    main()
