"""8. Invalid inputs raise ``ProblemError`` naming the parameter, before any kernel runs.

Each case breaks one rule of the spec on otherwise valid, drawn inputs and calls the
implementation's entry point with outputs pre-filled with a sentinel: the error must name the
parameter, and the outputs must still hold the sentinel (nothing was launched).
"""

from __future__ import annotations

import dataclasses
import re

import pytest
import torch
from hypothesis import given, settings

from conformance.strategies import fit, problems, seeds
from conformance.test_properties import cases
from specs.inputs import make_inputs
from specs.problem import DecodeProblem, ProblemError

SENTINEL = 777.0


def _other_dtype(t: torch.Tensor) -> torch.dtype:
    return torch.float16 if t.dtype != torch.float16 else torch.bfloat16


def _replace(inputs, **changes):
    return dataclasses.replace(inputs, **changes), {}


# name -> (layouts it applies to, how to break the inputs, what the message must name)
BREAKERS = {
    "page index past the pool": ("paged", lambda i: _set_table(i, i.k.shape[0]), "block_table["),
    "negative page index": ("paged", lambda i: _set_table(i, -1), "block_table["),
    "block table too short": ("paged", lambda i: _replace(
        i, block_table=i.block_table[:, :i.problem.max_pages_per_seq - 1]), "block_table has"),
    "block table not int32": ("paged", lambda i: _replace(i, block_table=i.block_table.long()),
                              "block_table"),
    "k dtype differs from q": ("both", lambda i: _replace(i, k=i.k.to(_other_dtype(i.k))), "k.dtype"),
    "v shape differs": ("both", lambda i: _replace(i, v=i.v[..., :-1]), "v.shape"),
    "q heads wrong": ("both", lambda i: _replace(i, q=i.q[:, :-1]), "q.shape"),
    "seq_lens tensor disagrees": ("both", lambda i: _replace(i, seq_lens=i.seq_lens + 1), "seq_lens"),
    "seq_lens not int32": ("both", lambda i: _replace(i, seq_lens=i.seq_lens.long()), "seq_lens"),
    "dense cache shorter than a length": ("dense", lambda i: _shorter(i), "k.shape"),
    "v longer than k": ("dense", lambda i: _replace(i, v=torch.cat([i.v, i.v[:, :1]], dim=1)),
                        "v.shape"),
    "q head_dim not contiguous": ("both", lambda i: _replace(i, q=_strided(i.q)), "q.stride(-1)"),
    "unknown launch option": ("both", lambda i: (i, {"bogus_option": 1}), "launch option"),
}


def _shorter(inputs):
    n = inputs.problem.max_seq_len - 1
    return _replace(inputs, k=inputs.k[:, :n], v=inputs.v[:, :n])


def _strided(t):
    """The same values with the head_dim axis at stride 2."""
    return torch.stack([t, t], dim=-1)[..., 0]


def _set_table(inputs, value):
    table = inputs.block_table.clone()
    table[0, 0] = value
    return _replace(inputs, block_table=table)


def _breaker_cases():
    for param in cases("invalid_inputs"):
        impl, layout = param.values
        for name, (breaker_layout, _, _) in sorted(BREAKERS.items()):
            if breaker_layout == "both" or breaker_layout in ({layout} if layout else impl.layouts):
                yield pytest.param(impl, layout, name, id=f"{param.id}-{name}", marks=param.marks)


def _sentinel_outputs(inputs):
    out, lse = inputs.new_outputs()
    out.fill_(SENTINEL)
    lse.fill_(SENTINEL)
    return out, lse


def _untouched(out, lse) -> None:
    assert bool((out.float() == out.new_tensor(SENTINEL).float()).all()), "out was written"
    assert bool((lse == SENTINEL).all()), "lse was written"


@pytest.mark.parametrize("impl,layout,breaker", list(_breaker_cases()))
@settings(max_examples=3)
@given(problem=problems(), seed=seeds)
def test_invalid_inputs_rejected_before_launch(impl, layout, breaker, problem, seed):
    breaker_layout, breaks, must_name = BREAKERS[breaker]
    problem = fit(problem, impl, layout if breaker_layout == "both" else breaker_layout)
    inputs, options = breaks(make_inputs(problem, seed))
    out, lse = _sentinel_outputs(inputs)
    with pytest.raises(ProblemError, match=re.escape(must_name)):
        impl.prepare(inputs, out, lse, **options).run()
    _untouched(out, lse)


def _small(impl, layout) -> DecodeProblem:
    return fit(DecodeProblem(4, 2, 64, (5, 9), page_size=4), impl, layout)


@pytest.mark.parametrize("impl,layout", cases("invalid_inputs",
                                              lambda i, layouts: "num_splits" in i.options))
@pytest.mark.parametrize("num_splits", [0, -3, 1.5, True])
def test_invalid_num_splits(impl, layout, num_splits):
    inputs = make_inputs(_small(impl, layout), 0)
    out, lse = inputs.new_outputs()
    with pytest.raises(ProblemError, match="num_splits"):
        impl.prepare(inputs, out, lse, num_splits=num_splits)


@pytest.mark.parametrize("impl,layout", cases("invalid_inputs",
                                              lambda i, layouts: "config" in i.options))
@pytest.mark.parametrize("config", [{"NO_SUCH_PARAMETER": 1}, "block_n=64"])
def test_invalid_config(impl, layout, config):
    """The ``config`` launch option (tuning overrides) names what it does not accept."""
    inputs = make_inputs(_small(impl, layout), 0)
    out, lse = _sentinel_outputs(inputs)
    with pytest.raises(ProblemError, match="config"):
        impl.prepare(inputs, out, lse, config=config).run()
    _untouched(out, lse)
