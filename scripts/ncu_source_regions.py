"""Where a kernel issues and stalls, loop by loop: ncu's source page (SASS, a line an
instruction, from ``ncu --section SourceCounters --page source --print-source sass``) summed over
each loop (a backward branch and its target) and over what lies outside every loop, with each
region's share of the instructions executed and of the warp-stall samples, and its largest stall
reasons (the page's ``stall_*`` columns). A development tool beside ``tests/cupy_sass.py`` (which
counts SASS statically): this one reads what ran.

    python scripts/ncu_source_regions.py PAGE [--kernel NAME] [--top N] [--all]

PAGE is ncu's text output (other lines, such as the harness's own, are skipped); ``--kernel``
picks one kernel's page where it holds several (default: the first); ``--top``: the N lines
with the most stall samples, with their loop; ``--all``: loops that never ran too. Addresses
are offsets from the kernel's first instruction.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field

SEPARATOR = re.compile(r"^-+( -+)+\s*$")
BRANCH = re.compile(r"\bBRA(?:\.\S+)?\s+(?:`\()?0x([0-9a-f]+)")
INSTRUCTIONS = "Instructions Executed"
SAMPLES = "Warp Stall Sampling (All Samples)"


@dataclass
class Line:
    address: int
    source: str
    values: dict[str, float]


@dataclass
class Page:
    kernel: str
    lines: list[Line] = field(default_factory=list)


def _number(text: str) -> float | None:
    text = text.strip().replace(",", "")
    try:
        return float(text)
    except ValueError:
        return None


def parse(text: str) -> list[Page]:
    """The kernels' source pages in ``text``: each line's address, SASS and numeric columns
    (named as ncu's header names them, its wrapped fragments joined)."""
    rows = text.splitlines()
    pages, i = [], 0
    while i < len(rows):
        if not rows[i].startswith("Kernel Name"):
            i += 1
            continue
        kernel = rows[i].split(None, 2)[2].strip() if len(rows[i].split()) > 2 else "?"
        sep = next((j for j in range(i + 1, len(rows)) if SEPARATOR.match(rows[j])), None)
        if sep is None:
            break
        spans = [(m.start(), m.end()) for m in re.finditer(r"-+", rows[sep])]
        head = sep + 1
        end = head
        while end < len(rows) and not rows[end].startswith("0x"):
            end += 1
        names = ["".join(r[a:b].ljust(b - a) for r in rows[head:end]) for a, b in spans]
        names = [re.sub(r"\s+", " ", n).strip() for n in names]
        page = Page(kernel)
        j = end
        while j < len(rows) and rows[j].startswith("0x"):
            row = rows[j]
            values = {}
            for name, (a, b) in zip(names[2:], spans[2:]):
                v = _number(row[a:b + 1])
                if v is not None:
                    values[name] = v
            page.lines.append(Line(int(row.split()[0], 16), row[spans[1][0]:spans[1][1]].strip(), values))
            j += 1
        pages.append(page)
        i = j
    return pages


@dataclass
class Region:
    first: int
    last: int
    depth: int = 0


def loops(page: Page) -> list[Region]:
    """Each backward branch's loop (its target to the branch), outermost first, nested ones after
    the loop that holds them, with their depth."""
    found = []
    for line in page.lines:
        m = BRANCH.search(line.source)
        if m and int(m[1], 16) < line.address:
            found.append((int(m[1], 16), line.address))
    found = sorted(set(found), key=lambda r: (r[0], -r[1]))
    regions = []
    for first, last in found:
        depth = sum(1 for a, b in found if (a, b) != (first, last) and a <= first and last <= b)
        regions.append(Region(first, last, depth))
    return regions


def summary(page: Page, top: int = 10, every: bool = False) -> str:
    base = page.lines[0].address
    total_instr = sum(line.values.get(INSTRUCTIONS, 0) for line in page.lines) or 1
    total_samples = sum(line.values.get(SAMPLES, 0) for line in page.lines) or 1
    stall_names = sorted({n for line in page.lines for n in line.values if n.startswith("stall_")})

    def totals(chosen: list[Line]) -> tuple[float, float, str]:
        instr = sum(line.values.get(INSTRUCTIONS, 0) for line in chosen)
        samples = sum(line.values.get(SAMPLES, 0) for line in chosen)
        reasons = sorted(((sum(line.values.get(n, 0) for line in chosen), n) for n in stall_names),
                         reverse=True)
        shown = ", ".join(f"{n.removeprefix('stall_')} {100 * v / samples:.0f} %"
                          for v, n in reasons[:3] if v and samples)
        return instr, samples, shown

    regions = loops(page)
    out = [f"kernel {page.kernel}: {len(page.lines)} SASS lines, {total_instr:.0f} warp instructions "
           f"executed, {total_samples:.0f} stall samples",
           f"{'region (offsets)':36s} {'SASS':>5s} {'instructions':>12s} {'share':>6s} "
           f"{'samples':>8s} {'share':>6s}  largest stall reasons"]
    in_loop = set()
    for r in regions:
        chosen = [line for line in page.lines if r.first <= line.address <= r.last]
        in_loop.update(id(line) for line in chosen)
        instr, samples, shown = totals(chosen)
        if not instr and not every:
            continue
        label = "  " * r.depth + f"loop +{r.first - base:#x}-+{r.last - base:#x}"
        out.append(f"{label:36s} {len(chosen):5d} {instr:12.0f} {100 * instr / total_instr:5.1f}% "
                   f"{samples:8.0f} {100 * samples / total_samples:5.1f}%  {shown}")
    outside = [line for line in page.lines if id(line) not in in_loop]
    instr, samples, shown = totals(outside)
    out.append(f"{'outside every loop':36s} {len(outside):5d} {instr:12.0f} "
               f"{100 * instr / total_instr:5.1f}% {samples:8.0f} {100 * samples / total_samples:5.1f}%  "
               f"{shown}")
    if top:
        out.append(f"\nthe {top} lines with the most stall samples:")
        hot = sorted(page.lines, key=lambda line: -line.values.get(SAMPLES, 0))[:top]
        for line in hot:
            inner = [r for r in regions if r.first <= line.address <= r.last]
            where = f"loop +{inner[-1].first - base:#x}" if inner else "outside loops"
            out.append(f"  +{line.address - base:#07x} {line.values.get(SAMPLES, 0):6.0f}  "
                       f"{line.source[:60]:60s} ({where})")
    return "\n".join(out)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("page")
    parser.add_argument("--kernel")
    parser.add_argument("--top", type=int, default=10)
    parser.add_argument("--all", action="store_true")
    args = parser.parse_args(argv)
    with open(args.page, errors="replace") as f:
        pages = parse(f.read())
    if args.kernel:
        pages = [p for p in pages if args.kernel in p.kernel]
    if not pages or not pages[0].lines:
        print(f"{args.page}: no source page" + (f" of kernel {args.kernel!r}" if args.kernel else ""),
              file=sys.stderr)
        return 2
    if INSTRUCTIONS not in pages[0].lines[0].values:
        print(f"{args.page}: no '{INSTRUCTIONS}' column (ncu's SourceCounters section)", file=sys.stderr)
        return 2
    print(summary(pages[0], args.top, args.all))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
