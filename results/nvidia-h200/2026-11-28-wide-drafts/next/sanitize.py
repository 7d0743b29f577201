"""The warp-specialized kernels (impls/gluon/_ws.py) forced on four small drafts (one-pass: dense
with the head dim in two tiles, a window and a soft cap; paged on 48-token pages; fp16 with 160
rows in two row blocks; split-K in three pieces a sequence, merged), each launch checked against
the float64 oracle. next.sh runs it under
compute-sanitizer's synccheck and racecheck before anything is timed: the kernel's mbarrier ring
is new and has not run anywhere. Prints one line a problem and 'sanitize ok' when all pass."""
import sys

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from conformance.checks import check
from impls import registry
from specs.inputs import default_device, make_inputs
from specs.problem import DecodeProblem

ONE_PASS, SPLIT = registry.get("gluon/one-pass"), registry.get("gluon/split-k")
# `sanitize.py tma`: the TMA loader (dense tiles, `tma` 1) on dense drafts whose first and last
# tiles are edge tiles (a window's start, the sequence's end: V rows zeroed by the loader), with
# NaN in the rows no query may see
TMA = sys.argv[1:] == ["tma"]
CONFIG = {"warp_spec": 1, **({"tma": 1} if TMA else {})}
TMA_CASES = [(ONE_PASS, DecodeProblem(32, 2, 144, (300, 70), q_len=4, window=100, softcap=20.0), {}),
             (ONE_PASS, DecodeProblem(32, 2, 256, (301, 77), q_len=8), {}),
             (ONE_PASS, DecodeProblem(40, 2, 240, (300, 9), q_len=8, dtype="float16"), {}),
             (SPLIT, DecodeProblem(32, 2, 192, (900, 70), q_len=8, window=500), {"num_splits": 3})]
CASES = [(ONE_PASS, DecodeProblem(32, 2, 144, (300, 70), q_len=4, window=100, softcap=20.0), {}),
         (ONE_PASS, DecodeProblem(32, 2, 256, (300, 70), q_len=8, layout="paged", page_size=48), {}),
         (ONE_PASS, DecodeProblem(40, 2, 240, (300, 9), q_len=8, dtype="float16"), {}),
         # split-K: three pieces a sequence, merged by the combine
         (SPLIT, DecodeProblem(32, 2, 192, (900, 70), q_len=8, layout="paged"), {"num_splits": 3})]
failed = 0
for impl, problem, options in TMA_CASES if TMA else CASES:
    inputs = make_inputs(problem, 0, default_device())
    if TMA:  # NaN where no row may look (the spec's dense poison is finite, and 0 x finite = 0):
        # past each sequence's end and before its earliest row's window; the loader must zero V there
        for b, n in enumerate(problem.seq_lens):
            lo = max(0, n - problem.q_len + 1 - problem.window) if problem.window else 0
            for t in (inputs.k, inputs.v):
                t[b, n:] = float("nan")
                t[b, :lo] = float("nan")
    checked = check(impl, inputs, options={**options, "config": CONFIG})
    failed += not checked.comparison.passed
    shown = checked.run.launch.config
    print(impl.name, problem.label(), shown.get("warp_spec"), shown.get("tma"),
          checked.comparison.summary())
print("sanitize ok" if not failed else f"sanitize: {failed} FAIL")
sys.exit(1 if failed else 0)
