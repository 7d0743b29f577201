"""Every Triton and Gluon kernel compiles for sm_90 (no GPU needed), the 16-bit attention kernels
put both products on the tensor cores (mma in the PTX), and Gluon's copy K/V by TMA (dense) or
cp.async (gathered), so a syntax, type or layout error is caught in CI rather than on the GPU
(Gluon has no interpreter: this is all of it the CPU can check)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from specs.problem import DecodeProblem

pytest.importorskip("triton")
ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("backend", ["triton", "gluon"])
def test_all_kernels_compile_for_sm90(backend):
    res = subprocess.run([sys.executable, "-m", "tests.triton_sm90", backend], cwd=ROOT, text=True,
                         capture_output=True, timeout=900, env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    lines = res.stdout.splitlines()
    names = {line.split()[0] for line in lines}
    assert names == {"decode_kernel", "split_kernel", "combine_kernel"}
    attention = [l for l in lines if not l.startswith("combine") and ("*bf16" in l or "*fp16" in l)]
    assert attention and all("mma=True" in l for l in attention), "\n".join(attention)
    # the combine's tiles of a row's dims cut in blocks (32 and 64 dims: a float and two a lane)
    cut = {re.search(r"'BLOCK_D': (\d+)", l)[1] for l in lines if l.startswith("combine")}
    assert {"32", "64"} <= cut, cut
    # fp8 caches built too, their products still on the tensor cores
    scaled = [l for l in attention if "'KV_SCALED': True" in l]
    assert scaled and all("mma=True" in l for l in scaled), "\n".join(scaled)
    # bf16 from fp8 by bit operations, not through fp16 (two conversions per value more)
    widened = [l for l in scaled if "*bf16" in l]
    assert widened and all("f16_to_bf16=False" in l for l in widened), "\n".join(widened)
    if backend == "triton":  # the fused merge counts finished pieces with acquire-release atomics
        fused = [l for l in lines if l.startswith("split_kernel") and "'FUSED_MERGE': True" in l]
        assert fused and all("acq_rel=True" in l for l in fused), "\n".join(fused)
        # paged tiles are pipelined as deep as dense ones (block-table entries a tile ahead): the
        # same shared memory as the dense kernel of the same shape, whatever the page size
        shared = {}
        for line in attention:
            shape = re.sub(r"'(IS_PAGED|PAGE_SIZE|FUSED_MERGE)': [^,}]+", "", line.split(" shared=")[0])
            shared.setdefault(shape, {})["'IS_PAGED': True" in line] = int(re.search(r"shared=(\d+)", line)[1])
        pairs = [(shape, s) for shape, s in shared.items() if len(s) == 2]
        assert pairs and all(s[True] >= s[False] for _, s in pairs), pairs
    if backend == "gluon":  # the explicit ring: dense tiles by TMA, gathered ones by cp.async
        tma = [l for l in attention if "'IS_PAGED': False" in l and "'DENSE_TMA': 1" in l]
        gathered = [l for l in attention if l not in tma]
        assert tma and all("tma=True" in l and "cp.async=False" in l for l in tma), "\n".join(tma)
        assert gathered and all("cp.async=True" in l and "tma=False" in l for l in gathered), \
            "\n".join(gathered)
        # the per-row table lookups (a page size neither dividing nor divided by the tile) and a
        # deeper ring compile too
        assert any("'IS_PAGED': True" in l and "'PAGE_SIZE': 0" in l for l in attention)
        assert any("'NUM_STAGES': 3" in l for l in attention)




def test_gluon_warpgroup_mma_kernels_compile_without_spills():
    """``WGMMA=1``: both products on the warpgroup MMA (wgmma in the PTX), the query rows and
    K/V tiles read from shared memory, 64 or 128 rows a program, and no register spill at head
    dims up to 256 (ptxas for sm_90a)."""
    res = subprocess.run([sys.executable, "-m", "tests.triton_sm90", "wgmma"], cwd=ROOT, text=True,
                         capture_output=True, timeout=900, env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    attention = [l for l in res.stdout.splitlines() if not l.startswith(("combine", "edge"))]
    # a 3-deep ring on 128 rows at head dim 256: the tile narrowed within a program's shared memory
    assert any(l.startswith("edge") and "'NUM_STAGES': 3" in l for l in res.stdout.splitlines())
    assert len(attention) >= 12, res.stdout
    assert all("wgmma=True" in l and l.endswith(" spills=0") for l in attention), "\n".join(attention)
    assert {re.search(r"'BLOCK_H': (\d+)", l)[1] for l in attention} == {"64", "128"}
    assert any("tma=True" in l for l in attention) and any("cp.async=True" in l for l in attention)
    assert any("'D_HI': 16" in l for l in attention)


def test_gluon_warp_specialized_kernels_compile_without_spills():
    """``WARP_SPEC=1`` (impls.gluon._ws), one-pass and split-K: three warpgroups with the
    registers the module gives each (setmaxnreg: the loader's, the consumers'), every copy group
    fenced before it is marked ready, cp.async copies (or TMA, the default on dense caches) and
    both products on the warpgroup MMA, the loader's code within its registers (SASS), and no
    register spill at head dims 144 (two tiles) to 256, dense and paged, fp16 and bf16, and with
    64-token tiles at 144 (ptxas for sm_90a); split-K's partials merged by the combine kernel."""
    from impls.gluon import _ws
    res = subprocess.run([sys.executable, "-m", "tests.triton_sm90", "ws"], cwd=ROOT, text=True,
                         capture_output=True, timeout=900, env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    every = res.stdout.splitlines()
    lines = [l for l in every if l.startswith("ws_")]
    assert {l.split()[0] for l in lines} == {"ws_kernel", "ws_split_kernel"}, res.stdout
    assert len(lines) == 22 and {l.split()[0] for l in every} - {"ws_kernel", "ws_split_kernel"} \
        == {"combine_kernel"}, res.stdout
    assert all("mma_waits=[0]" in l for l in lines), res.stdout
    # the three dense problems' tiles by TMA too, the default (paged ones are always gathered)
    assert sum("'DENSE_TMA': 1" in l for l in lines) == 8, res.stdout
    # 64-token tiles at head dim 144 by rule, both loaders, one-pass and split-K
    assert sum("'BLOCK_N': 64, " in l and "'NUM_STAGES': 3" in l for l in lines) == 4, res.stdout
    for line in lines:
        copies = "cp.async=False tma=True" if "'DENSE_TMA': 1" in line else "cp.async=True tma=False"
        assert "wgmma=True" in line and copies in line, line
        assert "fenced=True" in line and line.endswith(" spills=0"), line
        regs = {int(n) for n in re.search(r"setmaxnreg=\[([\d, ]+)\]", line)[1].split(",")}
        assert {_ws.LOADER_REGS.value, _ws.CONSUMER_REGS.value} <= regs, line
        # the loader's code within the registers it keeps (ptxas allocates for the whole kernel)
        assert int(re.search(r"loader_registers=(\d+)", line)[1]) <= _ws.LOADER_REGS.value, line
    assert any("'D_HI': 16" in l for l in lines) and any("'PAGE_SIZE': 0" in l for l in lines)
    assert any("*fp16" in l for l in lines)


@pytest.mark.parametrize("backend", ["triton", "gluon"])
def test_the_launch_rule_picks_tiles_that_do_not_spill(backend):
    """Each rule on an H100's SM count, for 16 to 128 query rows a KV head (drafts on MQA and
    GQA, a group of 32, head dim 64): every kernel it picks compiles with no register spill
    (ptxas for sm_90a). Before the rules counted the rows' registers, Gluon's 32 rows took a
    128-token tile (255 registers, 32-140 B of spill stores: what Nsight Compute showed on the
    H100, 0.43x of FA3 there) and Triton's 64 rows too (56-60 B)."""
    res = subprocess.run([sys.executable, "-m", "tests.triton_sm90", "spills", backend], cwd=ROOT,
                         text=True, capture_output=True, timeout=900, env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    lines = [line for line in res.stdout.splitlines() if line.startswith("decode_kernel")]
    assert len(lines) >= 4 and any("'BLOCK_H': 32" in line for line in lines)
    if backend == "triton":  # rows past the q tile on two warpgroups: 64, and 128 past 128 dims
        for rows in (64, 128):
            assert any(f"'BLOCK_H': {rows}," in line and "'num_warps': 8" in line for line in lines)
        # short programs sharing an SM: four of each compiled kernel fit one SM's shared memory
        shared = [int(line.split("shared=")[1].split()[0]) for line in lines if "'BLOCK_N': 16," in line]
        from impls import plan as planner
        assert shared and all(n <= planner.shared_bytes_each(4) for n in shared), shared
    assert all(line.endswith(" spills=0") for line in lines), "\n".join(lines)
    if backend == "gluon":  # split-K's 32 rows on two warpgroups at head dim 240: up to 64 B of spill
        # stores, measured faster than 16 rows on one (results/nvidia-h200/2026-11-26-combine)
        wide = [line for line in res.stdout.splitlines()
                if line.startswith("split_kernel") and "'num_warps': 8" in line]
        assert len(wide) == 2 and any("'IS_PAGED': True" in line for line in wide), res.stdout[-3000:]
        assert all("'BLOCK_H': 32" in line for line in wide), res.stdout[-3000:]
        assert all(int(line.rsplit("spills=", 1)[1]) <= 64 for line in wide), "\n".join(wide)


def test_gluon_split_k_takes_two_warpgroups_where_one_holds_16_rows_of_a_head_beyond_l2():
    """Gluon's split kernel takes 8 warps (32 rows a program) where 4 hold only a 16-row tile of
    a KV head's rows, its K/V exceed L2 and the tile keeps an mma's 8 columns a warp; not in
    one-pass, not where L2 holds the K/V, not at head dim 128, not on a 16-token tile, not over a
    config's num_warps (results/nvidia-h200/2026-11-26-combine). mma_v2's rule: 16-bit caches
    there take the warpgroup MMA by rule (``wgmma_rule``), fp8 caches keep it."""
    from impls.gluon._common import pick_launch_config

    l2 = 60 * 2**20
    draft = DecodeProblem(20, 2, 240, (30001,) * 8, layout="paged", q_len=8)  # 80 rows, 490 MB
    assert pick_launch_config(draft, sharers=1, l2_bytes=l2, split=True)["WGMMA"] == 1
    v2 = {"WGMMA": 0}

    def pick(problem, config=v2, **kw):
        return pick_launch_config(problem, config, **kw)
    cfg = pick(draft, sharers=1, l2_bytes=l2, split=True)
    assert (cfg["num_warps"], cfg["BLOCK_H"], cfg["BLOCK_N"]) == (8, 32, 64)
    fp8 = pick(draft.replace(kv_dtype="float8_e4m3fn"), None, sharers=1, l2_bytes=l2, split=True)
    assert (fp8["WGMMA"], fp8["num_warps"], fp8["BLOCK_H"]) == (0, 8, 32)
    assert pick(draft, sharers=1, l2_bytes=l2)["num_warps"] == 4  # one-pass
    assert pick(draft, sharers=1, l2_bytes=draft.kv_bytes, split=True)["num_warps"] == 4
    assert pick(draft, sharers=4, l2_bytes=l2, split=True)["BLOCK_N"] == 16
    assert pick(draft, sharers=4, l2_bytes=l2, split=True)["num_warps"] == 4
    assert pick(draft, {**v2, "num_warps": 4}, sharers=1, l2_bytes=l2, split=True)["num_warps"] == 4
    d128 = draft.replace(num_q_heads=16, num_kv_heads=2, head_dim=128)  # 64 rows; 4 warps hold 32
    assert pick(d128, sharers=1, l2_bytes=0, split=True)["num_warps"] == 4


def test_a_register_capped_launch_runs_the_kernel_its_cap_was_checked_on():
    """Over a register-bound stand-in on a grid of many waves, every launcher takes the rule's cap
    (one program more: 3 a SM, 168 registers a thread at 4 warps) and launches the binary the cap
    was checked on; split-K's fused merge, whose binary is specialised on the plan it sizes,
    takes none."""
    res = subprocess.run([sys.executable, "-m", "tests.triton_sm90", "cap"], cwd=ROOT, text=True,
                         capture_output=True, timeout=600, env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    lines = res.stdout.splitlines()
    ruled = [line for line in lines if " rule " in line or line.startswith("triton/one-pass fused")]
    assert len(ruled) == 5, lines
    assert all(line.endswith("min_blocks=3 maxnreg=168 checked=True") for line in ruled), lines
    assert "triton/split-k fused min_blocks=0 maxnreg=None checked=False" in lines


def test_residency_report_gives_what_the_gpu_read(tmp_path):
    """``python -m tests.triton_sm90 residency``: Triton's split kernel at head dim 224 on pages
    of 4, each ring of its narrowing, compiled for sm_90a on the CPU, holds the programs an SM
    an H200 read from the same kernels' binaries (results/nvidia-h200/2026-11-29-triton-share:
    64 x 3 stages, 1; 2026-11-29-triton-resident/run-check: 64 x 2, 2; 32 x 2, 3)."""
    import json
    file = tmp_path / "wide.json"
    file.write_text(json.dumps([DecodeProblem(56, 8, 224, (4000, 4000), layout="paged",
                                              page_size=4, name="wide").to_dict()]))
    res = subprocess.run([sys.executable, "-m", "tests.triton_sm90", "residency", "triton", "split-k",
                          str(file)], cwd=ROOT, text=True, capture_output=True, timeout=900,
                         env={**os.environ, "TRITON_INTERPRET": "0"})
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-4000:]
    held = {(int(re.search(r"'BLOCK_N': (\d+)", line)[1]), int(re.search(r"'num_stages': (\d+)", line)[1])):
            int(line.rsplit(" ", 1)[1]) for line in res.stdout.splitlines() if "programs an SM" in line}
    assert held == {(64, 3): 1, (64, 2): 2, (32, 2): 3}, res.stdout
