"""Numba CUDA split-K decode over a balanced plan (kernels: ``_kernels.decode_kernel`` and
``combine_kernel``).

Algorithm: ``impls.plan`` cuts the batch into work items (a token range of one sequence, whole
loop steps and pages, sized so the items fill the GPU without one outlasting the rest;
``num_splits`` forces a uniform cut). Stage 1, grid (num_kv_heads x num_head_blocks, num_items):
each block runs the one-pass kernel over its item; a whole sequence writes the final out and
lse, a piece of a split one a normalised float32 partial and its LSE. Stage 2, grid
(num_q_heads, num_merges), only when something was split: ``combine_kernel`` merges each split
sequence over its own slots, weighted by exp(lse_s - max lse). Both layouts (the build is
specialised on it).
Why: fills the SMs at small batch and cuts a ragged batch's tail; costs the partials' round trip
and a second launch.
Expected bottleneck: HBM bandwidth once there are a few blocks per SM; the launch overhead of
two Numba launches at short sequences.
"""

from impls import plan as planner
from impls.common import require_alignment
from impls.numba._compat import SIMULATOR
from impls.numba._kernels import LOAD_BYTES
from impls.numba._launch import (launcher, launches_for, num_head_blocks, pick_launch_config,
                                 require_whole_words)
from impls.registry import Launch

# blocks resident per SM in the simulator, which builds nothing to read it from
RESIDENT_PROGRAMS = 2


def compiled_residency(inputs, out, lse, config: dict | None) -> int:
    """Blocks of the attention kernel one SM holds, from its build (for a stand-in plan's
    arguments: the same types as the real launch's) by the occupancy rules."""
    if SIMULATOR:
        return RESIDENT_PROGRAMS
    import numba

    stand_in = planner.SplitLaunch.of(planner.whole_sequences(inputs.problem.seq_lens), inputs)
    (kernel, _, threads, args), *_ = launches_for(inputs, out, lse, stand_in, config)[0]
    built = kernel.compile(tuple(numba.typeof(a) for a in args))
    return planner.residency(built.regs_per_thread, built.shared_mem_per_block, threads // 32,
                             planner.sm_limits(inputs.device))


def prepare(inputs, out, lse, num_splits: int | None = None, config: dict | None = None) -> Launch:
    require_whole_words(inputs.problem)
    step = pick_launch_config(inputs.problem, config).STEP

    # items start on whole loop steps (and pages)
    split = planner.split_launch(inputs, compiled_residency(inputs, out, lse, config), step,
                                 num_splits, num_head_blocks(inputs.problem))
    require_alignment(inputs, LOAD_BYTES)
    launches, reported = launches_for(inputs, out, lse, split, config)
    return Launch(launcher(launches), {**reported, **split.reported()}, plan=split.replan)
