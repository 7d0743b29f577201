"""Serving scale on the CPU: inputs in memory proportional to the tokens held, the same inputs on
every device and layout, a tolerance that grows with length as derived, problems of the old
format, and saved cases from elsewhere (corrupt or tampered ones refused, the rest replayed)."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import impls  # noqa: F401  (CPU interpreters before any DSL import)
import numpy as np
import pytest
import torch

from harness import cases, results
from specs.inputs import input_bytes, make_inputs
from specs.problem import MAX_SEQ_LEN, DecodeProblem, ProblemError, Query
from specs.reference import reference
from specs.tolerance import U32, compare, sum_error
from specs.workloads import named, ragged_lengths

ROOT = Path(__file__).resolve().parent.parent

# 512 sequences, one of 131,072 tokens, the rest short: as a float32 batch x longest logical cache
# (the old generator's) K and V alone would be 512 x 131,136 x 64 x 4 B x 2 = 34 GB
SERVING_SCRIPT = """
import resource, sys, torch
sys.path.insert(0, {root!r})
from specs.inputs import make_inputs
from specs.problem import DecodeProblem
from specs.reference import reference
from specs.workloads import ragged_lengths
lens = (131072,) + ragged_lengths(511, 64, 4096, seed=5)
p = DecodeProblem(4, 1, 64, lens, layout="paged", page_size=16, dtype="bfloat16")
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
inputs = make_inputs(p, 0, "cpu")
ref = reference(inputs)
assert bool(torch.isfinite(ref.out).all())
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(before * 1024, after * 1024, inputs.nbytes, p.kv_bytes, inputs.block_table.nbytes)
"""


def test_a_serving_batch_builds_its_paged_inputs_in_bounded_host_memory():
    res = subprocess.run([sys.executable, "-c", SERVING_SCRIPT.format(root=str(ROOT))],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    before, after, held, kv, table = map(int, res.stdout.split())
    # the pages in use (each last one partly empty), 1/8 more poison pages, and the block table
    # [batch, longest / page_size] the kernels take (as large as the KV at this tiny head size)
    assert held - table < 1.5 * kv
    assert after < 2 * 2**30, f"peak RSS {after / 2**30:.2f} GiB"  # torch itself included
    assert after - before < 1 * 2**30, f"inputs and reference took {(after - before) / 2**30:.2f} GiB"


def test_inputs_are_the_same_in_every_layout_and_for_a_permuted_batch():
    p = DecodeProblem(8, 2, 64, (5, 17, 40), layout="paged", page_size=3)
    paged, dense = make_inputs(p, 3), make_inputs(p.replace(layout="dense"), 3)
    repaged = make_inputs(p.replace(page_size=16), 3, page_seed=11)
    assert not torch.equal(paged.block_table[:, :1], repaged.block_table[:, :1]) or p.batch < 2
    for b, n in enumerate(p.seq_lens):
        for got in (dense.rows(b, 0, n), repaged.rows(b, 0, n)):
            assert all(torch.equal(x, y) for x, y in zip(paged.rows(b, 0, n), got))
    permuted = make_inputs(p.replace(seq_lens=(40, 5, 17)), 3, seq_ids=[2, 0, 1])
    assert torch.equal(permuted.q, paged.q[[2, 0, 1]])
    assert all(torch.equal(x, y) for x, y in zip(permuted.rows(0, 0, 40), paged.rows(2, 0, 40)))


def test_the_input_size_is_known_before_drawing():
    for p in named(["serving", "cpu"]):
        if p.total_tokens < 5000:
            assert make_inputs(p, 0, "cpu").nbytes == input_bytes(p)
    paged = [p for p in named(["serving"]) if p.layout == "paged"]
    assert all(input_bytes(p) < 1.2 * p.kv_bytes for p in paged)  # pages in use + 1/8 poison pages


# ---- the tolerance ---------------------------------------------------------------------------
def test_the_summation_term_grows_with_length_as_derived():
    lengths = torch.tensor([1.0, 256, 4096, 65536, 1 << 20], dtype=torch.float64)
    eta = sum_error(lengths)
    assert bool((eta[1:] > eta[:-1]).all())
    # linear in L beyond a few hundred tokens, with float32's unit roundoff as the slope
    assert math.isclose(float(eta[-1] - eta[-2]) / float(lengths[-1] - lengths[-2]), U32, rel_tol=1e-3)
    assert math.isclose(float(eta[-1]), 1 / 16, rel_tol=0.01)


def test_an_error_a_long_sequence_may_make_fails_a_short_one():
    """The same absolute LSE error, allowed at 64k tokens by the float32 sum's bound, fails at
    64 tokens; an output error the bound allows at 64k fails at 64 too."""
    p = DecodeProblem(4, 1, 64, (64, 65536), layout="dense", dtype="float32")
    inputs = make_inputs(p, 0)
    ref = reference(inputs)
    out, lse = ref.out.float(), ref.lse.float()
    assert compare(p, out, lse, ref).passed
    step = 0.5 * float(-torch.log1p(-sum_error(65536)))
    shifted = lse.clone()
    shifted[1] += step
    assert compare(p, out, shifted, ref).passed
    shifted[0] += step
    c = compare(p, out, shifted, ref)
    assert not c.passed and "lse(0, " in c.summary()
    eta = float(sum_error(65536))
    bumped = out.double().clone()
    bumped[:, :, 0] += 0.5 * eta * (ref.v_weight[:, :, 0] + ref.out[:, :, 0].abs())
    c = compare(p, bumped.float(), lse, ref)
    assert not c.passed and all(line.startswith(("out(0,", "...")) for line in c.details)


# ---- problems of the old format ----------------------------------------------------------------
OLD_ROW_SPEC = {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128, "seq_lens": [4096],
                "layout": "paged", "page_size": 16, "dtype": "bfloat16", "sm_scale": None, "name": "llama3-8b"}


def test_problems_of_the_old_format_still_load():
    p = DecodeProblem.from_dict(OLD_ROW_SPEC)
    assert (p.num_q_heads, p.layout, p.page_size, p.dtype) == (32, "paged", 16, "bfloat16")
    assert DecodeProblem.from_dict({k: OLD_ROW_SPEC[k] for k in ("num_q_heads", "num_kv_heads", "head_dim",
                                                                 "seq_lens")}).layout == "dense"
    grouped = {"query": {"num_q_heads": 32, "num_kv_heads": 8, "head_dim": 128},
               "cache": {"layout": "paged"}, "seq_lens": [4096], "name": "llama3-8b"}
    assert DecodeProblem.from_dict(grouped) == p
    assert DecodeProblem.from_dict(p.to_dict()) == p and p.query.group_size == 4
    # a row written before a field existed compares equal with one written after
    assert results.problem_key({"spec": {k: v for k, v in OLD_ROW_SPEC.items() if k != "sm_scale"}}) == \
        results.problem_key({"spec": p.to_dict()})
    with pytest.raises(ProblemError, match="unknown field"):
        DecodeProblem.from_dict({**OLD_ROW_SPEC, "no_such_field": 1})
    with pytest.raises(ProblemError, match="head_dim belongs to query"):
        DecodeProblem.from_dict({**grouped, "cache": {"head_dim": 64}})
    assert p.replace(query=Query(8, 1, 64)).query == Query(8, 1, 64)


def test_lengths_past_what_the_tolerance_can_judge_are_refused():
    assert float(sum_error(MAX_SEQ_LEN)) < 0.51  # about 1/2: the bound still means something
    with pytest.raises(ProblemError, match=r"seq_lens\[1\]=8388609: must be <= 8388608"):
        DecodeProblem(8, 2, 64, (4, MAX_SEQ_LEN + 1))


def test_each_part_validates_itself_and_states_its_bytes():
    p = DecodeProblem(8, 2, 64, (5, 17), layout="paged", page_size=16)
    assert p.bytes_moved == p.query.bytes(2) + p.cache.bytes(p.seq_lens, p.query)
    assert p.cache.label() == "paged16" and p.query.label() == "8/2/64"
    with pytest.raises(ProblemError, match="layout='ragged'"):
        p.replace(layout="ragged")
    with pytest.raises(ProblemError, match="num_kv_heads=3 must divide"):
        p.replace(num_kv_heads=3)


# ---- saved cases from elsewhere ------------------------------------------------------------
@pytest.fixture
def saved(tmp_path):
    """Two saved problems, each with one output (the reference itself, as a kernel's)."""
    root = tmp_path / "cases"
    for lens in ((9, 33), (20,)):
        p = DecodeProblem(4, 2, 32, lens, layout="paged", page_size=8, dtype="bfloat16")
        inputs = make_inputs(p, 1, "cpu")
        ref = reference(inputs)
        cases.save(root, "triton/paged", inputs, ref.out.to(torch.bfloat16), ref.lse.float(),
                   {"status": "PASS", "lse_rounded_sum": False, "lse_err_ratio": 0.0})
    return root


def _corrupt_truncated(folder: Path):
    path = folder / "inputs" / "k.npy"
    path.write_bytes(path.read_bytes()[:-100])
    return "k.npy", "truncated"


def _corrupt_trailing(folder: Path):
    path = folder / "inputs" / "k.npy"
    path.write_bytes(path.read_bytes() + b"\0" * 64)
    return "k.npy", "trailing bytes"


def _corrupt_object_array(folder: Path):
    np.save(folder / "inputs" / "q.npy", np.array([{"x": 1}], dtype=object), allow_pickle=True)
    return "q.npy", "object array"


def _corrupt_zip(folder: Path):
    path = folder / "triton_paged" / "out.npy"
    with open(path, "wb") as f:
        np.savez(f, out=np.zeros(3))
    return "out.npy", "not a plain .npy"


def _corrupt_fortran(folder: Path):
    path = folder / "triton_paged" / "out.npy"
    np.save(path, np.asfortranarray(np.load(path)))
    return "out.npy", "Fortran order"


def _corrupt_lse_removed(folder: Path):
    (folder / "triton_paged" / "lse.npy").unlink()
    return "lse.npy", "missing"


def _corrupt_shape(folder: Path):
    path = folder / "triton_paged" / "out.npy"
    np.save(path, np.load(path)[:, :1])
    return "out.npy", "meta.json says"


def _corrupt_dtype(folder: Path):
    path = folder / "inputs" / "v.npy"
    np.save(path, np.load(path).astype(np.float32))
    return "v.npy", "meta.json says"


def _corrupt_meta(folder: Path):
    path = folder / "inputs" / "meta.json"
    meta = json.loads(path.read_text())
    del meta["seed"]
    path.write_text(json.dumps(meta))
    return "meta.json", "missing field(s) ['seed']"


@pytest.mark.parametrize("corrupt", [_corrupt_truncated, _corrupt_trailing, _corrupt_object_array,
                                     _corrupt_zip, _corrupt_fortran, _corrupt_lse_removed,
                                     _corrupt_shape, _corrupt_dtype, _corrupt_meta])
def test_a_corrupt_case_is_refused_and_the_others_still_replay(saved, corrupt):
    first, second = sorted(f for f in saved.iterdir())
    name, rule = corrupt(first)
    found, disagree, refused = cases.replay(saved)
    assert len(refused) == 1 and name in refused[0] and rule in refused[0], refused
    assert str(first) in refused[0]
    assert [f["replay"] for f in found] == ["PASS"] and disagree == 0  # the other case


def test_replay_exit_code_says_some_cases_were_refused(saved):
    first = sorted(saved.iterdir())[0]
    _corrupt_truncated(first)
    res = subprocess.run([sys.executable, "-m", "harness", "replay", str(saved)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 4, res.stdout + res.stderr
    assert "refused" in res.stderr and "k.npy" in res.stderr and "PASS" in res.stdout
    shutil.rmtree(first)
    res = subprocess.run([sys.executable, "-m", "harness", "replay", str(saved)], cwd=ROOT,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr


def test_saved_rows_are_read_through_the_layout(tmp_path):
    p = DecodeProblem(4, 2, 32, (9, 33), layout="paged", page_size=8)
    inputs = make_inputs(p, 2, "cpu")
    ref = reference(inputs)
    cases.save(tmp_path, "x/paged", inputs, ref.out.to(inputs.q.dtype), ref.lse.float(), {"status": "PASS"})
    (folder,) = tmp_path.iterdir()
    back = cases.load_inputs(folder, torch.device("cpu"))
    for b, n in enumerate(p.seq_lens):
        assert all(torch.equal(x, y) for x, y in zip(back.rows(b, 0, n), inputs.rows(b, 0, n)))
    assert torch.allclose(reference(back).out, ref.out)


def test_ragged_lengths_reach_the_serving_tail():
    lens = ragged_lengths(512, 1024, 131072, seed=532, sigma=1.5)
    assert max(lens) > 32 * 1024 and min(lens) >= 16
