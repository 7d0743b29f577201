"""Tuning sweep (a development tool, not part of the harness): time launch configurations of one
backend's kernels on a few cells and print the fastest per cell. Every configuration is checked
against the reference first; a wrong one is reported, never chosen.

    python scripts/sweep.py cupy|triton|numba [--quick]
"""

from __future__ import annotations

import argparse
import itertools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import impls  # noqa: E402,F401
import torch  # noqa: E402

from conformance.checks import check  # noqa: E402
from harness.timing import GpuTimer  # noqa: E402
from impls import registry  # noqa: E402
from specs import workloads  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.reference import reference  # noqa: E402

CELLS = [(1, 32768, "split-k"), (16, 4096, "split-k"), (16, 4096, "dense"), (64, 2048, "dense"),
         (64, 8192, "dense"), (64, 2048, "paged")]


def cupy_configs():
    from impls.cupy import _build

    original = _build.kernel_defines
    for tpr_div, unroll, prefetch, warps in itertools.product((1, 2), (None, 8), (0, 1), (4, 8)):
        def patched(problem, _o=original, _t=tpr_div, _u=unroll, _p=prefetch, _w=warps):
            natural = _o(problem)["TPR"]
            return _o(problem, threads_per_row=max(1, natural // _t), unroll=_u, num_warps=_w,
                      prefetch=_p)
        yield f"tpr/{tpr_div} unroll={unroll} prefetch={prefetch} warps={warps}", \
            lambda p=patched: setattr(_build, "kernel_defines", p), \
            lambda: setattr(_build, "kernel_defines", original)


def numba_configs():
    from impls.numba import _launch

    original = _launch.config_for
    for tpr_div, unroll, warps, min_blocks in itertools.product((2,), (2, 4), (4, 8), (0, 2, 4)):
        if warps * min_blocks > 16:
            continue
        def patched(problem, out_kind=None, _o=original, _t=tpr_div, _u=unroll, _w=warps,
                    _m=min_blocks):
            natural = min(32, 1 << (problem.head_dim * problem.itemsize // 8 - 1).bit_length())
            return _o(problem, out_kind, tpr=max(1, natural // _t), unroll=_u, num_warps=_w,
                      min_blocks=_m)
        yield f"tpr/{tpr_div} unroll={unroll} warps={warps} min_blocks={min_blocks}", \
            lambda p=patched: setattr(_launch, "config_for", p), \
            lambda: setattr(_launch, "config_for", original)


def triton_configs():
    from impls.triton import _common, dense, paged, split_k

    original = _common.pick_launch_config
    modules = (dense, paged, split_k)
    for block_n, warps, stages in itertools.product((32, 64, 128), (4, 8), (2, 3, 4)):
        def patched(problem, _o=original, _b=block_n, _w=warps, _s=stages):
            return {**_o(problem), "BLOCK_N": _b, "num_warps": _w, "num_stages": _s}
        def apply(p=patched):
            for m in modules:
                m.pick_launch_config = p
        def undo():
            for m in modules:
                m.pick_launch_config = original
        yield f"BLOCK_N={block_n} warps={warps} stages={stages}", apply, undo


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("backend", choices=("cupy", "triton", "numba"))
    parser.add_argument("--cells", help="indices into CELLS, comma-separated (default: all)")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    timer = GpuTimer(torch.device("cuda"), quick=args.quick, modes=("cold",))
    configs = list({"cupy": cupy_configs, "triton": triton_configs,
                    "numba": numba_configs}[args.backend]())
    splits_options = (None, 16, 32, 64, 128)
    cells = [CELLS[int(i)] for i in args.cells.split(",")] if args.cells else CELLS
    for batch, seq, variant in cells:
        layout = "paged" if variant == "paged" else "dense"
        problem = workloads.model_problem("llama3-8b", [seq] * batch, layout)
        impl = registry.get(f"{args.backend}/{variant}")
        inputs = make_inputs(problem, 0)
        ref = reference(inputs)
        results = []
        for name, apply, undo in configs:
            for splits in (splits_options if variant == "split-k" else (None,)):
                opts = {"num_splits": splits} if splits else {}
                apply()
                try:
                    checked = check(impl, inputs, ref, opts)
                    if not checked.comparison.passed:
                        print(f"  WRONG {name} {opts}: {checked.comparison.summary()[:120]}")
                        continue
                    t = timer(checked.run.launch.run)["cold"]
                    results.append((t.estimate.median, name, checked.run.launch.config))
                except Exception as e:  # a config that does not build or fit is skipped
                    print(f"  skip {name} {opts}: {type(e).__name__}: {str(e)[:100]}")
                finally:
                    undo()
        results.sort(key=lambda r: r[0])
        print(f"{problem.label()} {variant}: best {results[0][0]:.1f} us {results[0][1]} "
              f"{results[0][2]} | 2nd {results[1][0]:.1f} {results[1][1]} {results[1][2]}", flush=True)
        del inputs, ref


if __name__ == "__main__":
    main()
