"""scripts/ncu_source_regions.py: ncu's source page summed by loop, on a page made for the purpose
(columns wider than their values, a header wrapped over lines, a nested loop, a source that
fills its column to one space before the next) and on a page ncu wrote (481.20's CuPy split kernel, committed)."""
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "scripts"))
import ncu_source_regions as regions  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "results/nvidia-h200/2026-11-29-numba-tc/run/ncu-cupy-source-481.20.txt"


def made_page() -> str:
    """Address, Source, and three columns whose names wrap over two header lines."""
    widths = [18, 30, 6, 6, 6]
    sep = " ".join("-" * w for w in widths)
    head = [["Address", "Source", "Warp S", "Instru", "stall_"],
            ["", "", "tall S", "ctions", "wait"],
            ["", "", "amplin", " Execu", ""],
            ["", "", "g (All", "ted", ""],
            ["", "", " Sampl", "", ""],
            ["", "", "es)", "", ""]]
    body = [  # (address, source, samples, instructions, wait samples)
        (0x100, "MOV R1, R2", 1, 10, 1),
        (0x110, "LDS R3, [R1]", 4, 100, 2),  # outer loop 0x110-0x150, inner 0x120-0x130
        (0x120, "FFMA R4, R3, R3, R4", 8, 400, 0),
        (0x130, "@P0 BRA 0x120", 2, 400, 0),
        (0x140, "STG.E.LONG.NAME.FILLING [R6],R", 3, 100, 3),  # 30 wide: one space to the next
        (0x150, "@P1 BRA 0x110", 1, 100, 1),
        (0x160, "EXIT", 1, 10, 0)]

    def row(cells):
        return " ".join(str(c).ljust(w) for c, w in zip(cells, widths))
    lines = ["==PROF== noise", sep, "Kernel Name        decode_kernel", sep]
    lines += [row(h) for h in head]
    for a, src, s, n, wait in body:
        lines.append(row([f"{a:#x}", src, s, n, wait]))
    return "\n".join(lines) + "\n"


def test_regions_of_a_made_page_sum_each_loop_nested_and_what_lies_outside(tmp_path):
    page = regions.parse(made_page())[0]
    assert page.kernel == "decode_kernel" and len(page.lines) == 7
    assert page.lines[0].values == {"Warp Stall Sampling (All Samples)": 1, "Instructions Executed": 10,
                                    "stall_wait": 1}
    found = regions.loops(page)
    assert [(r.first, r.last, r.depth) for r in found] == [(0x110, 0x150, 0), (0x120, 0x130, 1)]
    text = regions.summary(page, top=2)
    total = 10 + 100 + 400 + 400 + 100 + 100 + 10
    assert f"{total} warp instructions executed, 20 stall samples" in text
    assert "loop +0x10-+0x50" in text and "  loop +0x20-+0x30" in text  # offsets, nested indented
    inner = next(line for line in text.splitlines() if "loop +0x20-+0x30" in line)
    assert f"{800 / total * 100:5.1f}%" in inner and " 50.0%" in inner  # 800 instructions, 10 samples
    outside = next(line for line in text.splitlines() if line.startswith("outside every loop"))
    assert outside.split()[3:5] == ["2", "20"]  # MOV and EXIT
    assert "FFMA R4, R3, R3, R4" in text.split("most stall samples:")[1]
    path = tmp_path / "page.txt"
    path.write_text(made_page())
    res = subprocess.run([sys.executable, "scripts/ncu_source_regions.py", str(path), "--kernel", "nope"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "no source page of kernel 'nope'" in res.stderr


def test_regions_of_a_page_ncu_wrote_match_its_own_totals():
    """481.20's split kernel: 3.0 M warp instructions (ncu's InstructionStats said 3,009,824 on
    another run of the same kernel), the merge's element loop 38 % of them."""
    page = regions.parse(PAGE.read_text(errors="replace"))[0]
    total = sum(line.values[regions.INSTRUCTIONS] for line in page.lines)
    assert 2.95e6 < total < 3.05e6
    merge = next(r for r in regions.loops(page) if r.first - page.lines[0].address == 0x75a0)
    share = sum(line.values[regions.INSTRUCTIONS] for line in page.lines
                if merge.first <= line.address <= merge.last) / total
    assert 0.37 < share < 0.39
