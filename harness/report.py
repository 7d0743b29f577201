"""``python -m harness report RESULTS`` and ``python -m harness compare OLD NEW``.

``report`` re-renders a saved run (its folder, or its results.json) as tables (results.md,
results.csv and the printed text, recomputing ranks and vendor ratios) and as PNG plots, one
per model shape and layout: latency and % of the measured bandwidth against seq_len (one panel
per batch size) and against batch (one panel per seq_len), one line per backend and variant,
each point with its 95 % interval; ragged batches get a bar chart of their own.

``compare`` matches the rows of two runs (same implementation, same problem) and classifies each
change of the primary figure: ``slower`` / ``faster`` when the two 95 % intervals are apart and
the change exceeds ``--threshold`` (2 % by default), else ``same`` (within the noise); a PASS that
became FAIL or ERROR is a regression too. Exit status 1 when anything regressed. Timings of
different GPUs are not compared (an error unless ``--any-gpu``).
"""

from __future__ import annotations

import json
import lzma
import re
import shlex
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from harness import results, stats
from specs import workloads
from specs.problem import ProblemError

THRESHOLD = 0.02  # relative change below which two timings count as the same, intervals aside


PACKED = ".xz"  # a committed run's data files, compressed (scripts/pack_results.py)


def _found(folder: Path, name: str) -> Path | None:
    """``folder/name``, or its packed ``name.xz``, whichever is there."""
    return next((p for p in (folder / name, folder / (name + PACKED)) if p.exists()), None)


def _text(path: Path) -> str:
    return lzma.decompress(path.read_bytes()).decode() if path.suffix == PACKED else path.read_text()


def script_main(main, *args) -> None:
    """Exit with what ``main(*args)`` returns (a script over run folders, scripts/); a folder or
    file that is not a run's (``ProblemError``) as one line, ``error: ...``, and status 2, not a
    traceback."""
    try:
        status = main(*args)
    except ProblemError as error:
        print(f"error: {error}", file=sys.stderr)
        status = 2
    sys.exit(status)


def load(path: Path) -> tuple[dict, list[dict]]:
    """(provenance, rows) of a run folder or a results.json file (packed as .xz or not)."""
    path = Path(path)
    file = _found(path, "results.json") if path.is_dir() else path
    if file is not None and file.exists():
        try:
            data = json.loads(_text(file))
            prov, rows = data["provenance"], data["rows"]
        except (ValueError, KeyError, TypeError, lzma.LZMAError) as error:
            raise ProblemError(f"{path}: not a run's results (a results.json with provenance and "
                               f"rows): {type(error).__name__}: {error}") from None
    elif path.is_dir() and (lines := _found(path, "rows.jsonl")):  # ended before rendering
        try:
            prov = json.loads((path / "provenance.json").read_text())
            rows = [json.loads(line) for line in _text(lines).splitlines() if line.strip()]
        except (OSError, ValueError, lzma.LZMAError) as error:
            raise ProblemError(f"{path}: not a run's rows (rows.jsonl and provenance.json): "
                               f"{type(error).__name__}: {error}") from None
    else:
        raise ProblemError(f"{path}: no results.json (or rows.jsonl + provenance.json) there")
    # Runs before the registry's unit was (backend, algorithm) also kept a row for each
    # variant on the other layout ("applicable": false, always UNSUPPORTED): not cells today.
    rows = [r for r in rows if r.get("applicable", True)]
    if "workloads_of" not in prov:  # a run from before rows said their workload: its command's
        prov["workloads_of"] = _workloads_from_command(prov.get("command") or "")
    results.tag_workloads(prov, rows)
    return prov, rows


def _workloads_from_command(command: str) -> dict[str, str]:
    """Problem label -> workloads, re-drawn from a run's ``--workloads`` (today's definitions:
    a problem whose label has changed since, or one an option transformed, gets none)."""
    try:
        words = shlex.split(command.strip("`"))
    except ValueError:
        return {}
    names = next((words[i + 1] for i, w in enumerate(words[:-1]) if w == "--workloads"), "")
    quick = "--quick" in words
    labelled = []
    for name in filter(None, names.split(",")):
        try:
            labelled += [(p.label(), name) for p in workloads.named([name], quick)]
        except ProblemError:  # a workload that no longer exists
            continue
    return results.workloads_of(labelled)


# ---- report -----------------------------------------------------------------------------------
def _shape(r: dict) -> str:
    s = r["spec"]
    return s.get("name") or f"{s['num_q_heads']}-{s['num_kv_heads']}-{s['head_dim']}"


def _timed(r: dict) -> bool:
    return r["status"] == "PASS" and bool(r.get("median_us"))


def _uniform(r: dict) -> bool:
    return len(set(r["spec"]["seq_lens"])) == 1


def _err(rows: list[dict]) -> list[list[float]]:
    """Error bars of the medians: distances down and up to their 95 % intervals."""
    spans = [results.interval(r) for r in rows]
    return [[max(0.0, r["median_us"] - lo) for r, (lo, _) in zip(rows, spans)],
            [max(0.0, hi - r["median_us"]) for r, (_, hi) in zip(rows, spans)]]


def _series(rows: list[dict]):
    """Timed PASS rows of uniform-length problems grouped by (shape, dtype, layout)."""
    groups = defaultdict(list)
    for r in rows:
        if _timed(r) and _uniform(r):
            layout = r["spec"]["layout"] + (str(r["spec"]["page_size"]) if r["spec"]["layout"] == "paged" else "")
            groups[(_shape(r), r["spec"]["dtype"], layout)].append(r)
    return groups


MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")


def style(impl: str) -> dict:
    """The colour and marker of one (backend, variant), the same in every plot and run: the
    registry's row names in sorted order take tab20's colours in turn (others after them), and
    the marker shifts every 20 so no two of the first 200 share both."""
    import matplotlib

    from impls import registry

    known = sorted({i.row_name(layout) for i in registry.all_impls() for layout in i.layouts})
    index = known.index(impl) if impl in known else len(known) + sum(map(ord, impl)) % 97
    colour = matplotlib.colormaps["tab20"](index % 20)
    return {"color": colour, "marker": MARKERS[(index + index // 20) % len(MARKERS)]}


def _time_label(rows: list[dict]) -> str:
    """What the plotted medians are: cold-L2 device times, or a CPU mode's wall clock."""
    modes = {r.get("primary_mode") for r in rows}
    if modes <= {"cold"}:
        return "median us (cold L2)"
    if modes <= {"wall"} and all(str(r.get("timing", "")).startswith("cpu") for r in rows):
        return "median us (CPU wall-clock: not a kernel time)"
    return f"median us ({'/'.join(sorted(m for m in modes if m))})"


AXES = {"seq_len": lambda r: r["spec"]["seq_lens"][0], "batch": lambda r: len(r["spec"]["seq_lens"])}


def _plot_axis(plt, rows: list[dict], along: str, path: Path, title: str) -> None:
    """Latency (top) and % BW (bottom) against ``along`` ('seq_len' or 'batch'), one panel per
    value of the other axis, one line per implementation."""
    other = "batch" if along == "seq_len" else "seq_len"
    panels = sorted({AXES[other](r) for r in rows})
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 7), squeeze=False)
    impls = sorted({r["impl"] for r in rows})
    for col, value in enumerate(panels):
        mine = [r for r in rows if AXES[other](r) == value]
        for impl in impls:
            pts = sorted(((AXES[along](r), r) for r in mine if r["impl"] == impl),
                         key=lambda pt: pt[0])
            if not pts:
                continue
            x = [p[0] for p in pts]
            y = [p[1]["median_us"] for p in pts]
            line = dict(**style(impl), linestyle="--" if pts[0][1].get("vendor") else "-", label=impl)
            axes[0][col].errorbar(x, y, yerr=_err([p[1] for p in pts]), capsize=3, **line)
            if all(p[1].get("pct_peak_bw") is not None for p in pts):
                axes[1][col].plot(x, [p[1]["pct_peak_bw"] for p in pts], **line)
        for row, label in ((0, _time_label(rows)), (1, "% of measured bandwidth")):
            ax = axes[row][col]
            ax.set_xscale("log", base=2)
            ax.set_xlabel(along)
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
        axes[0][col].set_yscale("log")
        axes[0][col].set_title(f"{other} = {value}")
        axes[1][col].axhline(100, color="k", linewidth=0.8)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(6, len(labels)), fontsize=8)
    fig.suptitle(title + "  (dashed: vendor libraries)")
    fig.tight_layout(rect=(0, 0.08, 1, 0.96))
    fig.savefig(path, dpi=110)
    plt.close(fig)


RAGGED_COLUMNS = 4  # bar charts per row of the ragged-batch figure


def _plot_ragged(plt, rows: list[dict], path: Path, title: str) -> None:
    problems = list(dict.fromkeys(r["problem"] for r in rows))
    cols = min(RAGGED_COLUMNS, len(problems))
    grid_rows = -(-len(problems) // cols)
    fig, axes = plt.subplots(grid_rows, cols, figsize=(6 * cols, (0.35 * 16 + 2) * grid_rows),
                             squeeze=False)
    for ax in axes.flat[len(problems):]:
        ax.set_visible(False)
    for ax, problem in zip(axes.flat, problems):
        mine = sorted((r for r in rows if r["problem"] == problem), key=lambda r: r["median_us"])
        y = range(len(mine))
        ax.barh(y, [r["median_us"] for r in mine], xerr=_err(mine),
                color=[style(r["impl"])["color"] for r in mine],
                hatch=[".." if r.get("vendor") else "" for r in mine])
        ax.set_yticks(list(y), [r["impl"] for r in mine], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel(_time_label(mine) + "; dotted: vendor libraries")
        ax.set_title(problem, fontsize=9)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot(rows: list[dict], folder: Path) -> tuple[list[Path], list[str]]:
    """Write the PNGs into ``folder``; returns their paths and the timed problems no plot shows
    (a shape with a single point along both axes)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder.mkdir(parents=True, exist_ok=True)
    rows = results.first_measurements(rows)  # each cell once a GPU
    written, plotted = [], set()
    for (shape, dtype, layout), group in sorted(_series(rows).items()):
        for along in ("seq_len", "batch"):
            other = "batch" if along == "seq_len" else "seq_len"
            lines = defaultdict(set)  # (panel, impl) -> x values
            for r in group:
                lines[(AXES[other](r), r["impl"])].add(AXES[along](r))
            if max(len(xs) for xs in lines.values()) < 2:
                continue  # no line at all, only points: nothing a plot against this axis shows
            path = folder / f"{shape}_{dtype}_{layout}_vs_{along}.png"
            _plot_axis(plt, group, along, path, f"{shape} {dtype} {layout}: latency and bandwidth vs {along}")
            written.append(path)
            plotted |= {r["problem"] for r in group}
    ragged = defaultdict(list)
    for r in rows:
        if _timed(r) and not _uniform(r):
            ragged[(_shape(r), r["spec"]["dtype"])].append(r)
    for (shape, dtype), group in sorted(ragged.items()):
        path = folder / f"{shape}_{dtype}_ragged.png"
        _plot_ragged(plt, group, path, f"{shape} {dtype}: ragged batches")
        written.append(path)
        plotted |= {r["problem"] for r in group}
    missing = sorted({r["problem"] for r in rows if _timed(r)} - plotted)
    return written, missing


USUAL_FILES = ("results.md", "results.csv", "results.json", "plots")  # results.json holds the provenance
INDEX = "INDEX.md"


def _option(command: str, name: str) -> str:
    """The value of ``--name`` in a recorded command line ('' when absent)."""
    parts = command.split()
    return parts[parts.index(name) + 1] if name in parts[:-1] else ""


def index(root: Path, page: bool = False) -> str:
    """``root/INDEX.md``: every run folder under ``root`` (date, device, commit, command's
    workloads and backends, cells, complete or not, which of the usual files it has), the
    newest complete run of each (device, workloads, backends) marked current."""
    runs = []
    for path in sorted(p.parent for p in root.rglob("*")
                       if p.name.removesuffix(PACKED) in ("results.json", "rows.jsonl")):
        if any(r["path"] == path for r in runs):
            continue
        prov, rows = load(path)
        command = prov.get("command", "")
        runs.append({"path": path, "prov": prov, "rows": rows,
                     "date": str(prov.get("timestamp", ""))[:16].replace("T", " "),
                     "gpu": prov.get("gpu") or "CPU",
                     "commit": (str(prov.get("commit") or "?").split() or ["?"])[0][:12],
                     "workloads": _option(command, "--workloads") or ("(problems)" if "--problem" in command
                                                                      else "(default)"),
                     "backends": _option(command, "--backends") or "all", "cells": len(rows),
                     "counts": results.summary_counts(rows),
                     "state": results.incomplete(prov, rows) or "complete",
                     "missing": [f for f in USUAL_FILES if not _found(path, f)]})
    newest = {}
    for r in runs:
        key = (r["gpu"], r["workloads"], r["backends"])
        if r["state"] == "complete" and r["date"] >= newest.get(key, {"date": ""})["date"]:
            newest[key] = r
    current = {id(r) for r in newest.values()}
    body = [[str(r["path"].relative_to(root)), r["date"], r["gpu"], r["commit"], r["workloads"], r["backends"],
             r["counts"], r["state"], "**current**" if id(r) in current else "superseded",
             ", ".join(r["missing"]) or "-"]
            for r in sorted(runs, key=lambda r: (r["gpu"], r["date"]), reverse=True)]
    text = ("# Index of runs (generated by `python -m harness report results`)\n\n"
            "One line per run folder; **current** marks the newest complete run of each device, "
            "workloads and backends. What each run shows is in its folder's README and in "
            "`README.md` here.\n\n"
            + results.markdown(["run", "date (UTC)", "device", "commit", "workloads", "backends", "rows",
                                "state", "", "files missing"], body) + "\n")
    (root / INDEX).write_text(text)
    if page:
        text += f"\npage: {_index_page(root, runs, current)}"
    return text


def _index_page(root: Path, runs: list[dict], current: set[int]) -> Path:
    """``root/index.html``, and each current run's ``report.html`` (its plots linked from the
    run's folder, not inlined: they are committed beside it): every run, linked to its page or
    its results.md, and per GPU model a scorecard over its current runs (each run's ratios
    computed within that run: rows of one device only)."""
    from harness import html, scorecard

    lines, by_model = [], {}
    for r in sorted(runs, key=lambda r: (r["gpu"], r["date"]), reverse=True):
        rel = r["path"].relative_to(root)
        target = "results.md" if _found(r["path"], "results.md") else None
        if id(r) in current:
            results.annotate(r["rows"])
            plots = r["path"] / "plots"
            html.write(r["path"], r["prov"], r["rows"], plots if plots.is_dir() else None, inline=False)
            target = "report.html"
            by_model.setdefault(r["gpu"], []).extend(r["rows"])
        lines.append([html.link(f"{rel}/{target}", str(rel)) if target else html.escape(str(rel)),
                      *(html.escape(str(r[k])) for k in ("date", "gpu", "commit", "workloads", "backends",
                                                          "counts", "state")),
                      "current" if id(r) in current else "superseded"])
    parts = ["<h1>decode-bench: every run</h1>", "<p>The newest complete run of each device, workloads "
             "and backends is current and has a page; the others link to their results.md.</p>",
             html.table(["run", "date (UTC)", "device", "commit", "workloads", "backends", "rows", "state", ""],
                        lines, escaped=True)]
    for model, rows in sorted(by_model.items()):
        header, body = scorecard.scorecard(rows)
        parts += [f"<h2>{html.escape(model)}: its current runs</h2>",
                  f'<p class="note">{html.escape(scorecard.SCORE_NOTE)} Over every current run of '
                  "this GPU model; each ratio is one run's, between rows of one device.</p>",
                  html.table(header, body)]
    return html.write_page(root / "index.html", "decode-bench: every run", parts)


def report(path: Path, out: Path | None, plots: bool = True, page: bool = False) -> str:
    path = Path(path)
    if path.is_dir() and not _found(path, "results.json") and not _found(path, "rows.jsonl") \
            and any(path.rglob("results.json*")):  # a folder of runs: their index
        return index(path, page)
    prov, rows = load(path)
    results.annotate(rows)
    out = Path(out) if out else (Path(path) if Path(path).is_dir() else Path(path).parent)
    out.mkdir(parents=True, exist_ok=True)
    results.write_all(out, prov, rows)
    text = results.render_text(prov, rows)
    if mark := results.incomplete(prov, rows):
        text = f"{path}: {mark} (the run was stopped)\n{text}\n\n{path}: {mark}"
    if plots:
        written, missing = plot(rows, out / "plots")
        text += "\n\nplots:\n" + "\n".join(f"  {p}" for p in written)
        if missing:
            text += (f"\nnot plotted ({len(missing)} problem(s) with one point along both seq_len and "
                     "batch for their shape: see the tables):\n" + "\n".join(f"  {m}" for m in missing))
    if page:
        from harness import html
        text += f"\n\npage: {html.write(out, prov, rows, out / 'plots' if plots else None)}"
    return text


# ---- compare ----------------------------------------------------------------------------------
def classify(old: dict, new: dict, threshold: float = THRESHOLD, noise: tuple = (None, None)) -> str:
    """regression / slower / faster / same / not timed, for one matched pair of rows; ``noise``:
    the two runs' repeatability, which widens each row's interval (``results.ordering_interval``)."""
    if old["status"] == "PASS" and new["status"] in ("FAIL", "ERROR"):
        return f"regression ({old['status']} -> {new['status']})"
    if not (old.get("median_us") and new.get("median_us")):
        return "not timed in both"
    if any(str(r.get("timing", "")).startswith("cpu") for r in (old, new)):
        return "not compared (CPU interpreter timing)"
    change = new["median_us"] / old["median_us"] - 1
    before, after = results.ordering_interval(old, noise[0]), results.ordering_interval(new, noise[1])
    if stats.below(before, after) and change > threshold:
        return "slower"
    if stats.below(after, before) and change < -threshold:
        return "faster"
    return "same"


def agree(first: str, second: str) -> str:
    """One verdict from a row's two pairs of runs, measured in opposite orders (``compare``'s
    ``again``): a regression in either; faster or slower where both say so; else same, with why."""
    for verdict in (first, second):
        if verdict.startswith("regression"):
            return verdict
    if first == second or first.startswith("not "):
        return first
    if second.startswith("not "):  # (or missing): one order alone moves nothing
        return "same" if first == "same" else f"same ({first} in the first pair only)"
    if "same" in (first, second):
        return "same"
    return f"same (the two orders disagree: {first}, then {second})"


def _order(a: dict, b: dict, noise: float | None = None) -> int:
    """1: a faster beyond doubt, -1: b faster beyond doubt, 0: no order (their
    ``results.ordering_interval``s, with the run's repeatability ``noise``, overlap)."""
    ia, ib = results.ordering_interval(a, noise), results.ordering_interval(b, noise)
    return stats.below(ia, ib) - stats.below(ib, ia)


def ranking_flips(old_rows: list[dict], new_rows: list[dict],
                  noises: tuple = (None, None)) -> tuple[int, list[tuple[str, float]]]:
    """Pairs of rows on one problem that one run orders beyond doubt (intervals apart, each
    widened by its run's repeatability ``noises``, where given) and the other orders the
    opposite way beyond doubt: (pairs ordered in both runs, the flips, each with the larger of
    its two relative gaps)."""
    old, new = ({(r["impl"], results.problem_key(r)): r for r in results.summarised(rows) if r.get("rank")}
                for rows in (old_rows, new_rows))
    by_problem = defaultdict(list)
    for key in old.keys() & new.keys():
        by_problem[key[1]].append(key[0])
    ordered, flips = 0, []
    for problem, names in by_problem.items():
        for i, a in enumerate(sorted(names)):
            for b in sorted(names)[i + 1:]:
                before, after = (_order(run[(a, problem)], run[(b, problem)], noise)
                                 for run, noise in zip((old, new), noises))
                if before and after:
                    ordered += 1
                    if before != after:
                        gap = max(abs(run[(a, problem)]["median_us"] / run[(b, problem)]["median_us"] - 1)
                                  for run in (old, new))
                        exposed = [f"{name} {which}, {share}" for name in (a, b)
                                   for which, run in (("old", old), ("new", new))
                                   if (share := host_time_share(run[(name, problem)]))]
                        flips.append((f"{a} vs {b} on {old[(a, problem)]['problem']}", gap,
                                      f"; host launch exposed: {'; '.join(exposed)}" if exposed else ""))
    return ordered, flips


HOST_TIME_SHARE = 0.2  # past this share of a cell's calls, its p20-p80 span can hold host time


def host_time_share(row: dict) -> str:
    """'X of Y calls' where the cold protocol saw the host's launch outlast its spin in more than
    HOST_TIME_SHARE of a row's calls (``timing``: those samples can hold host time), else ''."""
    found = re.search(r"in (\d+) of (\d+) calls", row.get("cold_note") or "")
    if not found or int(found[1]) <= HOST_TIME_SHARE * int(found[2]):
        return ""
    return f"{found[1]} of {found[2]} calls"


FLIP_GAP = 0.02  # near ties: one run's interval does not hold the drift between two runs


def repeat_text(noise: float | None, n: int) -> str:
    """A run's repeatability (``results.repeatability``) as the ranking uses it, or that the run
    did not measure it."""
    if noise is None:
        return "95 % intervals alone: no repeatability measured" + (f" ({n} cells remeasured)" if n else "")
    return (f"intervals stretched to p20-p80 and widened by a repeatability of {100 * noise:.1f} % "
            f"({n} pairs of measurements of a cell)")


def _with_interval(row: dict) -> str:
    lo, hi = results.interval(row)
    if lo == hi or str(row.get("timing", "")).startswith("cpu"):
        return f"{row['median_us']:.1f} (no interval)"
    return f"{row['median_us']:.1f} [{lo:.1f}-{hi:.1f}]"


def _change(o: dict | None, r: dict | None) -> float | None:
    if o and r and o.get("median_us") and r.get("median_us"):
        return r["median_us"] / o["median_us"] - 1
    return None


def compare(old_path: Path, new_path: Path, threshold: float = THRESHOLD,
            any_gpu: bool = False, page: Path | None = None,
            again: tuple[Path, Path] | None = None) -> tuple[str, bool]:
    """(the comparison as text, whether anything regressed); with ``page``, the same written
    there as HTML. ``again``: (old, new) runs of the same two codes measured in the other order,
    new first: each row's verdict is then both pairs' (``agree``), so a drift between
    consecutive runs (which favours whichever ran first) cannot pass for a change."""
    paths = [old_path, new_path, *(again or ())]
    loaded = [load(path) for path in paths]
    (old_prov, old_rows), (new_prov, new_rows) = loaded[:2]
    gpus = {prov.get("gpu") for prov, _ in loaded}
    if len(gpus) > 1 and not any_gpu:
        raise ProblemError(f"the runs are from different devices ({' vs '.join(map(str, sorted(gpus, key=str)))}): "
                           "their times do not compare (--any-gpu to list them anyway)")
    key = lambda r: (r["impl"], results.problem_key(r))  # noqa: E731
    # a problem measured again on every GPU (the spread) matches once, on its own GPU
    old_summary, new_summary = results.summarised(old_rows), results.summarised(new_rows)
    old = {key(r): r for r in old_summary}
    # a problem the other run named differently matches by its shape (results.renamed)
    twins = results.renamed(old_summary, new_summary, within=lambda r: r["impl"])
    new_keys = {key(r) for r in new_summary}
    renamed = set()  # old rows' keys matched by shape
    repeats = [results.repeatability(rows) for rows in (old_rows, new_rows)]  # (noise, cells)
    noises = tuple(noise for noise, _ in repeats)
    if again:
        old2, new2 = ({key(r): r for r in results.summarised(rows)} for _, rows in loaded[2:])
        noises2 = tuple(results.repeatability(rows)[0] for _, rows in loaded[2:])
    body, counts, verdicts, drifts = [], defaultdict(int), [], []
    for r in new_summary:
        o = old.get(key(r))
        if o is None and (o := twins.get(key(r))) is not None:
            renamed.add(key(o))
        if o is None:
            counts["new rows"] += 1
            continue
        if o["status"] != r["status"]:
            verdicts.append(f"{r['impl']} on {r['problem']}: {o['status']} -> {r['status']}")
        verdict = classify(o, r, threshold, noises)
        changes = [_change(o, r)]
        if again:
            o2, r2 = old2.get(key(o)), new2.get(key(r))
            verdict = agree(verdict, classify(o2, r2, threshold, noises2) if o2 and r2
                            else "not in the second pair")
            changes.append(_change(o2, r2))
            if None not in changes:  # the first pair's change less the second's: twice the drift
                drifts.append((changes[0] - changes[1]) / 2)
        counts[verdict.split(" (")[0]] += 1
        shown = "  ".join("" if c is None else f"{100 * c:+.1f}%" for c in changes)
        if changes[0] is not None:
            body.append([r["impl"], r["problem"], _with_interval(o), _with_interval(r), shown, verdict])
        elif verdict.startswith("regression"):
            body.append([r["impl"], r["problem"], o["status"], r["status"], shown, verdict])
    counts["gone rows"] = len(set(old) - new_keys - renamed)
    counts["rows matched by shape (named differently)"] = len(renamed)
    order = {"regression": 0, "slower": 1, "faster": 2, "same": 3}
    body.sort(key=lambda b: (order.get(b[5].split(" (")[0], 4), b[0], b[1]))
    header = ["implementation", "problem", "old us [95% CI]", "new us [95% CI]",
              "change (old first, new first)" if again else "change", "verdict"]
    summary = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    def run_line(label, path, prov, rows):
        mark = results.incomplete(prov, rows)
        return (f"{label}: {path} ({prov.get('gpu') or 'no GPU'}, commit {prov.get('commit')})"
                + (f"; {mark}" if mark else ""))
    runs = [run_line(label, path, prov, rows) for label, path, (prov, rows)
            in zip(("old", "new", "old, second pair", "new, second pair (run first)"), paths, loaded)]
    rule = (f"slower/faster: 95 % intervals (where the run measured its repeatability, stretched "
            f"to p20-p80 and widened by it) apart and a change beyond {100 * threshold:.0f} %; else same (within "
            "the noise)")
    if again:
        rule += "; with two pairs in opposite orders, in both pairs"
        if drifts:
            rule += (f". Drift between consecutive runs (half the first pair's change less the "
                     f"second's, median over {len(drifts)} rows; +: each later run slower): "
                     f"{100 * statistics.median(drifts):+.1f} %")
    verdict_line = (f"verdicts: {len(old.keys() & new_keys) + len(renamed)} rows in both runs, "
                    f"{len(verdicts)} with another status" + "".join(f"\n  {v}" for v in verdicts))
    walls = [p.get("wall_s") for p in (old_prov, new_prov)]
    if all(walls):  # what spreading a run over GPUs is for
        runs.append(f"wall time of the cells: old {walls[0]:.0f} s, new {walls[1]:.0f} s "
                    f"(new/old {walls[1] / walls[0]:.2f})")
    text = ("\n".join(runs) + f"\n{rule}\n" + results.columns(header, body) + f"\n\nsummary: {summary}."
            + f"\n{verdict_line}")
    results.add_ranks(old_rows)
    results.add_ranks(new_rows)
    ordered, flips = ranking_flips(old_rows, new_rows, noises)
    ranking = (f"ranking: {ordered} pairs of rows ordered beyond doubt in both runs "
               f"({repeat_text(*repeats[0])} old, {repeat_text(*repeats[1])} new), "
               f"{len(flips)} in opposite orders"
               + (f" ({sum(gap > FLIP_GAP for _, gap, _ in flips)} of them more than "
                  f"{100 * FLIP_GAP:.0f} % apart in one run)" if flips else ""))
    if any(noise is not None for noise in noises):
        bare_ordered, bare = ranking_flips(old_rows, new_rows)  # both counts, said
        ranking += (f"; by the 95 % intervals alone: {bare_ordered} pairs ordered, {len(bare)} in "
                    "opposite orders")
    flipped = [f"{pair} ({100 * gap:.1f} % apart at most{exposed})" for pair, gap, exposed in flips]
    text += f"\n{ranking}" + "".join(f"\n  flipped: {f}" for f in flipped)
    regressed = counts["regression"] + counts["slower"] > 0
    if page is not None:  # the same, as a page: what moved, then the flips
        from harness import html
        moved = [b for b in body if not b[5].startswith("same")]
        html.write_page(Path(page), "decode-bench: compare", [
            "<h1>decode-bench: compare</h1>", "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in runs)
            + "</ul>", f"<p>{html.escape(rule)}. Summary: {html.escape(summary)}.</p>",
            "<h2>Moved beyond their intervals, or regressed</h2>", html.table(header, moved),
            f"<h2>Verdicts</h2><pre>{html.escape(verdict_line)}</pre>",
            f"<h2>Ranking</h2><p>{html.escape(ranking)}</p>",
            html.table(["flipped"], [[f] for f in flipped]),
            "<details><summary>every matched row</summary>" + html.table(header, body) + "</details>"])
        text += f"\npage: {page}"
    return text, regressed
