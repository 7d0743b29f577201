"""The Helion backend on a machine without a GPU: its launch-config choice, the ``tune`` option's
refusal there, every kernel run in Triton's interpreter against the float64 reference on pinned
awkward problems (one kernel's shapes served after another's among them), and the Triton code
Helion writes compiled for sm_90 (tensor-core mma in the 16-bit attention kernels). The
conformance suite runs Helion on a GPU only (``impls/helion/__init__.py`` says why)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls.registry import Unsupported
from specs.inputs import make_inputs
from specs.problem import DecodeProblem, ProblemError
from specs.reference import reference
from specs.tolerance import compare

pytest.importorskip("helion")
from impls.helion import _common, one_pass, split_k  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
LLAMA = DecodeProblem(32, 8, 128, (300, 70))


@pytest.mark.parametrize("problem, block_h, block_n", [
    (LLAMA, 16, 128),  # group of 4 padded to the 16 rows of a dot; 128 x 128 bf16 K and V tiles
    (LLAMA.replace(dtype="float32", head_dim=256), 16, 32),  # wide rows: fewer tokens a tile
    (DecodeProblem(64, 2, 96, (500,)), 32, 128),  # group of 32; head dim padded to 128
    (DecodeProblem(64, 2, 96, (5,)), 32, 16),  # no tile wider than the 5 tokens need (widest_tile)
])
def test_pick_launch_config(problem, block_h, block_n):
    cfg = _common.pick_launch_config(problem)
    assert (cfg["BLOCK_H"], cfg["BLOCK_N"]) == (block_h, block_n)
    assert _common.pick_launch_config(problem, {"BLOCK_N": 32, "num_warps": 8}) == \
        {**cfg, "BLOCK_N": 32, "num_warps": 8}


@pytest.mark.parametrize("config", [{"BLOCK_N": 48}, {"BLOCK_H": 8}, {"BLOCK_N": "64"}])
def test_pick_launch_config_refuses(config):
    with pytest.raises(ProblemError, match=next(iter(config))):
        _common.pick_launch_config(LLAMA, config)


def test_tune_needs_a_gpu():
    if not _common.interpreting():
        pytest.skip("a GPU: tune runs (the harness's --tune)")
    inputs = make_inputs(LLAMA.replace(seq_lens=(5,)), device="cpu")
    with pytest.raises(Unsupported, match="tune"):
        one_pass.prepare(inputs, *inputs.new_outputs(), tune=True)


# problems the interpreter runs each kernel on (small: each is a Helion trace + a Triton build)
PINNED = [
    DecodeProblem(8, 2, 64, (1, 40), dtype="float16"),  # a one-token sequence; GQA 4
    DecodeProblem(7, 1, 32, (129, 17), layout="paged", page_size=12),  # group of 7, odd pages
    DecodeProblem(4, 4, 96, (70,), layout="paged", page_size=16, dtype="float32"),  # MHA, pad dim
    # fp8 caches: e4m3 with a scale per KV head (paged), e5m2 with one per tensor (dense)
    DecodeProblem(8, 2, 64, (45, 3), layout="paged", page_size=16, dtype="float16",
                  kv_dtype="float8_e4m3fn", kv_scale="head"),
    DecodeProblem(8, 2, 64, (33,), kv_dtype="float8_e5m2"),
]


@pytest.mark.parametrize("problem", PINNED, ids=lambda p: p.label())
@pytest.mark.parametrize("module, options", [(one_pass, {}), (split_k, {}),
                                             (split_k, {"num_splits": 3})],
                         ids=["one-pass", "split-k", "split-k-3"])
def test_kernels_match_the_reference_in_the_interpreter(module, options, problem):
    if not _common.interpreting():
        pytest.skip("a GPU: the conformance suite runs these")
    inputs = make_inputs(problem, seed=7, device="cpu")
    out, lse = inputs.new_outputs()  # poisoned: every element must be written
    module.prepare(inputs, out, lse, **options).run()
    result = compare(problem, out, lse, reference(inputs))
    assert result.passed, result.summary()


def test_a_second_shape_gets_its_own_kernel():
    """A kernel bound at batch 1 and one KV head, then at batch 3 and two (with dynamic shapes
    Helion 1.4 hands back the first, whose grid has one sequence and one head)."""
    if not _common.interpreting():
        pytest.skip("the interpreter run; a GPU runs the conformance suite")
    for problem in (DecodeProblem(8, 1, 64, (15,)), DecodeProblem(8, 2, 64, (15, 16, 17))):
        inputs = make_inputs(problem, device="cpu")
        out, lse = inputs.new_outputs()
        one_pass.prepare(inputs, out, lse).run()
        assert compare(problem, out, lse, reference(inputs)).passed


def test_kernels_compile_for_sm90():
    """Helion's Triton code for every kernel, compiled for sm_90 by tests/triton_sm90.py."""
    script = ("import tests.triton_sm90 as t; from specs.problem import DecodeProblem as P\n"
              "ps = [P(32, 8, 128, (300, 70), layout=l, dtype=d) for d in ('bfloat16', 'float32')"
              " for l in ('dense', 'paged')]\n"
              "ps += [P(8, 1, 128, (8192,), layout='paged', page_size=12)]  # split, merged\n"
              "ps += [P(32, 8, 128, (300, 70), layout=l, kv_dtype='float8_e4m3fn', kv_scale='head')"
              " for l in ('dense', 'paged')]  # fp8: still on the tensor cores\n"
              "print('\\n'.join(t.compile_all(ps, 'helion')))")
    res = subprocess.run([sys.executable, "-c", script], cwd=ROOT, text=True, capture_output=True,
                         timeout=900, env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    lines = [line for line in res.stdout.splitlines() if line.startswith("_helion_")]
    names = {line.split()[0] for line in lines}
    assert names == {"_helion_decode_kernel", "_helion_split_kernel", "_helion_combine_kernel"}
    attention = [line for line in lines if "combine" not in line and "*bf16" in line]
    assert attention and all("mma=True" in line for line in attention), "\n".join(attention)


def test_split_items_are_sized_by_the_compiled_kernel_s_residency(monkeypatch):
    """On a GPU the split plan is made for the programs an SM the kernel Helion writes holds, read
    from its binary (compiled through Helion's launcher hook, not launched) with the warps as
    launched, and read again on the new plan's own arguments; a binary of one keeps the plan."""
    import types

    import torch

    from impls import plan as planner

    compiles = []

    def stand_in(regs, shared):  # a binary of ``regs`` registers a thread and ``shared`` bytes
        def load_binary(triton_kernel, grid, args, kwargs):
            items = [a for a in args if getattr(a, "dtype", None) == torch.int32 and a.dim() == 2
                     and a.shape[1] == 4]  # [num_items, 4] (the block table is [3, 125])
            compiles.append((items[0].shape[0], kwargs))
            binary = regs(items[0].shape[0]) if callable(regs) else (regs, shared)
            return types.SimpleNamespace(n_regs=binary[0], metadata=types.SimpleNamespace(
                shared=binary[1], num_warps=kwargs["num_warps"]))
        return load_binary

    monkeypatch.setattr(_common, "interpreting", lambda: False)  # compiled: a GPU's path
    problem = DecodeProblem(8, 2, 64, (2000, 300, 90), layout="paged", page_size=16)
    inputs = make_inputs(problem, device="cpu")
    cfg = _common.pick_launch_config(problem)
    four = planner.residency(128, 50_000, cfg["num_warps"])
    assert four == 4 and planner.residency(255, 200_000, cfg["num_warps"]) == 1
    plans = {}
    for held, binary in ((1, stand_in(255, 200_000)), (four, stand_in(128, 50_000))):
        compiles.clear()
        monkeypatch.setattr(planner, "loaded_binary", binary)
        launch = split_k.prepare(inputs, *inputs.new_outputs())
        assert launch.config["resident"] == held
        assert all(kwargs["num_warps"] == cfg["num_warps"] and
                   kwargs["num_stages"] == cfg["num_stages"] for _, kwargs in compiles)
        expected = planner.for_launch(inputs, held, cfg["BLOCK_N"], None)
        assert launch.config["num_items"] == expected.num_items
        assert compiles[-1][0] == expected.num_items  # the last read is on the launch's arguments
        plans[held] = (len(compiles), expected.num_items)
    assert plans[1][0] == 1  # one program an SM: the first plan stands, one compile
    assert plans[four][0] == 2 and plans[four][1] > plans[1][1]  # re-planned for more programs
    # a count that changes with every plan's arguments: the last plan stands, reported for the
    # count it was made for, after split_k.PLANS compiles
    compiles.clear()
    monkeypatch.setattr(planner, "loaded_binary", stand_in(
        lambda items: (128, 50_000) if items == plans[1][1] else (255, 200_000), None))
    launch = split_k.prepare(inputs, *inputs.new_outputs())
    # (plans for 1, 4, 1: the third stands, reported as made for one, not for the four it reads)
    assert len(compiles) == split_k.PLANS and launch.config["resident"] == 1
    assert launch.config["num_items"] == plans[1][1]
