"""Each backend against the fastest vendor kernel over the rows of one or more run folders of
the same GPU (runs split by backend, e.g. a slow one given its own time limit): the report's
'against the vendors' table over their rows together, then, per problem of KV >= 256 MB, the
fastest non-vendor backend's share of the size-matched read. A row of a later folder replaces
the same implementation's row on the same problem from an earlier one (a rerun with the tuning
cache after a run on the rules: ``RULES_DIR CACHE_DIR``).
    python scripts/vendor_ratios.py RUN_DIR [RUN_DIR ...]
"""

import sys

from harness import report, results


def main(folders: list[str]) -> int:
    if not folders:
        print(__doc__, file=sys.stderr)
        return 2
    latest, gpus = {}, set()
    for folder in folders:
        prov, found = report.load(folder)
        gpus.add(prov.get("gpu"))
        # each cell once: a second measurement on its own GPU (the repeatability) left out
        latest.update({(r["impl"], results.problem_key(r)): r for r in results.first_measurements(found)})
    rows = list(latest.values())
    if len(gpus) > 1:
        print(f"runs of different GPUs ({sorted(map(str, gpus))}): their times do not compare",
              file=sys.stderr)
        return 2
    results.annotate(rows)
    print(results.columns(*results.vendor_summary(rows)))
    best = results.fastest_by_problem(
        r for r in rows if not r.get("vendor") and r.get("pct_read") is not None
        and (r.get("kv_bytes") or 0) >= results.LARGE_KV)
    if best:
        print("\nKV >= 256 MB: the fastest non-vendor row's % of the size-matched read")
        for r in sorted(best.values(), key=lambda r: r["pct_read"]):
            print(f"  {r['pct_read']:5.0f} %  {r['impl']:<22} {r['problem']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
