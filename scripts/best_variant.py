"""One backend's fastest variant on each problem, in two runs of the same GPU (an A/B of a launch
rule against a config): what a user of the backend gets, where ``harness compare`` pairs the
variants one by one. Prints each problem's change, best first, then how many moved beyond
``--noise`` percent (default 2) either way.
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
    for k in both:
        a, b = old[k], new[k]
        change = 100 * (b["median_us"] / a["median_us"] - 1)
        print(f"{change:+6.1f}%  old {a['median_us']:9.1f} us {a['impl']:<18} new "
              f"{b['median_us']:9.1f} us {b['impl']:<18} {a['problem']}")
    changes = [100 * (new[k]["median_us"] / old[k]["median_us"] - 1) for k in both]
    print(f"\n{len(both)} problems: {sum(c < -args.noise for c in changes)} faster and "
          f"{sum(c > args.noise for c in changes)} slower by more than {args.noise:g} %")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
