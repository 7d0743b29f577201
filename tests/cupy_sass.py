"""What a warp issues per tile in CuPy's tensor-core loop, counted in the SASS of its kernels as
nvcc compiles them for sm_90 (no GPU needed), at a revision REV against the working tree:

    python -m tests.cupy_sass REV PROBLEM [PROBLEM ...]

PROBLEM is a held-out draft as SEED.INDEX (``specs.workloads.heldout_problems(SEED)[INDEX]``) or
a ``DecodeProblem(...)`` expression. For each, both kernels (split-K's, FUSED_MERGE=1, and the
one pass) at the launch config the rule of each tree picks: the main loop's instructions (the
largest backward branch that holds an HMMA), an inner rolled loop counted as often as it runs
(its trip count: a slice's 16-byte copies over its threads), the merge's element loop (the first
loop past it that stores to global memory, or the innermost such loop in it; unrolled bodies are
counted whole), ptxas's registers and spill bytes.
A static count, not a profile: it says what a change removes from the loop, not what that saves
in time (a warp that waits on memory issues nothing whatever its count)."""
import argparse
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from tests.sm90_tools import nvcc_cubin, triton_tool

ROOT = Path(__file__).resolve().parent.parent


def tree_at(rev: str, into: Path) -> Path:
    """impls/ and specs/ as ``rev`` has them, unpacked into ``into``."""
    into.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", rev, "impls", "specs"], cwd=ROOT, capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into


def compile_kernel(root: Path, problem_text: str, split: bool, tmp: Path) -> dict:
    """The kernel's defines, registers, spills and main-loop count, built from ``root``'s
    sources (in a child Python, so each tree's modules are its own)."""
    code = f"""
import json, sys
sys.path.insert(0, {str(root)!r})
import impls
from impls.cupy import _build
from specs.problem import DecodeProblem
from specs.workloads import heldout_problems
p = {problem_text}
d = _build.pick_launch_config(p, None, split={split})
if {split}: d.setdefault("FUSED_MERGE", 1)
print(json.dumps(dict(defines=d, source=_build.source({'"split_k.cu"' if split else '"one_pass.cu"'}),
                      label=p.label(), vecs=p.head_dim * p.kv_itemsize // 16)))
"""
    out = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout)
    defines = out["defines"]
    if not defines.get("TENSOR_CORES"):
        return dict(label=out["label"], defines=defines)
    res = nvcc_cubin(out["source"], defines, tmp / "k.cubin")
    if res.returncode:
        raise SystemExit(res.stderr[-2000:])
    regs = max(int(n) for n in re.findall(r"Used (\d+) registers", res.stderr))
    spills = max(int(n) for n in re.findall(r"(\d+) bytes spill stores", res.stderr))
    sass = subprocess.run([triton_tool("cuobjdump"), "-sass", "-fun", "split_kernel" if split else "decode_kernel",
                           str(tmp / "k.cubin")], capture_output=True, text=True, check=True).stdout
    lines = [(int(m[1], 16), line) for line in sass.splitlines()
             if (m := re.match(r"\s+/\*([0-9a-f]{4,6})\*/", line))]
    loops = [(int(m[1], 16), at) for at, line in lines
             if (m := re.search(r"BRA (0x[0-9a-f]+)", line)) and int(m[1], 16) < at]
    main = max((loop for loop in loops if any("HMMA" in line for at, line in lines
                                              if loop[0] <= at <= loop[1])),
               key=lambda loop: loop[1] - loop[0])
    body = [line for at, line in lines if main[0] <= at <= main[1]]
    threads = 32 * defines["BLOCK_H"] // 16  # a slice's threads: a warp per row tile
    trips = -(-16 * out["vecs"] // threads)  # the old loop's: a slice's 16 rows of copies
    inner = [(at - target) // 16 + 1 for target, at in loops if main[0] < target and at < main[1]]
    per_tile = len(body) + sum(n * (trips - 1) for n in inner)
    # merge_warps' element loop: the first loop past the main one that stores to global memory,
    # or the innermost such loop inside it (its body: as many elements as nvcc unrolled it to)
    stores = sorted((target, at) for target, at in loops if target > main[1]
                    and any("STG" in line for a, line in lines if target <= a <= at))
    inner = [loop for loop in stores if stores[0][0] <= loop[0] and loop[1] <= stores[0][1]]
    merge = min((at - target) // 16 + 1 for target, at in inner) if inner else 0
    return dict(label=out["label"], defines=defines, regs=regs, spills=spills, per_tile=per_tile,
                merge=merge)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("rev")
    ap.add_argument("problems", nargs="+")
    args = ap.parse_args()
    print("| problem | kernel | launch | per tile, REV | working tree | change | merge, an element "
          "| registers | spills |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        old_root = tree_at(args.rev, Path(tmp) / "old")
        for text in args.problems:
            if re.fullmatch(r"\d+\.\d+", text):
                seed, index = text.split(".")
                text = f"heldout_problems({seed})[{index}]"
            for split in (True, False):
                old = compile_kernel(old_root, text, split, Path(tmp))
                new = compile_kernel(ROOT, text, split, Path(tmp))
                kernel = "split" if split else "one pass"
                if "per_tile" not in old or "per_tile" not in new:
                    print(f"| {new['label']} | {kernel} | CUDA cores | | | | | | |")
                    continue
                d = new["defines"]
                change = (new["per_tile"] - old["per_tile"]) / old["per_tile"] * 100
                print(f"| {new['label']} | {kernel} | {d['BLOCK_H']} rows, {d['NUM_WARPS']} warps, "
                      f"{d['STAGES']} stages | {old['per_tile']} | {new['per_tile']} | {change:+.0f} % "
                      f"| {old['merge']} -> {new['merge']} "
                      f"| {old['regs']} -> {new['regs']} | {old['spills']} -> {new['spills']} |")


if __name__ == "__main__":
    main()
