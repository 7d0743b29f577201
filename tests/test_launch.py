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
