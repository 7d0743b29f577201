"""Host cost of the split-K plan (a development tool): for the batches of the ragged and sched
workloads, the median and minimum of many calls of ``impls.plan.for_launch`` alone, of
``Workspace.load`` alone (the pinned copy to the device) and of both together as the harness's
``plan us`` column times them (``harness.timing.time_plan``: a median of 30 calls with the thread
pinned to one CPU), to tell the planner's own cost from the host's noise.

    python scripts/plan_probe.py [--reps 2000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impls  # noqa: E402,F401
import torch  # noqa: E402

from harness.timing import time_plan  # noqa: E402
from impls import plan as planner  # noqa: E402
from specs import workloads  # noqa: E402
from specs.inputs import default_device  # noqa: E402


class _Inputs:  # what for_launch reads of an input set: the problem and the device
    def __init__(self, problem, device):
        self.problem, self.device = problem, device


def _us(fn, reps: int) -> tuple[float, float]:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1e6)
    return statistics.median(samples), min(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    device = default_device()
    problems = [p for p in workloads.named(["ragged", "sched"]) if p.layout == "paged"]
    print(f"{'batch':44s} {'items':>5s} {'plan med/min us':>16s} {'load med/min us':>16s} "
          f"{'both med/min us':>16s} {'time_plan us':>12s}")
    for p in problems:
        inputs = _Inputs(p, device)
        lens = planner.host_lengths(inputs)
        make = lambda: planner.for_launch(inputs, 1, 128, None, whole_pages=True,  # noqa: E731
                                          seq_lens=lens)
        split_plan = make()
        work = planner.Workspace(split_plan, device)
        plan_t = _us(make, args.reps)
        load_t = _us(lambda: work.load(split_plan), args.reps)
        both_t = _us(lambda: work.load(make()), args.reps)
        harness_t = time_plan(lambda: work.load(make())).median
        if device.type == "cuda":
            torch.cuda.synchronize()
        label = p.label().replace("llama3-8b ", "")[:44]
        print(f"{label:44s} {split_plan.num_items:5d} {plan_t[0]:8.1f}/{plan_t[1]:<7.1f} "
              f"{load_t[0]:8.1f}/{load_t[1]:<7.1f} {both_t[0]:8.1f}/{both_t[1]:<7.1f} {harness_t:12.1f}")


if __name__ == "__main__":
    main()
