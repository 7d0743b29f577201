"""The DSL scorecard: one line per backend of a run, from the run's rows and from the code. Speed
(its fastest variant per problem against the fastest vendor kernel, and against the size-matched
read), verdicts, what it can express (its declared capabilities), what it costs to write (lines
of kernel code, comments and blank lines apart) and to run (first call, host launch, tuning).
Every renderer shows the same table (``results.render_markdown``, ``harness.html``)."""

from __future__ import annotations

import io
import statistics
import tokenize
from pathlib import Path

from harness import results
from impls import registry
from specs.problem import DTYPE_SHORT

SCORE_NOTE = ("Scorecard: per backend, its fastest passing variant per problem against the "
              "fastest vendor kernel there (median, worst; > 1: faster) and against a pure read "
              "of the same bytes ('% read', median and worst: how near the size-matched limit) "
              "and of the same rows in the problem's own layout ('% layout', median); "
              "its verdicts; what it takes (declared capabilities: layouts, dtypes, head dims, "
              "pages, fp8 caches, query tokens, windows, caps); lines of code per variant (its own "
              "+ what its variants share in the backend's folder, comments, docstrings and blank "
              "lines apart; a vendor's: its adapter); median first call (compilation included), "
              "median host launch time, and the autotuner's time in all.")
C_SOURCES = (".cu", ".cuh", ".c", ".h", ".cpp")


def _c_code(text: str) -> str:
    """C/CUDA source with its comments blanked, lines kept: one pass over strings, character
    literals, ``//`` and ``/* */`` (a ``//`` or ``/*`` inside a string is code)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":  # a string or character literal, escapes included
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def code_lines(path: Path) -> int:
    """Lines holding code in a Python or C/CUDA source: comments, docstrings and blank lines
    apart."""
    text = path.read_text()
    if path.suffix in C_SOURCES:
        return sum(bool(line.strip()) for line in _c_code(text).splitlines())
    lines: set[int] = set()
    previous = tokenize.NEWLINE  # a string that opens a logical line is a docstring
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT,
                        tokenize.DEDENT, tokenize.ENDMARKER):
            if tok.type in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                previous = tokenize.NEWLINE
            continue
        if not (tok.type == tokenize.STRING and previous == tokenize.NEWLINE):
            lines.update(range(tok.start[0], tok.end[0] + 1))
        previous = tok.type
    return len(lines)


def backend_lines(backend: str) -> dict[str, tuple[int, int]] | None:
    """Per algorithm of ``backend``: (lines of its own module and same-named sources, lines of
    the folder's shared sources). None for a backend outside ``impls/``."""
    impls = [i for i in registry.all_impls() if i.backend.name == backend and i.module]
    if not impls:
        return None
    own_files: dict[str, list[Path]] = {}
    for impl in impls:
        module = registry.ROOT / (impl.module.replace(".", "/") + ".py")
        if not module.is_file() or registry.ROOT / "impls" not in module.parents:
            return None
        own_files[impl.algorithm] = [p for p in module.parent.iterdir()
                                     if p.stem == module.stem and (p.suffix == ".py" or p.suffix in C_SOURCES)]
    folder = next(iter(own_files.values()))[0].parent
    mine = {p for files in own_files.values() for p in files}
    shared = sum(code_lines(p) for p in folder.iterdir()
                 if p not in mine and p.name != "__init__.py" and (p.suffix == ".py" or p.suffix in C_SOURCES))
    return {algorithm: (sum(map(code_lines, files)), shared) for algorithm, files in own_files.items()}


def supports(backend: str) -> str:
    """What a backend declares it takes, over its algorithms and layouts, in a few words."""
    on = {(i, layout) for i in registry.all_impls() if i.backend.name == backend and i.caps
          for layout in i.caps.layouts}
    if not on:
        return ""
    caps = [i.caps.on(layout) for i, layout in on]
    layouts = sorted({layout for _, layout in on})
    dtypes = sorted({DTYPE_SHORT.get(d, d) for c in caps for d in c.dtypes})
    kv = sorted({d.replace("float8_", "") for c in caps for d in c.kv_dtypes})
    if any(c.head_dims for c in caps):
        dims = "head dims " + ",".join(map(str, sorted({d for c in caps for d in (c.head_dims or ())})))
    else:
        multiple = min(c.head_dim_multiple for c in caps)
        dims = f"head dim {min(c.min_head_dim for c in caps)}-{max(c.max_head_dim for c in caps)}" + \
            (f" (x{multiple})" if multiple > 1 else "")
    pages = min(c.page_size_multiple for c in caps)
    parts = ["/".join(layouts), "/".join(dtypes), dims]
    if "paged" in layouts and pages > 1:
        parts.append(f"pages x{pages}")
    if kv:
        parts.append("fp8 KV " + "/".join(kv))
    if (q := max(c.max_q_len for c in caps)) > 1:
        parts.append(f"q_len <= {q}")
    if any(c.windows for c in caps):
        parts.append("windows")
    if any(c.softcaps for c in caps):
        parts.append("caps")
    return ", ".join(parts)


def code_facts(backends) -> dict[str, dict]:
    """What the scorecard reads from the code, per backend, as the run's provenance keeps it (a
    report of an old run then shows the code that ran, not today's): lines per algorithm and
    what it declares it takes. A backend whose sources cannot be read has no entry."""
    facts = {}
    for name in backends:
        try:
            facts[name] = {"lines": backend_lines(name), "takes": supports(name)}
        except (OSError, SyntaxError, tokenize.TokenError, UnicodeDecodeError, KeyError):
            continue
    return facts


def _median(values) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def scorecard(rows: list[dict], prov: dict | None = None) -> tuple[list[str], list[list[str]]]:
    """The table (header, body): DSL backends first, then vendor libraries. The code's facts
    from the run's provenance; for a run from before it kept them, from the checkout as it is
    now, marked '(now)'."""
    groups = results.by_backend(rows)
    kept = (prov or {}).get("code")
    facts = kept if kept is not None else code_facts(groups)
    body = []
    for name in sorted(groups, key=lambda b: (any(r.get("vendor") for r in groups[b]), b)):
        group = results.summarised(groups[name])  # the spread's repeats once
        vendor = any(r.get("vendor") for r in group)
        ratios = [r["vs_vendor"] for r in results.against_vendors(group)]
        timed = results.fastest_by_problem(group, results.measured_key)
        reads = [r["pct_read"] for r in timed.values() if r.get("pct_read") is not None]
        layout = [r["pct_layout_read"] for r in timed.values() if r.get("pct_layout_read") is not None]
        counts = {s: sum(r["status"] == s for r in group) for s in results.STATUSES}
        verdicts = " ".join(f"{n} {s}" for s, n in counts.items() if n)
        lines = (facts.get(name) or {}).get("lines")
        code = ", ".join(f"{a} {own}+{shared}" for a, (own, shared) in lines.items()) if lines else ""
        code += " (now)" if code and kept is None else ""
        tuning = sum(r.get("tuning_s") or 0 for r in group)
        body.append([name, "vendor" if vendor else "DSL",
                     "" if vendor or not ratios else f"{statistics.median(ratios):.2f}x",
                     "" if vendor or not ratios else f"{min(ratios):.2f}x",
                     results._fmt(_median(reads), ".0f"), results._fmt(min(reads) if reads else None, ".0f"),
                     results._fmt(_median(layout), ".0f"),
                     verdicts, (facts.get(name) or {}).get("takes", ""),
                     ("adapter " if vendor and code else "") + code,
                     results._fmt(_median(r.get("first_call_ms") for r in group), ".0f"),
                     results._fmt(_median(r.get("launch_us") for r in group), ".1f"),
                     f"{tuning:.1f}" if tuning else ""])
    return ["backend", "kind", "vs vendor (median)", "worst", "% read (median)", "worst % read",
            "% layout (median)",
            "verdicts", "takes", "code lines (own+shared)", "1st call ms", "launch us",
            "tuning s"], body
