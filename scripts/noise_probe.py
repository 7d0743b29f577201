"""Where the run-to-run spread of small timings comes from (a GPU diagnostic, not part of a run).

One problem, a few implementations, cold-L2 medians (harness.timing's method) in rounds, each
way twice: with the launch phase cycled (as the harness times) and without (every repetition
launching the same kernels, so a round sits in whatever phase it started in; one empty launch
between rounds moves the next round to another phase):

* ``same inputs``: every round times the one prepared call on the same tensors: what drifts with
  time alone (clocks, temperature, the host);
* ``new inputs``: every round draws the inputs again into new allocations, first shifted by a
  pad of random size, and prepares the call again: what depends on where the data lies (DRAM
  channels, TLB reach) and on per-preparation choices (a library's plan).

Per implementation it prints the spread (max - min) of the round medians beside the typical
within-round 95 % interval width. A spread far beyond that width is noise one run's interval
cannot see. On the device machine:
    python3 scripts/noise_probe.py --impls triton/split-k,cupy/split-k [--problem JSON] [--rounds 6]
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics

import impls  # noqa: F401  (first: picks the CPU interpreters before any DSL import)
import torch

from conformance.checks import check
from harness.stats import estimate
from harness.timing import WARMUP_CALLS, GpuTimer
from impls import registry
from specs.inputs import make_inputs
from specs.problem import DecodeProblem
from specs.reference import reference

DEFAULT_PROBLEM = {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "seq_lens": [2048],
                   "layout": "dense", "dtype": "bfloat16", "name": "llama3-8b"}


def prepared(impl, problem: DecodeProblem, seed: int):
    inputs = make_inputs(problem, seed, torch.device("cuda"))
    checked = check(impl, inputs, reference(inputs))
    assert checked.comparison.passed, checked.comparison.summary()
    return inputs, checked.run.launch


def round_median(timer: GpuTimer, run, reps: int):
    for _ in range(WARMUP_CALLS):
        run()
    torch.cuda._sleep(0)  # one launch: the next round starts one phase on
    return estimate(timer._events(run)(reps))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--problem", default=json.dumps(DEFAULT_PROBLEM))
    ap.add_argument("--impls", required=True, help="backend/variant names, comma-separated")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--reps", type=int, default=96)
    args = ap.parse_args()
    problem = DecodeProblem.from_dict(json.loads(args.problem))
    timers = {"cycled": GpuTimer(torch.device("cuda")),
              "fixed": GpuTimer(torch.device("cuda"), cycle_phases=False)}
    rng = random.Random(0)
    print(f"{problem.label()}: {args.rounds} rounds x {args.reps} cold-L2 calls; us")
    print(f"{'implementation':<20} {'phase':<7} {'inputs':<6} {'round medians':<48} spread  CI width")
    for name in args.impls.split(","):
        impl = registry.get(name)
        if reason := impl.availability() or impl.unsupported(problem):
            print(f"{name:<20} skipped: {reason}")
            continue
        inputs, launch = prepared(impl, problem, 0)
        for (phase, timer), kind in itertools.product(timers.items(), ("same", "new")):
            medians, widths, pads = [], [], []
            for r in range(args.rounds):
                if kind == "new":
                    del launch, inputs
                    pads.append(torch.empty(rng.randrange(1, 64) << 20, dtype=torch.uint8, device="cuda"))
                    inputs, launch = prepared(impl, problem, 0)  # same seed: the same values
                e = round_median(timer, launch.run, args.reps)
                medians.append(e.median)
                widths.append(e.ci_hi - e.ci_lo)
            del pads
            text = " ".join(f"{m:.2f}" for m in medians)
            print(f"{name:<20} {phase:<7} {kind:<6} {text:<48} {max(medians) - min(medians):6.2f}  "
                  f"{statistics.median(widths):6.2f}", flush=True)
        del inputs, launch
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
