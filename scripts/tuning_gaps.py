"""Where a launch rule leaves time on the table, and by which knob: each cell whose configuration
a tuner changed, the rule's knobs against the tuned ones and the time either took, then, per
backend, each knob change with how often the tuner made it and the median change in time.

    python scripts/tuning_gaps.py TUNED_DIR                  rows of a --tune run (their search's
                                                             own timings: the rule's and the pick's)
    python scripts/tuning_gaps.py CACHE_DIR --rules RULE_DIR a run from the tuning cache against a
                                                             run on the rules (the runs' timings)

Knobs are the backend's declared ones (impls.launch); a cell the tuner left on the rule's
knobs counts as 'kept'. A knob change that recurs across problems is a rule's candidate; one
seen once is a problem's."""

import argparse
import sys

from harness import report, results, tuning
from impls import registry


def knobs(impl: str, config: dict | None) -> dict:
    return tuning.in_space(registry.get(impl), config or {})


def registered(impl: str) -> bool:
    try:
        registry.get(impl)
    except Exception:  # noqa: BLE001  (an implementation of an older run, since renamed)
        return False
    return True


def cells_of_runs(tuned_rows, rule_rows) -> list[tuple]:
    """The same from two runs: the rows of one configured from the cache (or tuned) against the
    same cells of a run on the rules (its rows configured by the rule: a run without
    --no-tuning-cache may hold cache rows too)."""
    rule = {(r["impl"], results.problem_key(r)): r for r in rule_rows
            if r.get("status") == "PASS" and r.get("median_us")
            and r.get("config_source", "rule") == "rule"}
    out = []
    for r in tuned_rows:
        if r.get("config_source") not in ("cache", "tuned"):
            continue
        base = rule.get((r["impl"], results.problem_key(r)))
        if not base or not r.get("median_us") or not registered(r["impl"]):
            print(f"left out: {r['impl']} on {r['problem']}: no passing rule row to compare",
                  file=sys.stderr)
            continue
        out.append((r["impl"], r["problem"], knobs(r["impl"], base.get("config")), base["median_us"],
                    knobs(r["impl"], r.get("config")), r["median_us"]))
    return out


def rows_of(folder: str) -> tuple[set, list[dict]]:
    """The GPU models of a run, and its rows, each cell once: a repeat on its own GPU and the
    spread's copies on other GPUs left out."""
    _, found = report.load(folder)
    return {r.get("gpu") for r in found}, results.summarised(results.first_measurements(found))


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tuned", help="a run folder: --tune rows, or rows from the tuning cache")
    parser.add_argument("--rules", metavar="RULE_DIR", help="a run on the rules to compare against")
    args = parser.parse_args(argv)
    gpus, tuned = rows_of(args.tuned)
    if args.rules:
        rule_gpus, rule_rows = rows_of(args.rules)
        if gpus | rule_gpus != gpus or len(gpus) > 1:
            print(f"runs of different GPUs ({sorted(map(str, gpus | rule_gpus))}): their times do "
                  "not compare", file=sys.stderr)
            return 2
        cells = cells_of_runs(tuned, rule_rows)
    else:
        cells = results.tuned_cells(tuned)
    if not cells:
        print("no tuned cells with a rule's time to compare (a --tune run's rows carry their "
              "search's; a cache run needs --rules)", file=sys.stderr)
        return 2
    cells = [c for c in cells if c[3] > 0]  # a CPU run's times may round to 0
    print(f"{'implementation':<16} {'rule us':>9} {'tuned us':>9} {'change':>7}  knobs  problem")
    for impl, problem, rule, rule_us, pick, pick_us in sorted(cells, key=lambda c: (c[0], c[5] / c[3])):
        text = ", ".join(f"{k} {a}->{b}" for k, a, b in results.knob_changes(rule, pick)) or "kept"
        print(f"{impl:<16} {rule_us:9.1f} {pick_us:9.1f} {100 * (pick_us / rule_us - 1):+6.1f}%  {text}  {problem}")
    print()
    print(results.columns(*results.knob_moves(cells)))
    return 0


if __name__ == "__main__":
    report.script_main(main, sys.argv[1:])
