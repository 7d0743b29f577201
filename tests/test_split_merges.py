"""Split-K's two merges compute what the reference does, launch after launch: ``MERGE=fused``
(the last program or CTA of each split sequence merges, counted by an atomic it resets; a counter
left set would merge early on the next launch) and ``MERGE=kernel`` (a combine kernel of its own),
for the planner's cut and forced uniform ones, whichever merge a backend picks by default. On a
GPU, or on the CPU where the DSL runs there (Triton's interpreter; CuPy has no CPU mode)."""

import importlib

import types

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls import registry
from impls.cupy._build import MMA_ROWS, rows_block, tensor_cores_fit
from specs.inputs import make_inputs
from specs.problem import DecodeProblem
from specs.reference import reference
from specs.tolerance import compare

PROBLEMS = {  # backend -> problems; CuPy's add two head blocks per KV head, other head dims and
    # query heads that are not a multiple of its combine kernel's 8 warps
    "triton": [DecodeProblem(8, 2, 64, (900, 70, 1, 129), dtype="float16")],
    "cupy": [DecodeProblem(8, 2, 64, (900, 70, 1, 129), dtype="float16"),
             DecodeProblem(64, 2, 128, (3000, 17, 515), dtype="bfloat16"),
             DecodeProblem(28, 4, 64, (2000, 33), dtype="bfloat16"),
             DecodeProblem(16, 4, 80, (2048, 1), dtype="float16"),
             DecodeProblem(16, 8, 256, (1500, 300), dtype="bfloat16"),
             DecodeProblem(8, 8, 72, (700, 5), dtype="float32"),
             # drafts: 16 rows on a CTA's warps (two a warp where 8 warps merge), four head blocks
             DecodeProblem(8, 1, 128, (3000, 700), dtype="bfloat16", q_len=2),
             DecodeProblem(8, 1, 128, (2500, 9), dtype="float16", q_len=8)],
}
CASES = [(backend, p, layout, {}) for backend, problems in PROBLEMS.items() for p in problems
         for layout in ("dense", "paged")]
# CuPy's CTAs of 2 and 4 row tiles, which its rule keeps for K/V beyond L2 (these fit: forced)
CASES += [("cupy", p, layout, {"BLOCK_H": rows_block(p)}) for p in PROBLEMS["cupy"]
          if tensor_cores_fit(p) and rows_block(p) > MMA_ROWS for layout in ("dense", "paged")]


@pytest.mark.parametrize("merge", ["fused", "kernel"])
@pytest.mark.parametrize("num_splits", [None, 3, 7])
@pytest.mark.parametrize("backend,problem,layout,config", CASES,
                         ids=[f"{b}-{p.label()}-{layout}{''.join(f'-{k}{v}' for k, v in c.items())}"
                              for b, p, layout, c in CASES])
def test_split_merges_match_the_reference_on_every_launch(backend, problem, layout, config,
                                                          num_splits, merge):
    impl = registry.get(f"{backend}/split-k")
    if impl.availability():
        pytest.skip(impl.availability())
    device = "cpu" if impl.backend.mode() != "gpu" else "cuda"
    problem = problem.replace(layout=layout)
    inputs = make_inputs(problem, seed=3, device=device)
    ref = reference(inputs)
    out, lse = inputs.new_outputs()
    module = importlib.import_module(impl.module)
    launch = module.prepare(inputs, out, lse, num_splits=num_splits, config={**config, "MERGE": merge})
    assert launch.config["merge"] == merge and launch.config["merges"] > 0
    for _ in range(3):
        out.fill_(float("nan"))
        lse.fill_(float("nan"))
        launch.run()
        result = compare(problem, out, lse, ref)
        assert result.passed, result.summary()


def test_cupy_fuses_the_merge_only_where_a_warp_a_row_is_about_as_fast():
    """The fused merge runs a CTA's rows on its warps one after another; the combine kernel gives
    each row a warp, or several sharing its slots where the rows leave SMs idle. Fused where the
    pieces are short and the extra slots a warp walks are few."""
    from impls.cupy.split_k import (FUSED_EXTRA_SLOTS, FUSED_MAX_TOKENS, MERGE_BATCH, pick_merge,
                                    warps_per_row)

    def plan(pieces, chunk=256, merges=1):
        return types.SimpleNamespace(num_merges=merges, chunk=chunk, max_items_per_seq=pieces)

    def pick(split_plan, rows, num_warps, sms=132):
        walk = -(-split_plan.max_items_per_seq // warps_per_row(split_plan, rows, num_warps, sms))
        return pick_merge(split_plan, rows, num_warps, walk)

    # a warp a row, the combine's walk the same: no extra walk (the rows fill the SMs)
    assert pick(plan(128, merges=200), rows=8, num_warps=8) == "fused"
    assert pick(plan(128, merges=200), rows=16, num_warps=8) == "kernel"  # 128 more slots a warp
    assert pick(plan(4), rows=4, num_warps=2) == "fused"  # 4 more: less than a launch
    assert pick(plan(FUSED_EXTRA_SLOTS, merges=200), rows=16, num_warps=8) == "fused"
    assert pick(plan(FUSED_EXTRA_SLOTS + 1, merges=200), rows=16, num_warps=8) == "kernel"
    assert pick(plan(4, chunk=2 * FUSED_MAX_TOKENS), rows=4, num_warps=8) == "kernel"
    assert pick(plan(1, merges=0), rows=4, num_warps=8) == "kernel"  # nothing to merge
    # one long sequence, 8 rows, 128 slots: 8 warps a row in the combine (16 slots each) against
    # 128 a warp fused: the combine kernel
    assert warps_per_row(plan(128), rows=8, num_warps=8, sms=132) == 8
    assert pick(plan(128), rows=8, num_warps=8) == "kernel"
    # warps share a row only while the grid leaves SMs idle and each share is a batch of loads
    assert warps_per_row(plan(128, merges=20), rows=8, num_warps=8, sms=132) == 4
    assert warps_per_row(plan(128, merges=200), rows=8, num_warps=8, sms=132) == 1
    assert warps_per_row(plan(2 * MERGE_BATCH - 1), rows=8, num_warps=8, sms=132) == 1
    assert warps_per_row(plan(2 * MERGE_BATCH), rows=8, num_warps=8, sms=132) == 2
    assert warps_per_row(plan(4 * MERGE_BATCH), rows=8, num_warps=8, sms=132) == 4
    # shares stay within a CTA: a power of two dividing its warps (a config may set 6 or 12)
    assert warps_per_row(plan(128), rows=8, num_warps=6, sms=132) == 2
    assert warps_per_row(plan(128), rows=8, num_warps=12, sms=132) == 4


# one long sequence on few query rows: the combine kernel's warps share each row's slots; and a
# short sequence beside a long one (its slots in few shares, some empty: a draft's first token
# sees none of a one-token last piece, a share of -inf partials)
CUPY_SHARED_ROWS = [(DecodeProblem(8, 1, 128, (32768,), dtype="bfloat16"), None),
                    (DecodeProblem(12, 2, 80, (20000, 3000), dtype="float16"), None),
                    (DecodeProblem(4, 1, 256, (9000,), dtype="bfloat16", q_len=2), None),
                    (DecodeProblem(8, 1, 128, (40960, 1025), dtype="bfloat16", q_len=2), 40)]


@pytest.mark.parametrize("layout", ["dense", "paged"])
@pytest.mark.parametrize("problem,num_splits", CUPY_SHARED_ROWS,
                         ids=[f"{p.label()}-splits{n}" for p, n in CUPY_SHARED_ROWS])
def test_cupy_combine_with_warps_sharing_a_row_matches_the_reference(problem, num_splits, layout):
    launch, result = run_against_reference("cupy/split-k", problem.replace(layout=layout), 13,
                                           {"MERGE": "kernel"}, num_splits=num_splits)
    assert launch.config.get("merge_warps", 1) > 1, launch.config  # the case this test is for
    assert result.passed, result.summary()


def test_cupy_merge_batch_is_the_kernels():
    from pathlib import Path

    from impls.cupy.split_k import MERGE_BATCH

    source = (Path(__file__).resolve().parent.parent / "impls/cupy/split_k.cu").read_text()
    assert f"#define MERGE_BATCH {MERGE_BATCH}\n" in source


# Triton's combine merges blocks of rows: a multi-token query's q_len x Hq rows, a block's last
# one partial (100 rows), head dims short of the padded tile; merges the kernel's alone (fused
# takes one query token's group)
TRITON_DRAFTS = [DecodeProblem(25, 5, 96, (3000, 700, 5), dtype="bfloat16", q_len=4),
                 DecodeProblem(8, 1, 256, (2500, 9), dtype="float16", q_len=8)]


@pytest.mark.parametrize("num_splits", [None, 5])
@pytest.mark.parametrize("layout", ["dense", "paged"])
@pytest.mark.parametrize("problem", TRITON_DRAFTS, ids=[p.label() for p in TRITON_DRAFTS])
def test_triton_combine_merges_blocks_of_rows_as_the_reference(problem, layout, num_splits):
    from impls.triton import split_k

    impl = registry.get("triton/split-k")
    if impl.availability():
        pytest.skip(impl.availability())
    device = "cpu" if impl.backend.mode() != "gpu" else "cuda"
    problem = problem.replace(layout=layout)
    inputs = make_inputs(problem, seed=5, device=device)
    out, lse = inputs.new_outputs()
    launch = split_k.prepare(inputs, out, lse, num_splits=num_splits)
    assert launch.config["merges"] > 0
    launch.run()
    result = compare(problem, out, lse, reference(inputs))
    assert result.passed, result.summary()


def test_the_combine_takes_blocks_of_rows_until_the_grid_would_leave_sms_idle():
    from impls.plan import COMBINE_MIN_DIMS, COMBINE_SLOTS, COMBINE_TILE, combine_blocks

    # five drafts of 8 tokens x 104 heads, 4 slots each, head dim 256: 8 rows a program
    assert combine_blocks(5, 832, 4, 256, sms=132) == (4, COMBINE_TILE // (4 * 256), 256)
    # 64 merges of 32 heads: 16 rows a program fit the tile but leave 128 programs on 132 SMs
    assert combine_blocks(64, 32, 3, 128, sms=132) == (4, 8, 128)
    # one long sequence in 132 pieces, 32 heads: a row a program, and its dims in 4 blocks
    # (128 programs), each merging all 132 slots in one step of a tile of 256 x 32
    assert combine_blocks(1, 32, 132, 128, sms=132) == (256, 1, COMBINE_MIN_DIMS)
    # 8 heads (GQA 8 over one KV head) in 128 pieces: 32 programs, the dims no narrower than
    # COMBINE_MIN_DIMS
    assert combine_blocks(1, 8, 128, 128, sms=132) == (128, 1, COMBINE_MIN_DIMS)
    # a row a program that already fills the SMs keeps its whole row; its slots fill the tile
    assert combine_blocks(20, 8, 64, 128, sms=132) == (COMBINE_TILE // 128, 1, 128)
    # a head dim under a warp's lanes (16): its dims are held twice, the slots counted so
    assert combine_blocks(1, 1, 1024, 16, sms=132) == (COMBINE_TILE // COMBINE_MIN_DIMS, 1, 16)
    # few slots: the tile no wider than the slots
    assert combine_blocks(1, 8, 3, 128, sms=132) == (4, 1, COMBINE_MIN_DIMS)
    assert COMBINE_SLOTS <= COMBINE_TILE // 128


# few rows on one long sequence: the combine cuts the head dim (on a CPU's nominal 4 SMs an
# 80-dim row in two blocks of 64, the second partial; 64 dims in two of 32), each block merging
# every slot in one step; Gluon's on a GPU
DIM_CUTS = [DecodeProblem(1, 1, 80, (3000, 700), dtype="float16"),
            DecodeProblem(2, 1, 64, (2000, 5), dtype="float16")]


@pytest.mark.parametrize("layout", ["dense", "paged"])
@pytest.mark.parametrize("problem", DIM_CUTS, ids=[p.label() for p in DIM_CUTS])
@pytest.mark.parametrize("backend", ["triton", "gluon"])
def test_combine_cut_along_the_head_dim_matches_the_reference(backend, problem, layout):
    import torch

    from impls.common import sm_count
    from impls.plan import combine_blocks

    config = {"MERGE": "kernel"} if backend == "triton" else {}
    launch, result = run_against_reference(f"{backend}/split-k", problem.replace(layout=layout), 11,
                                           config, num_splits=7)
    pad = 1 << (problem.head_dim - 1).bit_length()
    device = "cuda" if registry.get(f"{backend}/split-k").backend.mode() == "gpu" else "cpu"
    _, _, block_d = combine_blocks(launch.config["merges"], problem.num_q_heads, 7, pad,
                                   sm_count(torch.device(device)))
    assert block_d < pad  # the case this test is for
    assert result.passed, result.summary()


DIM_SPLITS = [DecodeProblem(8, 2, 80, (700, 33), dtype="bfloat16"),
              DecodeProblem(12, 2, 144, (900, 70), dtype="float16", q_len=2),
              DecodeProblem(4, 1, 192, (600,), dtype="bfloat16", window=300, softcap=20.0)]


# the fused merge takes neither multi-token queries nor windows (Unsupported, tested apart)
DIM_SPLIT_CASES = [(p, layout, how) for p in DIM_SPLITS for layout in ("dense", "paged")
                   for how in ("one-pass", "split-k", "split-k-fused")
                   if how != "split-k-fused" or (p.q_len == 1 and p.window is None)]


def run_against_reference(name: str, problem, seed: int, config: dict, **kwargs):
    """Implementation ``name`` launched once on ``problem`` with ``config`` (skipped where it is
    unavailable): its Launch and how its output compares with the float64 reference."""
    impl = registry.get(name)
    if impl.availability():
        pytest.skip(impl.availability())
    device = "cpu" if impl.backend.mode() != "gpu" else "cuda"
    inputs = make_inputs(problem, seed=seed, device=device)
    out, lse = inputs.new_outputs()
    launch = importlib.import_module(impl.module).prepare(inputs, out, lse, config=config, **kwargs)
    launch.run()
    return launch, compare(problem, out, lse, reference(inputs))


@pytest.mark.parametrize("problem,layout,how", DIM_SPLIT_CASES,
                         ids=[f"{p.label()}-{layout}-{how}" for p, layout, how in DIM_SPLIT_CASES])
def test_triton_head_dim_in_two_tiles_matches_the_reference(problem, layout, how):
    """``DIM_SPLIT=1``: a head dim of 80, 144 or 192 as two power-of-two tiles (64 + 16, 128 +
    16, 128 + 64), every store and merge over both, as the reference says."""
    algorithm = how.removesuffix("-fused")
    options = {"one-pass": {}, "split-k": {"num_splits": 3},
               "split-k-fused": {"num_splits": 3, "MERGE": "fused"}}[how]
    config = {"DIM_SPLIT": 1, **{k: v for k, v in options.items() if k == "MERGE"}}
    kwargs = {"num_splits": options["num_splits"]} if "num_splits" in options else {}
    launch, result = run_against_reference(f"triton/{algorithm}", problem.replace(layout=layout), 7,
                                           config, **kwargs)
    assert launch.config["D_HI"] > 0
    assert result.passed, result.summary()


GLUON_DIM_SPLIT_CASES = [(p, layout, how) for p in DIM_SPLITS for layout in ("dense", "paged")
                         for how in ("one-pass", "split-k", "split-k-gathered")
                         if how != "split-k-gathered" or layout == "dense"]


@pytest.mark.parametrize("problem,layout,how", GLUON_DIM_SPLIT_CASES,
                         ids=[f"{p.label()}-{layout}-{how}" for p, layout, how in GLUON_DIM_SPLIT_CASES])
def test_gluon_head_dim_in_two_tiles_matches_the_reference(problem, layout, how):
    """Gluon's ``DIM_SPLIT=1``: the head dim's second tile in rings of its own (cp.async gathers,
    or, split-K dense, TMA boxes counted on the same mbarrier; ``-gathered``: split-K's dense
    tiles by cp.async), its scores added and its output stored beside the first's."""
    algorithm = how.removesuffix("-gathered")
    config = {"DIM_SPLIT": 1, **({"DENSE_TMA": 0} if how.endswith("gathered") else {})}
    kwargs = {"num_splits": 3} if algorithm == "split-k" else {}
    launch, result = run_against_reference(f"gluon/{algorithm}", problem.replace(layout=layout), 11,
                                           config, **kwargs)
    assert launch.config["D_HI"] > 0
    assert result.passed, result.summary()


# drafts of 32-128 rows a KV head: one warpgroup's 64 rows (padded), two's 128, a second dim tile
WGMMA_CASES = [(DecodeProblem(32, 4, 128, (1500, 333), q_len=8), {}),
               (DecodeProblem(32, 4, 128, (1500, 333), q_len=8), {"num_warps": 8}),
               (DecodeProblem(16, 2, 144, (900, 70), q_len=4, window=300, softcap=20.0), {}),
               (DecodeProblem(16, 1, 256, (700,), q_len=8, dtype="float16"), {})]
WGMMA_RUNS = [(p, layout, how, extra) for p, extra in WGMMA_CASES for layout in ("dense", "paged")
              for how in ("one-pass", "one-pass-tma", "split-k", "split-k-gathered")
              if layout == "dense" or how in ("one-pass", "split-k")]


@pytest.mark.parametrize("problem,layout,how,extra", WGMMA_RUNS,
                         ids=[f"{p.label()}-{layout}-{how}-{e.get('num_warps', 4)}w"
                              for p, layout, how, e in WGMMA_RUNS])
def test_gluon_warpgroup_mma_matches_the_reference(problem, layout, how, extra):
    """Gluon's ``WGMMA=1``: scores and P V on the warpgroup MMA, the query rows in shared memory,
    K/V tiles read where they landed (TMA, or cp.async into the MMA's layout), as the reference
    says."""
    algorithm = how.removesuffix("-tma").removesuffix("-gathered")
    tma = {"one-pass-tma": {"DENSE_TMA": 1}, "split-k-gathered": {"DENSE_TMA": 0}}.get(how, {})
    kwargs = {"num_splits": 3} if algorithm == "split-k" else {}
    launch, result = run_against_reference(f"gluon/{algorithm}", problem.replace(layout=layout), 13,
                                           {"WGMMA": 1, **tma, **extra}, **kwargs)
    assert launch.config["WGMMA"] == 1 and launch.config["BLOCK_H"] >= 64
    assert result.passed, result.summary()
