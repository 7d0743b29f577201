"""Gluon's warp-specialized one-pass kernel (impls.gluon._ws) on the CPU: where its rule would take
it, how a config asks for it or keeps it off, what it refuses before any build, and the launch it
makes (its compile for sm_90 is tests/test_triton_sm90.py's). Its GPU runs and the A/Bs that put
both rules on for paged caches (split-K's where the head dim's tiles are wide) and left dense
caches to the tile kernels are in results/nvidia-h200/2026-11-28-wide-drafts."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from specs.inputs import make_inputs
from specs.problem import DecodeProblem, ProblemError

pytest.importorskip("triton.experimental.gluon")
from triton.runtime.jit import JITFunction  # noqa: E402

from impls.gluon import _ws, one_pass, split_k  # noqa: E402
from impls.gluon._common import pick_launch_config  # noqa: E402
from impls.gluon import BACKEND  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
H200 = dict(l2_bytes=60 << 20, sms=132)
REGISTERED = ROOT / "results/nvidia-h200/2026-11-28-wide-drafts/next/ws_paged.json"
# 128 rows a KV head (group 16 x 8 draft tokens), head dim 256, 64 sequences x 4 KV heads of 4k
WIDE = DecodeProblem(64, 4, 256, (4096,) * 64, q_len=8, layout="paged")


def draft(head_dim, layout="dense"):
    """A long two-sequence draft of 128 rows a KV head (group 16 x 8 tokens), K/V beyond L2."""
    return DecodeProblem(32, 2, head_dim, (65536, 40000), q_len=8, layout=layout)


def registered_configs(name, split):
    """(problem, the rule's config or None) for each draft of a registered set."""
    problems = [DecodeProblem.from_dict(d) for d in json.loads((REGISTERED.parent / name).read_text())]
    return [(p, _ws.ws_config(p, None, **H200, split=split)) for p in problems]


def test_the_rule_takes_the_registered_drafts_and_leaves_what_the_design_does_not_pay_on():
    picks = [DecodeProblem.from_dict(d) for d in json.loads(REGISTERED.read_text())]
    assert len(picks) == 12 and all(_ws.fits(p, **H200) for p in picks)
    assert _ws.fits(WIDE, **H200)
    off = [DecodeProblem(64, 4, 256, (60000,) + (1000,) * 63, q_len=8),  # dense, one long tail
           DecodeProblem(64, 8, 256, (4096,) * 64, q_len=8, layout="paged"),  # 64 rows: one consumer's
           DecodeProblem(64, 4, 128, (4096,) * 64, q_len=8),  # head dim 128
           DecodeProblem(64, 4, 256, (4096,) * 64, q_len=8, kv_dtype="float8_e4m3fn"),  # fp8
           DecodeProblem(64, 4, 256, (4096,) * 8, q_len=8),  # 32 programs on 132 SMs
           DecodeProblem(64, 4, 256, (128,) * 64, q_len=8)]  # 33 MB of K/V: within L2
    assert not any(_ws.fits(p, **H200) for p in off)


@pytest.mark.parametrize("name, impl, seeds, picks", [
    ("ws_paged.json", "gluon/one-pass", "720:800",
     ["--fits", "impls.gluon._ws:fits", "--layout", "paged", "--min-programs", "132"]),
    ("wss_paged.json", "gluon/split-k", "800:880",
     ["--fits", "impls.gluon._ws:pays_split", "--layout", "paged", "--max-programs", "131"]),
    # the TMA loader's registered sets: dense drafts where the design pays
    ("ws_dense.json", "gluon/one-pass", "880:960",
     ["--fits", "impls.gluon._ws:pays", "--layout", "dense", "--min-programs", "132"]),
    ("wss_dense.json", "gluon/split-k", "960:1040",
     ["--fits", "impls.gluon._ws:pays_split", "--layout", "dense", "--max-programs", "131"]),
    # split-K's rule narrowed to wide head-dim tiles, both layouts
    ("wsw_dense.json", "gluon/split-k", "1040:1120",
     ["--fits", "impls.gluon._ws:pays_split_wide", "--layout", "dense", "--max-programs", "131"]),
    ("wsw_paged.json", "gluon/split-k", "1120:1200",
     ["--fits", "impls.gluon._ws:pays_split_wide", "--layout", "paged", "--max-programs", "131"]),
    # split-K on dense caches with 64-token tiles where they fit (the tile rule's set), and one
    # pass on dense caches it runs balanced
    ("wst_dense.json", "gluon/split-k", "1200:1280",
     ["--fits", "impls.gluon._ws:pays_split_wide_tile", "--max-programs", "131"]),
    ("wsb_dense.json", "gluon/one-pass", "1280:1360",
     ["--fits", "impls.gluon._ws:pays_dense_balanced", "--min-programs", "132"]),
    # split-K on dense caches where both tile conditions hold (tiles_pay)
    ("wsd_dense.json", "gluon/split-k", "1360:1440",
     ["--fits", "impls.gluon._ws:pays_split_tiles", "--layout", "dense", "--max-programs", "131"]),
    # the sets of the consumers' overlap (removed: ws-run/overlap/), what main's rules take
    ("wso.json", "gluon/one-pass", "1440:1520",
     ["--fits", "impls.gluon._ws:fits", "--min-programs", "132"]),
    ("wsos.json", "gluon/split-k", "1520:1600",
     ["--fits", "impls.gluon._ws:fits_split", "--max-programs", "131"]),
])
def test_the_registered_drafts_are_what_the_rules_pick_from_their_seeds(tmp_path, name, impl, seeds,
                                                                        picks):
    """The paged-only rules' A/B sets (next/ws_paged.json, next/wss_paged.json) and the TMA
    loader's (next/ws_dense.json, next/wss_dense.json) are reproduced by
    scripts/pick_problems.py with the rules' predicates: the same 12 problems in the same order
    (the first sets, ws.json and ws_split.json, were picked by the rules before they were narrowed
    to paged caches), and the sets of split-K's rule narrowed to wide head-dim tiles (wsw_*)."""
    out = tmp_path / name
    res = subprocess.run([sys.executable, "scripts/pick_problems.py", str(out), impl, "--seeds",
                          seeds, "--limit", "12", "--q-len", "8", *picks],
                         cwd=ROOT, text=True, capture_output=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": "."})
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(out.read_text()) == json.loads((REGISTERED.parent / name).read_text())


def test_the_rule_decides_only_where_it_is_on_and_no_config_says_otherwise(monkeypatch):
    monkeypatch.setattr(_ws, "BY_RULE", {"one-pass": False, "split-k": False})
    assert _ws.ws_config(WIDE, None, **H200) is None
    monkeypatch.setattr(_ws, "BY_RULE", {"one-pass": True, "split-k": False})
    assert _ws.ws_config(WIDE, None, **H200, split=True) is None
    assert _ws.ws_config(WIDE, None, **H200) == _ws.ws_config(WIDE, {"WARP_SPEC": 1}, **H200)
    assert _ws.ws_config(WIDE, None, l2_bytes=1 << 30, sms=132) is None  # K/V within L2
    # a config of the one-pass kernel's own (a tile, warps) or warp_spec 0 keeps it
    for config in ({"WARP_SPEC": 0}, {"BLOCK_N": 32}, {"num_warps": 4}, {"DENSE_TMA": 0},
                   {"DIM_SPLIT": 0}):
        assert _ws.ws_config(WIDE, config, **H200) is None, config


def test_a_config_asks_for_it_and_a_reported_config_replays():
    cfg = _ws.ws_config(WIDE, {"WARP_SPEC": 1}, **H200)
    assert cfg["BLOCK_N"] == _ws.WS_BLOCK_N and cfg["NUM_STAGES"] == _ws.WS_STAGES
    assert cfg["IS_PAGED"] and cfg["PAGE_SIZE"] == 16 and cfg["ROW_SPANS"]
    shown = BACKEND.space.from_kernel(_ws.reported(cfg))
    assert shown["warp_spec"] == 1 and shown["block_h"] == 128 and shown["num_warps"] == 4
    replay = BACKEND.space.to_kernel({k: v for k, v in shown.items() if k in BACKEND.space.names})
    assert _ws.ws_config(WIDE, replay, **H200) == cfg
    # a head dim in two tiles by rule (144 = 128 + 16), and a page size neither dividing nor
    # divided by the tile (table lookups a row)
    two = _ws.ws_config(DecodeProblem(32, 2, 144, (900,) * 8, q_len=8), {"WARP_SPEC": 1}, **H200)
    assert (two["HEAD_DIM_PAD"], two["D_HI"]) == (128, 16)
    rows = _ws.ws_config(DecodeProblem(32, 2, 256, (900,) * 8, q_len=8, layout="paged",
                                       page_size=48), {"WARP_SPEC": 1}, **H200)
    assert rows["PAGE_SIZE"] == 0
    # a 64-token tile in a 2-slot ring, asked for, is what it launches and reports
    wide_tile = _ws.ws_config(WIDE, {"WARP_SPEC": 1, "BLOCK_N": 64, "NUM_STAGES": 2}, **H200)
    assert (wide_tile["BLOCK_N"], wide_tile["NUM_STAGES"]) == (64, 2)
    shown = BACKEND.space.from_kernel(_ws.reported(wide_tile))
    assert (shown["block_n"], shown["num_stages"]) == (64, 2)


@pytest.mark.parametrize("config, rule", [
    ({"WARP_SPEC": 2}, "must be 0 or 1"),
    ({"WARP_SPEC": 1, "BLOCK_N": 16}, r"takes BLOCK_N in \(32, 64\)"),
    ({"WARP_SPEC": 1, "NUM_STAGES": 5}, r"NUM_STAGES in \(2, 3, 4\)"),
    # head dim 256: three slots of 64-token K and V tiles and 128 query rows, 256 KB and barriers
    ({"WARP_SPEC": 1, "BLOCK_N": 64}, "264192 B of shared memory, more than a program has"),
    ({"WARP_SPEC": 1, "num_warps": 8}, "sets these itself"),
    ({"WARP_SPEC": 1, "DENSE_TMA": 2}, "DENSE_TMA=2: must be 0 or 1"),
    ({"WARP_SPEC": 1, "WGMMA": 0}, "sets these itself"),
])
def test_what_it_cannot_honour_is_refused_naming_the_rule(config, rule):
    with pytest.raises(ProblemError, match=rule):
        _ws.ws_config(WIDE, config, **H200)


def test_dense_tiles_by_tma_by_default_and_the_launch_passes_their_descriptors(monkeypatch):
    """A dense cache's tiles come by TMA (the loader's ``load_tma``: dense caches are in both
    variants' LAYOUTS), the launch passing the K/V descriptors of the rule's boxes (64 tokens at
    head dim 144, the head dim's two tiles); DENSE_TMA 0 asks for cp.async, paged tiles are always
    gathered, and DENSE_TMA named without WARP_SPEC is the tile kernels' choice, which keeps the
    rule off."""
    dense = DecodeProblem(32, 2, 144, (900, 70), q_len=8)
    assert _ws.ws_config(dense, {"WARP_SPEC": 1}, **H200)["DENSE_TMA"] == 1
    assert _ws.ws_config(dense, {"WARP_SPEC": 1, "DENSE_TMA": 0}, **H200)["DENSE_TMA"] == 0
    assert _ws.ws_config(WIDE, {"WARP_SPEC": 1, "DENSE_TMA": 1}, **H200)["DENSE_TMA"] == 0
    monkeypatch.setattr(_ws, "BY_RULE", {"one-pass": True, "split-k": True})
    assert _ws.ws_config(WIDE, {"DENSE_TMA": 0}, **H200) is None
    calls = []
    monkeypatch.setattr(JITFunction, "run", lambda self, *args, grid, warmup, **kw:
                        calls.append((self.__name__, args, kw)))
    inputs = make_inputs(dense, seed=0, device="cpu")
    out, lse = inputs.new_outputs()
    launch = one_pass.prepare(inputs, out, lse, config={"WARP_SPEC": 1})
    launch.run()
    (name, args, kw), = calls
    descs = [a for a in args if type(a).__name__ == "TensorDescriptor"]
    assert name == "ws_kernel" and kw["DENSE_TMA"] == 1 and launch.config["DENSE_TMA"] == 1
    assert [d.block_shape for d in descs] == [[1, 64, 1, 128]] * 2 + [[1, 64, 1, 16]] * 2


def test_fp8_caches_are_refused_before_any_build():
    fp8 = DecodeProblem(64, 4, 256, (4096,) * 8, q_len=8, kv_dtype="float8_e4m3fn")
    with pytest.raises(ProblemError, match="WARP_SPEC=1 needs 16-bit"):
        _ws.ws_config(fp8, {"WARP_SPEC": 1}, **H200)
    with pytest.raises(ProblemError, match="taken by the launcher"):  # never reaches the tile rule
        pick_launch_config(WIDE, {"WARP_SPEC": 1}, split=True)


def test_the_launch_takes_128_rows_a_program_within_the_register_file(monkeypatch):
    """The grid (KV heads x 128-row blocks, sequences), the kernel's register cap (the three
    partitions' setmaxnreg within 64K a program), and the config it reports. 160 rows: two blocks."""
    calls = []

    def record(self, *args, grid, warmup, **kwargs):
        calls.append((self.__name__, grid, kwargs))
        # a warmup's binary, for the one-pass launcher's register cap: 255 registers stand in
        return types.SimpleNamespace(n_regs=255, n_spills=0, _init_handles=lambda: None,
                                     metadata=types.SimpleNamespace(shared=0))
    monkeypatch.setattr(JITFunction, "run", record)
    problem = DecodeProblem(40, 2, 240, (300, 70, 90), q_len=8)  # group 20 x 8: 160 rows
    inputs = make_inputs(problem, seed=0, device="cpu")
    out, lse = inputs.new_outputs()
    launch = one_pass.prepare(inputs, out, lse, config={"WARP_SPEC": 1})
    launch.run()
    (name, grid, kwargs), = calls
    assert name == "ws_kernel" and grid == (2 * 2, 3)
    assert kwargs["maxnreg"] * 32 * 3 * _ws.PARTITION_WARPS.value <= 65536
    # the partitions' registers fit in what the cap leaves: the default consumer gets the rest
    assert 128 * (_ws.CONSUMER_REGS.value * 2 + _ws.LOADER_REGS.value) <= kwargs["maxnreg"] * 384
    assert launch.config["WARP_SPEC"] == 1 and launch.config["BLOCK_H"] == 128
    calls.clear()
    one_pass.prepare(inputs, out, lse).run()  # no config: the one-pass kernel
    assert {name for name, _, _ in calls} == {"decode_kernel"}


def test_split_k_takes_head_dim_tiles_that_pay_on_either_layout():
    """Split-K's rule leaves a head dim whose second tile is narrower than MIN_SPLIT_DIM_TILE
    (144 = 128 + 16, 160 = 128 + 32) to the tile kernels on both layouts; on paged caches it takes
    176 = 128 + 64 up to 256 (32-token tiles), on dense ones only where 64-token tiles fit too
    (176, 192: by TMA), not 208-256."""
    assert all(_ws.pays_split(draft(d, "dense"), **H200) for d in (144, 160, 176, 208, 256))
    assert not any(_ws.fits_split(draft(d, layout), **H200)
                   for d in (144, 160) for layout in ("paged", "dense"))
    assert all(_ws.fits_split(draft(d, "paged"), **H200) for d in (176, 192, 240, 256))
    assert [d for d in (176, 192, 208, 240, 256) if _ws.fits_split(draft(d, "dense"), **H200)] \
        == [176, 192]
    dense = _ws.ws_config(draft(176, "dense"), None, **H200, split=True)
    assert (dense["BLOCK_N"], dense["DENSE_TMA"]) == (64, 1)
    assert _ws.ws_config(draft(176, "paged"), None, **H200, split=True)["BLOCK_N"] == _ws.WS_BLOCK_N


def test_64_token_tiles_by_rule_where_they_fit_and_by_config_elsewhere(monkeypatch):
    """With the tile rule on (main), dense caches whose head-dim tiles come to 192 dims or fewer
    take 64-token tiles, wider ones and paged caches keep 32, and a config's tile wins; off, 32
    unless a config asks for 64. The predicate wst_dense.json was picked by takes narrow second
    tiles too, and no paged cache."""
    tiles = {d: _ws.ws_config(draft(d), {"WARP_SPEC": 1}, **H200)["BLOCK_N"] for d in (144, 192, 208)}
    assert tiles == {144: 64, 192: 64, 208: 32}
    assert _ws.ws_config(draft(144, "paged"), {"WARP_SPEC": 1}, **H200)["BLOCK_N"] == 32
    assert _ws.ws_config(draft(144), {"WARP_SPEC": 1, "BLOCK_N": 32}, **H200)["BLOCK_N"] == 32
    assert _ws.pays_split_wide_tile(draft(160), **H200)
    assert not any(_ws.pays_split_wide_tile(p, **H200) for p in (draft(208), draft(160, "paged")))
    monkeypatch.setattr(_ws, "WS_TILE_RULE", False)
    assert _ws.ws_config(draft(144), {"WARP_SPEC": 1}, **H200)["BLOCK_N"] == 32
    assert _ws.ws_config(draft(144), {"WARP_SPEC": 1, "BLOCK_N": 64}, **H200)["BLOCK_N"] == 64
    # split-K's dense drafts were measured on 64-token tiles only: without them, none
    assert not any(_ws.fits_split(draft(d), **H200) for d in (176, 192, 208, 256))
    assert _ws.fits_split(draft(176, "paged"), **H200)


def test_one_pass_takes_a_dense_batch_only_where_it_runs_it_balanced():
    """One pass's rule takes a dense batch whose rings fill and whose longest sequence is no tail
    (at most all programs' tokens over the SMs), and leaves a batch of 49-token sequences (two
    tiles, the ring never fills) and one long sequence among short ones; paged batches are taken
    as before."""
    even = DecodeProblem(64, 4, 256, (4096,) * 64, q_len=8)  # 256 programs of 4096 tokens
    short = even.replace(seq_lens=(49,) * 1024)  # still 200 MB of K/V, beyond the L2
    tail = even.replace(seq_lens=(60000,) + (1000,) * 63)  # 60k > 4 x 123k / 132
    assert _ws.balanced(even, 132) and _ws.fits(even, **H200)
    assert all(_ws.pays(p, **H200) for p in (short, tail))
    assert not _ws.balanced(short, 132) and not _ws.fits(short, **H200)
    assert not _ws.balanced(tail, 132) and not _ws.fits(tail, **H200)
    assert _ws.fits(tail.replace(layout="paged"), **H200)


def test_main_takes_the_drafts_whose_registered_a_b_held(monkeypatch):
    """The rules on main take what their A/Bs measured faster: every draft of wsd_dense.json
    (split-K, 64-token tiles by TMA) and of wsb_dense.json (one pass by TMA, 5 of them on 64-token
    tiles: their rings filled at 192 tokens); of wst_dense.json, the 7 drafts of head dims 176 and
    192, not the 5 of 144 and 160 (slower there)."""
    split_k = registered_configs("wsd_dense.json", True)
    one_pass = registered_configs("wsb_dense.json", False)
    assert all(c is not None and c["DENSE_TMA"] == 1 for _, c in split_k + one_pass)
    assert all(c["BLOCK_N"] == 64 for _, c in split_k)
    assert sorted(c["BLOCK_N"] for _, c in one_pass) == [32] * 7 + [64] * 5
    seen = registered_configs("wst_dense.json", True)
    assert sorted(p.head_dim for p, c in seen if c) == [176, 176, 176, 176, 192, 192, 192]
    assert all(p.head_dim in (144, 160) for p, c in seen if c is None)


def test_split_k_takes_it_on_few_programs_and_merges_the_pieces(monkeypatch):
    """Split-K's rule has no SM condition (its plan fills the SMs with items): 8 programs of a
    long draft take it where one-pass's does not. Forced (three pieces a sequence), the launch
    plans its items on 32-token tiles, 128 rows a program, and merges the pieces with the
    combine."""
    few = DecodeProblem(64, 4, 256, (65536, 40000), q_len=8, layout="paged")  # 8 pairs
    assert _ws.fits_split(few, **H200) and not _ws.fits(few, **H200)
    calls = []

    def record(self, *args, grid, warmup, **kwargs):
        calls.append((self.__name__, grid, kwargs))
    monkeypatch.setattr(JITFunction, "run", record)
    problem = DecodeProblem(40, 2, 240, (9000, 70), q_len=8, layout="paged")  # 160 rows
    inputs = make_inputs(problem, seed=0, device="cpu")
    out, lse = inputs.new_outputs()
    launch = split_k.prepare(inputs, out, lse, num_splits=3, config={"WARP_SPEC": 1})
    launch.run()
    assert [name for name, _, _ in calls] == ["ws_split_kernel", "combine_kernel"]
    (_, grid, kwargs) = calls[0]
    assert grid == (2 * 2, launch.config["num_items"]) and launch.config["num_items"] > 2
    assert kwargs["maxnreg"] == _ws.KERNEL_MAXNREG and launch.config["merges"] >= 1
    assert launch.config["WARP_SPEC"] == 1 and launch.config["resident"] == 1


@pytest.mark.parametrize("variant", ["one-pass", "split-k"])
@pytest.mark.parametrize("layout", ["dense", "paged"])
def test_the_search_space_reaches_it_where_every_other_knob_agrees(variant, layout):
    """The tuner and the conformance suite's search-space property draw from Space.configs:
    warp_spec 1 is taken by exactly the crossed configs whose other knobs are what the kernel
    sets itself (OWN) and whose tile and ring it takes within a program's shared memory (head dim
    256: 32-token tiles in 2-4 slots, 64-token ones in 2), one per head-dim split and, where the
    layout offers tma, per loader copy (dense tiles by TMA or cp.async), and refused, naming the
    rule, by the rest."""
    problem = WIDE if layout == "paged" else DecodeProblem(64, 4, 256, (4096,) * 64, q_len=8)
    taken = []
    for config in BACKEND.space.configs(variant, layout):
        if config.get("warp_spec") != 1:
            continue
        try:
            cfg = _ws.ws_config(problem, BACKEND.space.to_kernel(config), **H200,
                                split=variant == "split-k")
        except ProblemError as e:
            assert any(rule in str(e) for rule in ("sets these itself", "takes BLOCK_N in",
                                                   "more than a program has")), e
            continue
        taken.append((config["dim_split"], cfg["DENSE_TMA"], cfg["BLOCK_N"], cfg["NUM_STAGES"]))
        assert cfg["DENSE_TMA"] == config.get("tma", 0)
    copies = [(0, 0), (0, 1), (1, 0), (1, 1)] if layout == "dense" else [(0, 0), (1, 0)]
    rings = [(32, 2), (32, 3), (32, 4), (64, 2)]
    assert sorted(taken) == sorted(c + r for c in copies for r in rings)
