"""Probe what a backend computes correctly beyond (or within) its declared capabilities.

    python scripts/probe_caps.py flash_attn4/paged --head-dims 16:256:8 --page-sizes 1,16,128

For every (dtype, head_dim, page_size) it draws one ragged GQA problem, runs the implementation
with its declared capabilities lifted (inputs still validated; the same run and check as the
conformance suite: ``conformance.checks.check``) and prints one line per head_dim: PASS, FAIL
(worst error in tolerance units), ERROR (an exception) or FAULT (the CUDA context died: the
probe stops there, as every later call would fail). This is how a backend's capability
declaration is established; the conformance suite then holds it to it.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impls  # noqa: E402,F401  (first: CPU modes before any DSL import)
from conformance.checks import check, sync  # noqa: E402
from impls import registry  # noqa: E402
from impls.registry import Capabilities, Unsupported  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.problem import DTYPES, LAYOUTS, DecodeProblem  # noqa: E402


class Fault(Exception):
    """The device is unusable after the call (illegal address, ...)."""


def _range(text: str) -> list[int]:
    if ":" in text:
        lo, hi, step = (int(x) for x in text.split(":"))
        return list(range(lo, hi + 1, step))
    return [int(x) for x in text.split(",")]


def probe_one(impl, problem: DecodeProblem, seed: int) -> str:
    inputs = make_inputs(problem, seed)
    try:
        c = check(impl, inputs).comparison
    except Unsupported as e:
        return f"UNSUPPORTED ({str(e)[:40]})"
    except Exception as e:  # noqa: BLE001  (a probe reports, it does not stop)
        try:
            sync(inputs.device)  # an exception can hide a dead context: look now
        except Exception as dead:  # noqa: BLE001
            raise Fault(f"{type(e).__name__}: {str(e)[:60]}; then {str(dead)[:80]}") from None
        return f"ERROR ({type(e).__name__}: {str(e)[:60]})"
    return "PASS" if c.passed else f"FAIL({max(c.out_err_ratio, c.lse_err_ratio):.0f}x)"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("impl", help="backend/variant (split-k: the paged layout "
                                 "where it has one)")
    ap.add_argument("--head-dims", type=_range, default=[64, 96, 128, 256],
                    help="comma list or lo:hi:step")
    ap.add_argument("--page-sizes", type=_range, default=[16])
    ap.add_argument("--dtypes", default="bfloat16")
    ap.add_argument("--group-size", type=int, default=4, help="query heads per KV head")
    ap.add_argument("--seq-lens", default="25,200,129")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    declared = registry.get(args.impl)
    if why := declared.availability():
        print(f"{declared.name}: unavailable: {why}")
        return 1
    lifted = Capabilities(declared.layouts, frozenset(DTYPES), max_head_dim=1 << 16)
    impl = dataclasses.replace(declared, caps=lifted)
    variant = args.impl.partition("/")[2]
    layout = variant if variant in LAYOUTS else "paged" if "paged" in impl.layouts else "dense"
    page_sizes = args.page_sizes if layout == "paged" else [16]
    lens = tuple(int(x) for x in args.seq_lens.split(","))
    try:
        for dtype in args.dtypes.split(","):
            print(f"{impl.row_name(layout)} {dtype} group {args.group_size} seq_lens {lens} ({layout}"
                  + (f"; columns: page_size {page_sizes})" if layout == "paged" else ")"), flush=True)
            for hd in args.head_dims:
                cells = [probe_one(impl, DecodeProblem(2 * args.group_size, 2, hd, lens, layout=layout,
                                                       page_size=ps, dtype=dtype), args.seed)
                         for ps in page_sizes]
                print(f"  head_dim {hd:>3}: " + "  ".join(cells), flush=True)
    except Fault as e:
        print(f"  FAULT at head_dim {hd}: {e}\n  (the CUDA context is gone: probe stopped)", flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
