"""One backend's fastest variant on each problem, in two runs of the same GPU (an A/B of a launch
rule against a config): what a user of the backend gets, where ``harness compare`` pairs the
variants one by one. Prints each problem's change, best first, then how many moved beyond
``--noise`` percent (default 2) either way. Problems whose fastest row is the same variant with
the same launch config in both runs are marked ``=``: where the A/B changes launch choices only,
they ran the same kernel, and their spread is the pair's drift (printed as the control, with
the changed problems counted beyond it).
    python scripts/best_variant.py OLD_RUN NEW_RUN BACKEND [--noise PERCENT]
"""

import argparse
import sys

from harness import report, results


def fastest(folder: str, backend: str) -> tuple[str, dict[str, dict]]:
    """The run's GPU and its fastest passing row of ``backend`` on each problem."""
    prov, rows = report.load(folder)
    mine = (r for r in results.first_measurements(rows) if r["impl"].split("/")[0] == backend)
    return prov.get("gpu"), results.fastest_by_problem(mine)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("backend")
    parser.add_argument("--noise", type=float, default=2.0)
    args = parser.parse_args(argv)
    (gpu_old, old), (gpu_new, new) = fastest(args.old, args.backend), fastest(args.new, args.backend)
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
    same = {k for k in both if same_launch(old[k], new[k])}
    for k in both:
        a, b = old[k], new[k]
        print(f"{change[k]:+6.1f}% {'=' if k in same else ' '} old {a['median_us']:9.1f} us "
              f"{a['impl']:<18} new {b['median_us']:9.1f} us {b['impl']:<18} {a['problem']}")
    changes = list(change.values())
    print(f"\n{len(both)} problems: {sum(c < -args.noise for c in changes)} faster and "
          f"{sum(c > args.noise for c in changes)} slower by more than {args.noise:g} %")
    if not same:
        print("control: no problem ran the same variant and config in both runs")
        return 0
    control = sorted(change[k] for k in same)
    drift = max(args.noise, max(abs(c) for c in control))
    moved = [change[k] for k in both if k not in same]
    print(f"control: {len(same)} problems ran the same variant and config in both runs (=): "
          f"{control[0]:+.1f} to {control[-1]:+.1f} % (median {control[len(control) // 2]:+.1f} %), "
          f"the pair's drift where only launch choices changed")
    print(f"changed: {len(moved)} problems: {sum(c < -drift for c in moved)} faster and "
          f"{sum(c > drift for c in moved)} slower by more than {drift:.1f} % (the noise or the "
          "control's widest move, whichever is larger)")
    return 0


def same_launch(a: dict, b: dict) -> bool:
    """The same variant with the same launch config (as the rows report it) in both runs."""
    return a["impl"] == b["impl"] and a.get("config") == b.get("config")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
