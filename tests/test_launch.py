"""The launch vocabulary (impls.launch): every DSL backend declares its knobs the same way, under
the same names, and a declared space crosses into configurations as it says."""

from __future__ import annotations

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls import registry
from impls.launch import KNOBS, Knob, Space
from specs.problem import ProblemError

DSLS = [b for b in registry.backends() if not b.vendor and b.name in
        {"triton", "gluon", "cupy", "numba", "tilelang", "helion"}]


def test_every_dsl_backend_declares_a_space_in_the_vocabulary():
    assert len(DSLS) == 6
    for backend in DSLS:
        names = backend.space.names
        assert names and set(names) <= set(KNOBS), backend.name
        assert "num_warps" in names, backend.name  # the one knob every DSL has
        for knob in backend.space.knobs:  # a tuner needs at least two values to choose from
            assert len(knob.values) >= 2, (backend.name, knob.name)
        assert set(backend.shown_config) <= {"chunk", "num_items", "merges", *KNOBS}, backend.name


def test_the_same_knob_has_the_same_name_in_every_dsl():
    """The tile and the pipeline depth: one name whatever the kernel calls it."""
    tiles = {b.name for b in DSLS if "block_n" in b.space.names}
    stages = {b.name for b in DSLS if "num_stages" in b.space.names}
    assert {"triton", "gluon", "tilelang", "helion"} <= tiles
    assert {"triton", "gluon", "cupy", "tilelang", "helion"} <= stages
    kernel_names = {k.kernel_name for b in DSLS for k in b.space.knobs if k.name == "num_stages"}
    assert kernel_names == {"num_stages", "NUM_STAGES", "STAGES"}  # translated at the boundary


def test_a_knob_outside_the_vocabulary_is_refused():
    with pytest.raises(ProblemError, match="not in the launch vocabulary"):
        Knob("BLOCK_N", (64,))
    with pytest.raises(ProblemError, match="named twice"):
        Space(Knob("num_warps", (4,)), Knob("num_warps", (8,)))


def test_space_crosses_what_applies():
    space = Space(Knob("tensor_cores", (1, 0)), Knob("num_stages", (2, 3), when={"tensor_cores": 1}),
                  Knob("merge", ("kernel", "fused"), variants=("split-k",)),
                  Knob("gather", ("page", "token"), layouts=("paged",)))
    assert space.configs("dense", "dense") == [{"tensor_cores": 1, "num_stages": 2},
                                               {"tensor_cores": 1, "num_stages": 3},
                                               {"tensor_cores": 0}]
    assert len(space.configs("split-k", "paged")) == 3 * 2 * 2
    assert space.to_kernel({"num_stages": 2}) == {"num_stages": 2}


def test_config_keys_translate_both_ways():
    space = Space(Knob("num_stages", (2, 3), param="STAGES"), Knob("tma", (0, 1), param="DENSE_TMA"))
    assert space.to_kernel({"num_stages": 3, "tma": 1}) == {"STAGES": 3, "DENSE_TMA": 1}
    assert space.from_kernel({"STAGES": 3, "DENSE_TMA": 1, "BLOCK_H": 16, "chunk": 256}) == \
        {"num_stages": 3, "tma": 1, "block_h": 16, "chunk": 256}
    with pytest.raises(ProblemError, match=r"unknown key\(s\) \['STAGES'\].*its knobs"):
        space.check({"STAGES": 3}, "x")


def test_pick_problems_writes_the_rule_s_picks_as_a_workload_file(tmp_path):
    """scripts/pick_problems.py: every pick is a held-out problem of the seeds asked, at the
    q_len asked, whose rule config holds the values asked; as many as the limit; a workload
    file the harness reads back."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    pytest.importorskip("triton")
    from impls.triton._common import pick_launch_config
    from specs import workloads

    out = tmp_path / "picks.json"
    res = subprocess.run([sys.executable, "scripts/pick_problems.py", str(out), "triton/one-pass",
                          "--seeds", "531:540", "--limit", "3", "--q-len", "8",
                          "--where", "BLOCK_H=128", "--where", "num_warps=8"],
                         cwd=Path(__file__).resolve().parent.parent, text=True,
                         capture_output=True, timeout=300,
                         env={**__import__("os").environ, "PYTHONPATH": "."})
    assert res.returncode == 0, res.stderr[-2000:]
    picks = workloads.load_file(out)
    assert len(picks) == 3 and res.stdout.splitlines()[-1] == "3"
    seeds = {p.replace(q_len=8).label() for s in range(531, 540)
             for p in workloads.heldout_problems(s) if min(p.seq_lens) >= 8}
    for p in picks:
        assert p.q_len == 8 and p.label() in seeds
        config = pick_launch_config(p, l2_bytes=60 << 20)
        assert (config["BLOCK_H"], config["num_warps"]) == (128, 8)
    assert json.loads(out.read_text())[0]["q_len"] == 8


def test_triton_split_ring_narrows_while_one_program_holds_an_sm():
    """Triton's paged split-K ring narrows (a stage, then half the tile) to the first config whose
    compiled kernel holds MIN_SPLIT_RESIDENT programs an SM, no further; a kernel its registers
    bind to one keeps the widest ring; a config that sets the ring, a dense cache or a ring of
    128 dims is left alone."""
    pytest.importorskip("triton")
    from impls import plan as planner
    from impls.triton import _common
    from specs import workloads

    wide = next(p for p in workloads.heldout_problems(481) if p.name.startswith("heldout481.16 "))
    calls = []

    def by_shared_memory(cfg):  # a stand-in for the compiled kernel: its ring alone bounds it
        calls.append((cfg["BLOCK_N"], cfg["num_stages"]))
        ring = cfg["num_stages"] * cfg["BLOCK_N"] * 2 * wide.kv_itemsize * (cfg["D_LO"] + cfg["D_HI"])
        return planner.residency(128, ring, cfg["num_warps"]), 0, None

    picked = _common.pick_launch_config(wide, None, 50 << 20, 132, split=True)
    assert (picked["BLOCK_N"], picked["num_stages"]) == (64, 3)  # one program an SM by its ring
    cfg, held = _common.split_launch_config(wide, None, 50 << 20, 132, by_shared_memory)
    assert calls == [(64, 3), (64, 2), (32, 2)] and held[0] >= _common.MIN_SPLIT_RESIDENT
    assert (cfg["BLOCK_N"], cfg["num_stages"]) == (32, 2) and cfg["PAGE_SIZE"] == wide.page_size
    calls.clear()  # registers bind it: the widest ring, every step tried

    def one(cfg):
        calls.append((cfg["BLOCK_N"], cfg["num_stages"]))
        return 1, 0, None
    cfg, held = _common.split_launch_config(wide, None, 50 << 20, 132, one)
    assert calls == [(64, 3), (64, 2), (32, 2)]
    assert (cfg["BLOCK_N"], cfg["num_stages"], held[0]) == (64, 3, 1)
    assert _common.pick_launch_config(wide, None, 50 << 20, 132, split=True, narrow=9) is None
    for config in ({"BLOCK_N": 64}, {"num_stages": 3}):  # the ring asked for stays
        calls.clear()
        cfg, held = _common.split_launch_config(wide, config, 50 << 20, 132, by_shared_memory)
        assert len(calls) == 1 and held[0] == 1
    calls.clear()  # two programs an SM already: nothing narrows

    def two(cfg):
        calls.append((cfg["BLOCK_N"], cfg["num_stages"]))
        return 2, 0, None
    cfg, held = _common.split_launch_config(wide, None, 50 << 20, 132, two)
    assert calls == [(64, 3)] and cfg == picked and held[0] == 2
    calls.clear()  # a ring of 128 dims stays (not measured narrowed)
    llama = wide.replace(num_q_heads=32, head_dim=128, name="llama")
    assert _common.pick_launch_config(llama, None, 50 << 20, 132, split=True)["D_LO"] == 128
    cfg, held = _common.split_launch_config(llama, None, 50 << 20, 132, by_shared_memory)
    assert len(calls) == 1
    calls.clear()  # a dense cache's ring stays
    dense = wide.replace(layout="dense", name="dense")
    cfg, held = _common.split_launch_config(dense, None, 50 << 20, 132, by_shared_memory)
    assert len(calls) == 1 and held[0] == 1
