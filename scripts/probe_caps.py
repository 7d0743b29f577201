"""Probe what a backend computes correctly beyond (or within) its declared capabilities.

    python scripts/probe_caps.py flash_attn/paged --head-dims 16:256:8 --page-sizes 1,16,128

For every (dtype, head_dim, page_size) it draws one ragged GQA problem, calls the
implementation's entry point directly (its declared capabilities are bypassed, the inputs still
validated) and compares with the float64 reference under the suite's tolerance. It prints one
line per head_dim: PASS, FAIL (worst error in tolerance units), ERROR or UNSUPPORTED per page
size. This is how a backend's capability declaration is established; the conformance suite is
what then holds it to it.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impls  # noqa: E402,F401  (first: CPU modes before any DSL import)
from conformance.checks import sync  # noqa: E402
from impls import registry  # noqa: E402
from impls.registry import Unsupported  # noqa: E402
from specs.inputs import make_inputs, validate_inputs  # noqa: E402
from specs.problem import DecodeProblem  # noqa: E402
from specs.reference import reference  # noqa: E402
from specs.tolerance import compare  # noqa: E402


def _range(text: str) -> list[int]:
    if ":" in text:
        lo, hi, step = (int(x) for x in text.split(":"))
        return list(range(lo, hi + 1, step))
    return [int(x) for x in text.split(",")]


def probe_one(impl, problem: DecodeProblem, seed: int) -> str:
    import math

    inputs = make_inputs(problem, seed)
    out, lse = inputs.new_outputs()
    try:
        validate_inputs(inputs, out, lse)
        prepare = getattr(importlib.import_module(impl.module), impl.entry)
        launch = prepare(inputs, out, lse)
        produced = launch.run()
        if produced is not None:
            out, lse = produced
        sync(inputs.device)
    except Unsupported as e:
        return f"UNSUPPORTED ({str(e)[:40]})"
    except Exception as e:  # noqa: BLE001  (a probe reports, it does not stop)
        return f"ERROR ({type(e).__name__}: {str(e)[:60]})"
    if launch.lse_base2:
        lse = lse * math.log(2.0)
    c = compare(problem, out, lse, reference(inputs), lse_rounded_sum=launch.lse_rounded_sum)
    return "PASS" if c.passed else f"FAIL({max(c.out_err_ratio, c.lse_err_ratio):.0f}x)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("impl", help="backend/variant, e.g. flash_attn/paged")
    ap.add_argument("--head-dims", type=_range, default=[64, 96, 128, 256],
                    help="comma list or lo:hi:step")
    ap.add_argument("--page-sizes", type=_range, default=[16])
    ap.add_argument("--dtypes", default="bfloat16")
    ap.add_argument("--group", type=int, default=4, help="query heads per KV head")
    ap.add_argument("--seq-lens", default="25,200,129")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    impl = registry.get(args.impl)
    if why := impl.availability():
        print(f"{impl.name}: unavailable: {why}")
        return 1
    layout = sorted(impl.caps.layouts)[0] if impl.caps.layouts != {"dense", "paged"} else "paged"
    lens = tuple(int(x) for x in args.seq_lens.split(","))
    for dtype in args.dtypes.split(","):
        print(f"{impl.name} {dtype} group {args.group} seq_lens {lens} ({layout}); "
              f"columns: page_size {args.page_sizes}" if layout == "paged" else
              f"{impl.name} {dtype} group {args.group} seq_lens {lens} ({layout})", flush=True)
        for hd in args.head_dims:
            cells = []
            for ps in args.page_sizes if layout == "paged" else [16]:
                p = DecodeProblem(2 * args.group, 2, hd, lens, layout=layout, page_size=ps, dtype=dtype)
                cells.append(probe_one(impl, p, args.seed))
            print(f"  head_dim {hd:>3}: " + "  ".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
