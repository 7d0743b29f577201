"""One backend's fastest variant on each problem, in two runs of the same GPU (an A/B of a launch
rule against a config): what a user of the backend gets, where ``harness compare`` pairs the
variants one by one. Prints each problem's change, best first, then how many moved beyond
``--noise`` percent (default 2) either way. Problems where every variant of the backend kept its
launch config are marked ``=``: where the A/B changes launch choices only, they ran the same
kernels (whichever came out fastest), and their spread is the pair's drift (printed as the
control, with the changed problems counted beyond it). An A/B of kernel code moves kernels whose
configs stay the same: ``--control`` names the variants whose code it did not touch, and their
rows, old against new, are the drift instead.
    python scripts/best_variant.py OLD_RUN NEW_RUN BACKEND [--noise PERCENT] [--control VARIANTS]
"""

import argparse
import statistics
import sys

from harness import report, results


def fastest(folder: str, backend: str) -> tuple[str, dict[str, dict], dict[str, dict], dict]:
    """The run's GPU, its fastest passing row of ``backend`` on each problem, each problem's
    launch configs of that backend (variant: config), and its rows by (problem, variant)."""
    prov, rows = report.load(folder)
    mine = [r for r in results.first_measurements(rows) if r["impl"].split("/")[0] == backend]
    launches: dict[str, dict] = {}
    for r in mine:
        launches.setdefault(results.problem_key(r), {})[r["impl"]] = r.get("config")
    rows_of = {(results.problem_key(r), r["impl"]): r for r in mine
               if r["status"] == "PASS" and r.get("median_us")}
    return prov.get("gpu"), results.fastest_by_problem(mine), launches, rows_of


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("backend")
    parser.add_argument("--noise", type=float, default=2.0)
    parser.add_argument("--control", help="comma-separated variants whose code the A/B did not "
                        "change (e.g. split-k): their rows, old against new, are the pair's drift")
    args = parser.parse_args(argv)
    (gpu_old, old, launch_old, rows_old), (gpu_new, new, launch_new, rows_new) = (
        fastest(args.old, args.backend), fastest(args.new, args.backend))
    if gpu_old != gpu_new:
        print(f"runs of different GPUs ({gpu_old}, {gpu_new}): their times do not compare",
              file=sys.stderr)
        return 2
    both = sorted(old.keys() & new.keys(),
                  key=lambda k: new[k]["median_us"] / old[k]["median_us"])
    if not both:
        print(f"no problem where both runs have a passing {args.backend} row", file=sys.stderr)
        return 2
    change = {k: 100 * (new[k]["median_us"] / old[k]["median_us"] - 1) for k in both}
    # every variant as it was (an A/B of code: none is known to have run the same kernels)
    same = set() if args.control else {k for k in both if launch_old[k] == launch_new[k]}
    for k in both:
        a, b = old[k], new[k]
        print(f"{change[k]:+6.1f}% {'=' if k in same else ' '} old {a['median_us']:9.1f} us "
              f"{a['impl']:<18} new {b['median_us']:9.1f} us {b['impl']:<18} {a['problem']}")
    print(f"\n{len(both)} problems: {counted(change.values(), args.noise)} by more than {args.noise:g} %")
    if args.control:
        return control_variants(args, rows_old, rows_new, change)
    if not same:
        print("control: no problem kept every variant's config in both runs")
        return 0
    control = [change[k] for k in same]
    drift = max(args.noise, *map(abs, control))
    moved = [change[k] for k in both if k not in same]
    print(f"control: {len(same)} problems kept every variant's config (=): {span(control)}, the "
          "pair's drift where only launch choices changed")
    print(f"changed: {len(moved)} problems: {counted(moved, drift)} by more than {drift:.1f} % (the "
          "noise or the control's widest move, whichever is larger)")
    return 0


def control_variants(args, rows_old: dict, rows_new: dict, change: dict) -> int:
    """The drift from the rows of ``--control``'s variants (same config in both runs), and every
    problem's change counted beyond it."""
    impls = {f"{args.backend}/{v.strip()}" for v in args.control.split(",")}
    both = rows_old.keys() & rows_new.keys()
    row_change = {k: 100 * (rows_new[k]["median_us"] / rows_old[k]["median_us"] - 1) for k in both}
    control = [row_change[k] for k in both
               if k[1] in impls and rows_old[k].get("config") == rows_new[k].get("config")]
    if not control:
        print(f"control: no row of {args.control} with the same config in both runs", file=sys.stderr)
        return 2
    drift = max(args.noise, *map(abs, control))
    print(f"control: {len(control)} rows of {args.control} (code unchanged), old against new: "
          f"{span(control)}, the pair's drift")
    print(f"every problem's fastest row: {len(change)} problems: {counted(change.values(), drift)} by "
          f"more than {drift:.1f} % (the noise or the control's widest move, whichever is larger)")
    for impl in sorted({k[1] for k in both} - impls):  # the others
        rows = [c for k, c in row_change.items() if k[1] == impl]
        print(f"{impl}: {len(rows)} rows: {counted(rows, drift)} by more than {drift:.1f} %")
    return 0


def counted(changes, limit: float) -> str:
    """How many of ``changes`` (in %) lie beyond ``limit`` either way."""
    changes = list(changes)
    return f"{sum(c < -limit for c in changes)} faster and {sum(c > limit for c in changes)} slower"


def span(changes: list[float]) -> str:
    """``changes``' range and median, in %."""
    return f"{min(changes):+.1f} to {max(changes):+.1f} % (median {statistics.median(changes):+.1f} %)"


if __name__ == "__main__":
    report.script_main(main, sys.argv[1:])
