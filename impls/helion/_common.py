"""Helion building blocks shared by the one-pass and split-K decode kernels.

Every attention kernel tiles ``[sequence or work item, kv_head, group_size]`` with block sizes
``[1, 1, BLOCK_H]``: one program per (sequence, KV head) takes the query heads of its GQA group
as the M dimension of ``hl.dot`` (Helion raises BLOCK_H to the 16 rows a tensor-core dot needs
and masks the padding rows), so each K/V tile is read once per group. An inner ``hl.tile`` loop
of ``BLOCK_N`` tokens runs the online softmax in float32 and in the log2 domain (``exp2``;
``qk_scale`` = sm_scale * log2(e)). The loop is written out in each kernel: Helion 1.4 inlines
no helper holding a device loop, nor (reliably) one holding dots.

``UPCAST_DOT`` (constexpr: the casts vanish from GPU builds) feeds the dots float32 copies:
Triton's CPU interpreter multiplies bf16 bit patterns as integers (triton-lang/triton#11584);
the operands are upcast after rounding, which keeps the result exact.

Both layouts are read as token rows: dense ``k[pid_b, tile_n, pid_kvh, :]``; paged, the pool
flattened to ``[num_pages * page_size, num_kv_heads, head_dim]`` and gathered at row
``block_table[pid_b, t // page_size] * page_size + t % page_size`` for token ``t`` (any page
size). Helion masks every load indexed by ``tile_n`` (or by an index computed from it) to the
tile loop's range, so no row at or past the range's end is read; the scores there are set to
-inf before the softmax.
"""

from __future__ import annotations

import os
import time

import helion

from impls import plan as planner
from impls.common import kv_scale_args, with_overrides
from impls.registry import Unsupported
from specs.problem import ProblemError

# ---- launch configuration ----------------------------------------------------------------------
MIN_BLOCK_H = 16  # hl.dot needs 16 rows (Helion enforces it): the query group is padded up to it
MIN_BLOCK_N = 16  # hl.dot's k step (P @ V): the narrowest K/V tile
MAX_BLOCK_N = 128  # tokens per K/V tile, as the Triton backend's (128 x 128 x 2 B of K and of V)
TILE_PAIR_BYTES = 64 * 1024  # K + V tile of one pipeline stage: wider rows get fewer tokens
NUM_WARPS = 4  # one warpgroup issues the tile loads of a memory-bound loop
NUM_STAGES = 3  # Triton's software pipelining depth for the K/V loads of the tile loop
REPORTED = ("BLOCK_H", "BLOCK_N", "num_warps", "num_stages")  # Launch.config
# Kernel settings: no autotuning unless asked (a kernel without a config autotunes on its first
# call by default); IEEE float32 dots (not TF32) for the float32 problems, as the other backends;
# static shapes, one compiled kernel per shape: with dynamic shapes Helion 1.4 keys its compiled
# kernels by dtype and rank but bakes facts of the first shape it traced into the code (a
# kernel traced at batch 1 has a grid of one sequence, and served batch 3 with it; another,
# unidentified, wrote out of bounds under the interpreter), so a later shape got a wrong kernel.
SETTINGS = dict(static_shapes=True, autotune_effort="none", dot_precision="ieee")
# ``tune``: Helion's autotuner at its quick effort, capped in time (seconds). Its accuracy check
# compares each candidate's outputs with the default config's, element by element, poison
# included: a split kernel leaves the final rows of split sequences to the combine (NaN there
# in both), which it counts as a mismatch of every candidate. The harness checks the chosen
# kernel against the float64 reference instead.
TUNE_SETTINGS = dict(SETTINGS, autotune_effort="quick", autotune_budget_seconds=180,
                     autotune_accuracy_check=False)


def interpreting() -> bool:
    """Kernels run in Triton's CPU interpreter (impls/__init__.py sets it with no GPU)."""
    return os.environ.get("TRITON_INTERPRET", "0") == "1"


def pick_launch_config(problem, config: dict | None = None) -> dict:
    """Block sizes and launch shape of the attention kernel for ``problem`` (no device query);
    ``config`` overrides the tunable ones (``BLOCK_H``, ``BLOCK_N``, ``num_warps``,
    ``num_stages``)."""
    head_dim_pad = helion.next_power_of_2(problem.head_dim)
    fit = TILE_PAIR_BYTES // (2 * head_dim_pad * problem.kv_itemsize)  # tokens in a stage's K+V
    defaults = dict(
        BLOCK_H=max(MIN_BLOCK_H, helion.next_power_of_2(problem.group_size)),
        BLOCK_N=min(MAX_BLOCK_N, 1 << (fit.bit_length() - 1), planner.widest_tile(problem, MIN_BLOCK_N)),
        num_warps=NUM_WARPS,
        num_stages=NUM_STAGES,
    )
    cfg = with_overrides(defaults, config)
    for key in ("BLOCK_H", "BLOCK_N"):
        size = cfg[key]
        if not isinstance(size, int) or size < MIN_BLOCK_H or size & (size - 1):
            raise ProblemError(f"config: {key}={size!r}: must be a power of two >= {MIN_BLOCK_H}")
    return cfg


def kv_scales(inputs) -> tuple:
    """K's and V's scales (``kv_scale_args``) as the kernels index them, by KV head: one scale
    broadcast (a stride-0 view, so the inputs' own is read), ones for an unquantised cache (one
    kernel for both: multiplying by 1.0 changes no bit, and an fp8 tile's conversion to the
    query's dtype is a no-op on a 16-bit one)."""
    heads = inputs.problem.num_kv_heads
    scales = kv_scale_args(inputs)
    return scales["k_scale_ptr"].expand(heads), scales["v_scale_ptr"].expand(heads)


def helion_config(cfg: dict) -> helion.Config:
    """The ``helion.Config`` of an attention kernel: its two ``hl.tile`` block sizes (the head
    block, the token tile) and the launch shape."""
    return helion.Config(block_sizes=[cfg["BLOCK_H"], cfg["BLOCK_N"]],
                         num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])


def reported(config: helion.Config) -> dict:
    """A config as the plain dict ``Launch.config`` carries (a tuned one has more keys)."""
    chosen = dict(config.config)
    block_h, block_n = chosen.pop("block_sizes")[:2]
    return {"BLOCK_H": block_h, "BLOCK_N": block_n, **chosen}


def bind(kernel, args: tuple, problem, config: dict | None, tune: bool):
    """``kernel`` bound to ``args`` with its config set, fixed (``pick_launch_config``) or tuned
    on these arguments: (bound kernel, ``Launch.config``, seconds the autotuner took or None)."""
    if not tune:
        cfg = pick_launch_config(problem, config)
        bound = kernel.bind(args)
        bound.set_config(helion_config(cfg))
        return bound, {key: cfg[key] for key in REPORTED}, None
    if interpreting():
        raise Unsupported("tune: Helion's autotuner times kernels on a GPU")
    bound = helion.kernel(kernel.fn, **TUNE_SETTINGS).bind(args)
    began = time.perf_counter()
    chosen = bound.autotune(args)
    return bound, reported(chosen), time.perf_counter() - began


def interpreter_math() -> None:
    """Triton's CPU interpreter implements ``tl.math`` but not the libdevice externs Helion's
    lowering emits for ``torch.exp``, ``torch.exp2`` and ``torch.log2`` (they return None there):
    under the interpreter only, those names forward to ``tl.math``'s (the same functions). GPU
    builds never call this."""
    import triton.language as tl
    from torch._inductor.runtime.triton_compat import libdevice

    for name in INTERPRETER_MATH:
        setattr(libdevice, name, lambda x, name=name: getattr(tl.math, name)(x))


INTERPRETER_MATH = ("exp", "exp2", "log2")  # the libdevice functions the kernels' code calls
