"""Each backend against the fastest vendor kernel over the rows of one or more run folders of
the same GPU (runs split by backend, e.g. a slow one given its own time limit): the report's
'against the vendors' table over their rows together, then, per problem of KV >= 256 MB, the
fastest non-vendor backend's share of the size-matched read (contiguous, and in the
problem's own layout where the run measured it). A row of a later folder replaces
the same implementation's row on the same problem from an earlier one (a rerun with the tuning
cache after a run on the rules: ``RULES_DIR CACHE_DIR``); a problem a later folder names
otherwise than an earlier one, of the same shape, is the earlier's (``results.renamed``).
``--below X`` lists, per backend, the problems where it is under X times the fastest vendor
kernel (its row against the vendor's).
    python scripts/vendor_ratios.py [--below X] RUN_DIR [RUN_DIR ...]
"""

import argparse
import sys

from harness import report, results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--below", type=float, metavar="X")
    parser.add_argument("folders", nargs="+")
    args = parser.parse_args(argv)
    below, folders = args.below, args.folders
    latest, gpus = {}, set()
    for folder in folders:
        prov, found = report.load(folder)
        gpus.add(prov.get("gpu"))
        # each cell once: a second measurement on its own GPU (the repeatability) and the
        # spread's copies on other GPUs left out (a copy would pair a backend's row with a
        # vendor's of another GPU: no ratio, the problem dropped)
        rows = list(results.summarised(results.first_measurements(found)))
        # a problem an earlier folder named otherwise (a workload file's names against a named
        # workload's) takes the earlier name: its rows then pair with the vendors' there
        twins = results.renamed(latest.values(), rows)
        for r in rows:
            twin = twins.get((None, results.problem_key(r)))
            if twin is not None:
                r = {**r, "problem": twin["problem"], "spec": twin["spec"]}
            latest[(r["impl"], results.problem_key(r))] = r
    rows = list(latest.values())
    if len(gpus) > 1:
        print(f"runs of different GPUs ({sorted(map(str, gpus))}): their times do not compare",
              file=sys.stderr)
        return 2
    results.annotate(rows)
    print(results.columns(*results.vendor_summary(rows)))
    if below is not None:
        for name, rows_of in results.by_backend(rows).items():
            # as the table rounds them: a 0.896 shown as 0.90x is not listed under 0.9x
            worst = sorted((r for r in results.against_vendors(rows_of)
                            if round(r["vs_vendor"], 2) < below),
                           key=lambda r: r["vs_vendor"])
            if worst and not any(r.get("vendor") for r in rows_of):
                print(f"\n{name}: under {below}x the fastest vendor kernel")
                for r in worst:
                    print(f"  {r['vs_vendor']:.2f}x  {r['impl']:<18} {r['median_us']:9.1f} us  "
                          f"{r['vendor_best']} {r['vendor_best_us']:.1f} us  {r['problem']}")
    best = results.fastest_by_problem(
        r for r in rows if not r.get("vendor") and r.get("pct_read") is not None
        and (r.get("kv_bytes") or 0) >= results.LARGE_KV)
    if best:
        print("\nKV >= 256 MB: the fastest non-vendor row's % of the size-matched read "
              "(contiguous, and in the problem's layout)")
        for r in sorted(best.values(), key=lambda r: r["pct_read"]):
            layout = r.get("pct_layout_read")
            print(f"  {r['pct_read']:5.0f} %  {'-' if layout is None else f'{layout:.0f} %':>6}  "
                  f"{r['impl']:<22} {r['problem']}")
    return 0


if __name__ == "__main__":
    report.script_main(main, sys.argv[1:])
