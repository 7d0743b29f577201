"""One backend's fastest variant on each problem, in two runs of the same GPU (an A/B of a launch
rule against a config): what a user of the backend gets, where ``harness compare`` pairs the
variants one by one. Prints each problem's change, best first, then how many moved beyond
``--noise`` percent (default 2) either way. Problems where every variant of the backend kept its
launch config are marked ``=``: where the A/B changes launch choices only, they ran the same
kernels (whichever came out fastest), and their spread is the pair's drift (printed as the
control, with the changed problems counted beyond it).
    python scripts/best_variant.py OLD_RUN NEW_RUN BACKEND [--noise PERCENT]
"""

import argparse
import statistics
import sys

from harness import report, results


def fastest(folder: str, backend: str) -> tuple[str, dict[str, dict], dict[str, dict]]:
    """The run's GPU, its fastest passing row of ``backend`` on each problem, and each problem's
    launch configs of that backend (variant: config)."""
    prov, rows = report.load(folder)
    mine = [r for r in results.first_measurements(rows) if r["impl"].split("/")[0] == backend]
    launches: dict[str, dict] = {}
    for r in mine:
        launches.setdefault(results.problem_key(r), {})[r["impl"]] = r.get("config")
    return prov.get("gpu"), results.fastest_by_problem(mine), launches


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("backend")
    parser.add_argument("--noise", type=float, default=2.0)
    args = parser.parse_args(argv)
    (gpu_old, old, launch_old), (gpu_new, new, launch_new) = (fastest(args.old, args.backend),
                                                              fastest(args.new, args.backend))
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
    same = {k for k in both if launch_old[k] == launch_new[k]}  # every variant as it was
    for k in both:
        a, b = old[k], new[k]
        print(f"{change[k]:+6.1f}% {'=' if k in same else ' '} old {a['median_us']:9.1f} us "
              f"{a['impl']:<18} new {b['median_us']:9.1f} us {b['impl']:<18} {a['problem']}")
    changes = list(change.values())
    print(f"\n{len(both)} problems: {sum(c < -args.noise for c in changes)} faster and "
          f"{sum(c > args.noise for c in changes)} slower by more than {args.noise:g} %")
    if not same:
        print("control: no problem kept every variant's config in both runs")
        return 0
    control = sorted(change[k] for k in same)
    drift = max(args.noise, max(abs(c) for c in control))
    moved = [change[k] for k in both if k not in same]
    print(f"control: {len(same)} problems kept every variant's config (=): {control[0]:+.1f} to "
          f"{control[-1]:+.1f} % (median {statistics.median(control):+.1f} %), the pair's drift "
          "where only launch choices changed")
    print(f"changed: {len(moved)} problems: {sum(c < -drift for c in moved)} faster and "
          f"{sum(c > drift for c in moved)} slower by more than {drift:.1f} % (the noise or the "
          "control's widest move, whichever is larger)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
