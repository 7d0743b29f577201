"""Each DSL backend's time on an fp8 cache against its own time on the same problem's 16-bit
cache, and against the fastest vendor kernel on the fp8 problem, from run folders.

    python scripts/fp8_ratios.py RUN_DIR [RUN_DIR ...]

Per backend its fastest passing variant per problem; a problem's 16-bit twin is the same spec
with no ``kv_dtype``. Prints the median fp8 speed-up over every pair, over the pairs whose
16-bit cache holds >= 256 MB (bandwidth-bound: the 2x fewer bytes should show), each of those
with the fp8 row's % of the size-matched read, and the ratio to the fastest fp8 vendor kernel
(> 1: faster). Rows of several GPUs are refused: ratios across devices mean nothing.
"""

import json
import statistics
import sys

from harness import report, results


def main(dirs):
    rows, gpus = [], set()
    for folder in dirs:
        prov, found = report.load(folder)
        gpus.add(prov.get("gpu"))
        rows += results.first_measurements(found)  # each cell once (not its remeasurement)
    if len(gpus) > 1:
        sys.exit(f"rows from several GPUs ({sorted(map(str, gpus))}): compare within one")
    pairs = {}  # the spec without its cache dtype -> {kv_dtype: {backend: row}}
    for backend in {r["backend"] for r in rows}:
        for r in results.fastest_by_problem(r for r in rows if r["backend"] == backend).values():
            spec = {k: v for k, v in r["spec"].items() if k not in ("kv_dtype", "kv_scale")}
            by_kv = pairs.setdefault(json.dumps(spec, sort_keys=True), {})
            by_kv.setdefault(r["spec"]["kv_dtype"], {})[backend] = r
    out = {}
    for by_kv in pairs.values():
        wide = by_kv.get(None, {})
        for kv, by_backend in by_kv.items():
            if kv is None:
                continue
            vendor = min((r["median_us"] for r in by_backend.values() if r["vendor"]), default=None)
            for backend, r in by_backend.items():
                if r["vendor"]:
                    continue
                o = out.setdefault(backend, {"all": [], "large": [], "vendor": []})
                if backend in wide:
                    ratio = wide[backend]["median_us"] / r["median_us"]
                    o["all"].append(ratio)
                    if wide[backend]["kv_bytes"] >= results.LARGE_KV:
                        o["large"].append((ratio, r["problem"], r.get("pct_read")))
                if vendor:
                    o["vendor"].append(vendor / r["median_us"])
    med = lambda xs: f"{statistics.median(xs):.2f}" if xs else "-"  # noqa: E731
    print("backend    fp8/16-bit pairs median   KV>=256MB: n  min   median  max    "
          "vs fastest fp8 vendor: n  median  worst")
    for backend, o in sorted(out.items()):
        large = [x for x, _, _ in o["large"]]
        print(f"{backend:10} {len(o['all']):5} {med(o['all']):>7}   {len(large):12} "
              f"{min(large, default=0):5.2f} {med(large):>6} {max(large, default=0):5.2f}   "
              f"{len(o['vendor']):22} {med(o['vendor']):>7} {min(o['vendor'], default=0):6.2f}")
    for backend, o in sorted(out.items()):
        for ratio, problem, pct in sorted(o["large"]):
            print(f"  {backend:10} {ratio:.2f}x  {problem}  (fp8: {pct}% of the read)")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    report.script_main(main, sys.argv[1:])
