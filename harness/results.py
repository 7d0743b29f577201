"""Result rows (long format, one per implementation x problem) and everything rendered from them.

Rows are appended to ``rows.jsonl`` the moment they exist (a crash later loses nothing); the
JSON, CSV and markdown files and the printed tables are all rendered from those rows plus the
run's provenance.
"""

from __future__ import annotations

import csv
import functools
import io
import json
import math
import shutil
import statistics
import time
from pathlib import Path
from typing import Iterable

from harness import stats
from specs.problem import DecodeProblem, ProblemError

STATUSES = ("PASS", "FAIL", "UNSUPPORTED", "UNAVAILABLE", "ERROR")
# provenance fields repeated in every CSV row, so a row read alone still says where it came from
# what every row carries of the run's (or, over several GPUs, its device's) provenance: the GPU
# that measured it by name, index, UUID and host
ROW_PROVENANCE = ("gpu", "driver", "commit", "timestamp", "gpu_index", "gpu_uuid", "host")
CSV_FIELDS = ("backend", "variant", "algorithm", "problem", "workload", "spread_repeat", "status", "reason",
              "out_max_err", "out_err_ratio", "lse_max_err", "lse_err_ratio", "median_us", "ci_lo_us", "ci_hi_us",
              "p20_us", "p80_us", "reps", "cold_stop", "cold_note", "graph_us", "graph_ci_us", "graph_note",
              "wall_us", "wall_ci_us", "launch_us", "launch_ci_us", "launch_note", "plan_us", "rank", "tied",
              "bytes", "kv_bytes", "input_bytes", "peak_mem_bytes", "gbps", "pct_peak_bw",
              "read_limit_us", "pct_read", "layout_read_us", "pct_layout_read", "vs_vendor",
              "vendor_best", "vendor_best_us",
              "first_call_ms", "tuning_s", "config_source", "timing", "config", "spec") + ROW_PROVENANCE


def append_row(path: Path, row: dict) -> None:
    row.setdefault("written_s", round(time.time(), 1))  # when it was measured: the run's timeline
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")
        f.flush()


def read_rows(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def interval(row: dict) -> tuple[float, float]:
    """The primary figure's 95 % interval (the median alone when a row has none)."""
    return row.get("ci_lo_us", row["median_us"]), row.get("ci_hi_us", row["median_us"])


REPEAT_QUANTILE = 0.9  # the run's repeatability: this share of its remeasured cells within it
MIN_REPEATS = 5  # fewer pairs of measurements of a cell say nothing of it


def repeatability(rows: Iterable[dict]) -> tuple[float | None, int]:
    """How far apart two measurements of one cell come, from the cells the run measured more
    than once with one configuration (``executors.plan``: the largest and the smallest problem;
    on one GPU, again after its other problems; over several GPUs, the spread's measurements on
    each, which also hold how far the GPUs are apart): over the pairs of a cell's own (first)
    measurement and each other one, the REPEAT_QUANTILE quantile of slower / faster - 1, and
    how many pairs it is over (one per GPU beyond the first, however many GPUs); (None, n) below
    MIN_REPEATS. A median's 95 % interval holds the noise of one measurement; this holds what
    moves between two (the GPU's state minutes apart, another GPU of the same model), which two
    runs also differ by."""
    timed: dict[tuple, list[tuple[int, float]]] = {}
    for n, r in enumerate(rows):
        if r["status"] == "PASS" and r.get("median_us") and not str(r.get("timing", "")).startswith("cpu"):
            key = (r["impl"], problem_key(r), r.get("gpu"),
                   json.dumps(r.get("config"), sort_keys=True, default=str))  # --tune: its own
            timed.setdefault(key, []).append((r.get("cell", n), r["median_us"]))
    spreads = []
    for measured in timed.values():
        (_, own), *others = sorted(measured)  # the cell's own measurement: the lowest id
        spreads += [max(own, t) / min(own, t) - 1 for _, t in others]
    spreads.sort()
    if len(spreads) < MIN_REPEATS:
        return None, len(spreads)
    return spreads[math.ceil(REPEAT_QUANTILE * len(spreads)) - 1], len(spreads)  # nearest rank


def ordering_interval(row: dict, noise: float | None) -> tuple[float, float]:
    """The interval an order between two rows of one run is judged by: the 95 % interval alone
    where the run measured no repeatability (``noise`` None); else that interval stretched to
    the row's middle 60 % of calls (p20-p80) and widened by half the repeatability each way, so
    two rows are ordered only when they are further apart than a remeasurement moves a row. The
    p20-p80 span matters where a cell's calls split between two levels: its median then lands
    on either from run to run while its bootstrap interval stays tight."""
    lo, hi = interval(row)
    if noise is None:
        return lo, hi
    lo, hi = min(lo, row.get("p20_us") or lo), max(hi, row.get("p80_us") or hi)
    return lo * (1 - noise / 2), hi * (1 + noise / 2)


def rank_text(row: dict) -> str:
    """'2', or '2=' when tied, or '' when unranked."""
    return f"{row['rank']}{'=' if row.get('tied') else ''}" if row.get("rank") else ""


def problem_key(row: dict) -> str:
    """The whole problem (every length, the scale), not its label, which abbreviates them; a
    row written before a field of the spec existed has that field's default."""
    return _canonical(json.dumps(row["spec"], sort_keys=True))


def device_id(info: dict) -> str | None:
    """Which device measured a row (or a run): host and GPU, by UUID, else by index; None for a
    row written before rows carried it."""
    gpu = info.get("gpu_uuid") or info.get("gpu_index")
    return f"{info.get('host')}/{gpu}" if gpu is not None else None


def device_labels(rows: list[dict]) -> dict[str | None, str]:
    """How the tables name the GPU that measured each row (by ``device_id``): its index, with its
    host where the rows come from several hosts; empty where they come from one device (the
    tables then name none)."""
    devices = {device_id(r): r for r in rows}
    if len(devices) < 2:
        return {}
    hosts = len({r.get("host") for r in devices.values()}) > 1
    return {d: f"{r.get('host')}:{r.get('gpu_index')}" if hosts else _fmt(r.get("gpu_index"))
            for d, r in devices.items()}


def first_measurements(rows: Iterable[dict]) -> list[dict]:
    """``rows`` less the passing second measurement of a cell on its own GPU (the
    repeatability's): the tables, ranks, ratios and plots show each cell on each GPU once (the
    spread's, on other GPUs, stay); a second measurement that did not pass is shown."""
    rows = list(rows)
    first = {(r["impl"], measured_key(r)) for r in rows if not r.get("spread_repeat")}
    return [r for r in rows if not (r.get("spread_repeat") and r["status"] == "PASS"
                                    and (r["impl"], measured_key(r)) in first)]


def summarised(rows: Iterable[dict]) -> list[dict]:
    """The rows a summary counts: a problem measured again on every GPU for the spread counts
    once (on its own GPU), not once per GPU."""
    return [r for r in rows if not r.get("spread_repeat")]


def measured_key(row: dict) -> str:
    """The problem as measured on one device: ranks and ratios compare rows of one key only (two
    GPUs of one model are not one GPU). In a run on one device it groups as ``problem_key``."""
    device = device_id(row)
    return problem_key(row) if device is None else f"{device} {problem_key(row)}"


def shape_key(row: dict) -> str:
    """``problem_key`` without the problem's name: the same problem whatever a run called it (a
    workload file's names against a named workload's)."""
    return problem_key({"spec": {k: v for k, v in row["spec"].items() if k != "name"}})


def renamed(earlier: Iterable[dict], later: Iterable[dict], within=lambda row: None) -> dict:
    """A problem two sets of rows name differently: ``(within(row), problem_key(row))`` of a row
    of ``later`` -> the row of ``earlier`` of its shape (``shape_key``) and ``within``, where the
    shape is one problem's in each (within the same ``within``) under two names; two problems of
    one shape and two names in either set stay apart. ``within``: the rows' implementation to
    pair rows (compare), none to pair problems (a later run's rows with an earlier run's vendor
    rows)."""
    def by_shape(rows):
        found: dict = {}
        for row in rows:
            found.setdefault((within(row), shape_key(row)), {})[problem_key(row)] = row
        return found
    theirs, ours = by_shape(earlier), by_shape(later)
    twins = {}
    for place, problems in ours.items():
        if len(problems) == 1 == len(theirs.get(place, ())):
            (key,), (twin,) = problems, theirs[place].values()
            if key != problem_key(twin):
                twins[(place[0], key)] = twin
    return twins


@functools.cache
def _canonical(spec: str) -> str:
    try:
        return json.dumps(DecodeProblem.from_dict(json.loads(spec)).to_dict(), sort_keys=True)
    except ProblemError:  # not a problem this spec knows: compared as written
        return spec


def workloads_of(labelled: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Problem label -> the workloads it came from (``provenance['workloads_of']``); two problems
    of one label (labels abbreviate) get the union."""
    found: dict[str, list[str]] = {}
    for label, names in labelled:
        found.setdefault(label, []).extend(names.split(","))
    return {label: ",".join(dict.fromkeys(names)) for label, names in found.items()}


def tag_workloads(prov: dict, rows: list[dict]) -> None:
    """``workload`` on each row, from the provenance (runs before it was recorded: none)."""
    of = prov.get("workloads_of") or {}
    for r in rows:
        if r["problem"] in of:
            r["workload"] = of[r["problem"]]


def annotate(rows: list[dict]) -> None:
    """Everything computed across rows: ranks with ties, then the vendor ratios."""
    add_ranks(rows)
    add_vendor_ratios(rows)


def add_ranks(rows: list[dict]) -> None:
    """``rank`` on each problem among its timed PASS rows: 1 + the rows faster beyond doubt
    (their ``ordering_interval`` wholly below this row's: the 95 % interval, or with the run's
    repeatability the middle of the calls widened by it); ``tied`` when another row shares the
    rank (no order between them). A cell measured a second time on its own GPU (the
    repeatability) is not ranked again."""
    noise, _ = repeatability(rows)
    for r in rows:
        r.pop("rank", None), r.pop("tied", None)
    groups: dict[str, list[dict]] = {}
    for r in first_measurements(rows):
        gpu_figure = not str(r.get("timing", "")).startswith("cpu")  # interpreters: no ranking
        if r["status"] == "PASS" and r.get("ci_lo_us") is not None and gpu_figure:
            groups.setdefault(measured_key(r), []).append(r)
    for group in groups.values():
        for r, rank in zip(group, stats.ranks([ordering_interval(r, noise) for r in group])):
            r["rank"] = rank
        for r in group:
            r["tied"] = sum(o["rank"] == r["rank"] for o in group) > 1


def add_vendor_ratios(rows: list[dict]) -> None:
    """``vs_vendor``: the fastest vendor kernel's median on the same problem (same shape,
    lengths, layout, page size and dtype) over this row's, so > 1 means faster than every vendor
    kernel timed on it; ``vendor_best`` names that kernel and ``vendor_best_us`` gives its time.
    Only PASS rows of vendor backends count (a wrong answer is no baseline)."""
    best = fastest_by_problem((r for r in first_measurements(rows) if r.get("vendor")), measured_key)
    for r in rows:
        b = best.get(measured_key(r))
        r["vendor_best"], r["vendor_best_us"] = (b["impl"], b["median_us"]) if b else (None, None)
        r["vs_vendor"] = round(b["median_us"] / r["median_us"], 3) if b and r.get("median_us") else None


def fastest_by_problem(rows: Iterable[dict], key_of=problem_key) -> dict[str, dict]:
    """The fastest timed PASS row of ``rows`` on each problem (by ``key_of``: ``problem_key``,
    or ``measured_key`` within a run that several devices measured)."""
    best: dict[str, dict] = {}
    for r in rows:
        if r["status"] == "PASS" and r.get("median_us"):
            key = key_of(r)
            if key not in best or r["median_us"] < best[key]["median_us"]:
                best[key] = r
    return best


def _fmt(value, spec: str = "") -> str:
    if value is None:
        return ""
    return format(value, spec) if spec else str(value)


def _cell_status(r: dict) -> str:
    """PASS/FAIL with the output's worst error over its tolerance ('lse -': no LSE returned)."""
    if r["status"] in ("PASS", "FAIL") and r.get("out_err_ratio") is not None:
        no_lse = ", lse -" if "lse_err_ratio" in r and r["lse_err_ratio"] is None else ""
        return f"{r['status']} ({r['out_err_ratio']:.2f}x tol{no_lse})"
    return r["status"]


TABLE_COLUMNS = ("problem", "gpu", "variant", "status", "cold us [95% CI]", "graph us", "wall us",
                 "launch us", "plan us", "GB/s", "% BW", "% read", "% layout", "rank", "vs vendor",
                 "1st call ms",
                 "KV MB", "peak MB", "config / reason")


def _table_row(r: dict, gpu: str = "") -> list[str]:
    """A row of a backend's table (``gpu``: the GPU that measured it, where several did)."""
    if r["status"] in ("PASS", "FAIL"):
        note = _config_summary(r) if r["status"] == "PASS" else r.get("reason", "")
        if r.get("tuning_s") is not None:
            note = "; ".join(filter(None, [f"tuned in {r['tuning_s']:.1f} s", note]))
    else:
        note = r.get("reason", "")
    primary = ""
    if r.get("median_us") is not None:
        primary = f"{r['median_us']:.1f}"
        if _cpu_timed(r):  # a call or two of an interpreter: no interval worth printing
            pass
        elif r.get("ci_lo_us") is not None and (r.get("reps") or 0) > 1:
            primary += f" [{r['ci_lo_us']:.1f}-{r['ci_hi_us']:.1f}]"
        if r.get("primary_mode") not in (None, "cold") and not _cpu_timed(r):
            primary += f" ({r['primary_mode']})"
    return [r["problem"], gpu, r["variant"], _cell_status(r), primary, _mode_cell(r, "graph"),
            _mode_cell(r, "wall"), _mode_cell(r, "launch"), _fmt(r.get("plan_us"), ".1f"),
            _fmt(r.get("gbps"), ".0f"),
            _fmt(r.get("pct_peak_bw"), ".1f"), _fmt(r.get("pct_read"), ".0f"),
            _fmt(r.get("pct_layout_read"), ".0f"), rank_text(r), _fmt(r.get("vs_vendor"), ".2f"),
            _fmt(r.get("first_call_ms"), ".0f"), _mb(r.get("kv_bytes")), _mb(r.get("peak_mem_bytes")),
            note]


def _mb(nbytes) -> str:
    return "" if nbytes is None else f"{nbytes / 1e6:.0f}"


def _config_summary(r: dict) -> str:
    """What the backend declared worth showing of its launch choices (rows of older runs: all)."""
    if "config_summary" in r:
        return r["config_summary"]
    from impls import registry

    found = registry.backend(r["backend"])
    shown = found.shown_config if found else None
    config = r.get("config") or {}
    if not shown:
        return ", ".join(f"{k}={v}" for k, v in config.items())
    # num_splits: the option those runs set; their kernel parameters were upper case (TPR)
    by_name = {k.lower(): (k, v) for k, v in config.items()}
    found = (by_name[k] for k in ("num_splits", *shown) if k in by_name)
    return ", ".join(f"{k}={v}" for k, v in found)


def _mode_cell(r: dict, mode: str) -> str:
    """A secondary mode's median ('n/a' when it has none, '!' when it carries a note)."""
    if r.get(f"{mode}_us") is None or (mode == "wall" and _cpu_timed(r)):  # CPU: the primary
        return "n/a" if r.get(f"{mode}_note") else ""
    return f"{r[f'{mode}_us']:.1f}" + ("!" if r.get(f"{mode}_note") else "")


def markdown(header, body) -> str:
    """A markdown table: the header, then one line per row of strings."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(c.replace("|", "/") for c in row) + " |" for row in body]
    return "\n".join(lines)


def _cpu_timed(r: dict) -> bool:
    return str(r.get("timing", "")).startswith("cpu")


CPU_PRIMARY = "CPU wall us (not a kernel time)"


def _header(rows: list[dict]) -> list[str]:
    """The columns, the primary one named for what its rows measured (a CPU mode's wall clock
    is no cold-L2 device time and has no interval)."""
    header = list(TABLE_COLUMNS)
    timed = [r for r in rows if r.get("median_us") is not None]
    if timed and all(_cpu_timed(r) for r in timed):
        header[header.index("cold us [95% CI]")] = CPU_PRIMARY
    return header


def _subset(header: list[str], body: list[list[str]], cols: list[int]) -> tuple[list[str], list[list[str]]]:
    """The table cut down to the columns numbered ``cols``."""
    return [header[i] for i in cols], [[row[i] for i in cols] for row in body]


def _backend_table(rows: list[dict]) -> tuple[list[str], list[list[str]], list[int]]:
    """A backend's table: header, body, and the columns worth showing (those with something
    in them, and KEPT)."""
    labels = device_labels(rows)
    header, body = _header(rows), [_table_row(r, labels.get(device_id(r), "")) for r in rows]
    return header, body, [i for i, name in enumerate(header) if name in KEPT or any(row[i] for row in body)]


def markdown_table(rows: Iterable[dict]) -> str:
    header, body, keep = _backend_table(list(rows))
    return markdown(*_subset(header, body, keep))


def columns(header, body) -> str:
    """Fixed-width text: the header, a rule, then one line per row of strings."""
    table = [list(header)] + [list(row) for row in body]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    out = []
    for n, row in enumerate(table):
        out.append("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip())
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def text_table(rows: Iterable[dict], width: int | None = None) -> str:
    """The backend's table as printed: columns with nothing in them left out, and, to fit
    ``width`` characters, the secondary ones (``SHED_ORDER``) too, with a line naming them."""
    header, body, keep = _backend_table(list(rows))
    shed = []
    for name in SHED_ORDER:  # the last column (config / reason) is cut, not fitted
        if width is None or _widest(columns(*_subset(header, body, keep[:-1]))) <= width:
            break
        if header.index(name) in keep:
            keep.remove(header.index(name))
            shed.append(name)
    table = columns(*_subset(header, body, keep))
    if width is not None:
        table = "\n".join(line[:width] for line in table.split("\n"))
    note = f"(left out to fit {width} columns: {', '.join(shed)}; results.md has every column)\n" if shed else ""
    return note + table


def _widest(text: str) -> int:
    return max(map(len, text.split("\n")))


KEPT = ("problem", "variant", "status")
# what a narrow terminal loses first (the markdown and CSV keep everything)
SHED_ORDER = ("launch us", "wall us", "peak MB", "KV MB", "1st call ms", "plan us", "graph us", "rank",
              "GB/s", "vs vendor")


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS`` when set; 160 when the output is not a terminal)."""
    return shutil.get_terminal_size((160, 24)).columns


def fit_columns(header: list[str], body: list[list[str]], width: int, fixed: int = 2) -> list[str]:
    """A table too wide for ``width`` cut into several, each with the first ``fixed`` columns
    and as many of the others as fit."""
    chunks, current = [], list(range(fixed))
    for i in range(fixed, len(header)):
        if len(current) > fixed and _widest(columns(*_subset(header, body, current + [i]))) > width:
            chunks.append(current)
            current = list(range(fixed))
        current.append(i)
    chunks.append(current)
    return [columns(*_subset(header, body, cols)) for cols in chunks]


VARIANT_ORDER = {"dense": 0, "paged": 1, "split-k": 2}


def by_backend(rows: list[dict]) -> dict[str, list[dict]]:
    """Rows the tables show (those of a kernel that exists, each cell once a GPU), per backend,
    in problem order then variant order."""
    order = {}
    for r in rows:
        order.setdefault(r["problem"], len(order))
    groups: dict[str, list[dict]] = {}
    for r in first_measurements(rows):
        if not r.get("no_kernel"):
            groups.setdefault(r["backend"], []).append(r)
    for group in groups.values():
        group.sort(key=lambda r: (order[r["problem"]], VARIANT_ORDER.get(r["variant"], 9)))
    return groups


def missing_variants(rows: list[dict], backend: str) -> str:
    """One line naming the variants a backend has no kernel for, and why."""
    why = {r["variant"]: r["reason"] for r in rows if r["backend"] == backend and r.get("no_kernel")}
    return "; ".join(f"no {v}: {reason}" for v, reason in sorted(why.items()))


def unavailable_everywhere(group: list[dict]) -> str | None:
    """The reason, when every row of a backend is UNAVAILABLE for one reason (one line then)."""
    reasons = {r.get("reason") for r in group}
    if all(r["status"] == "UNAVAILABLE" for r in group) and len(reasons) == 1:
        return reasons.pop()
    return None


def provenance_lines(prov: dict) -> list[str]:
    pk = prov.get("packages", {})
    device = (f"{prov['gpu']} ({prov.get('sm_count')} SMs, {prov.get('l2_mb')} MB L2), driver "
              f"{prov.get('driver')}, CUDA runtime {prov.get('cuda_runtime')}") if prov.get("gpu") \
        else (f"CPU only ({prov.get('cpu')}, {prov.get('cpu_count')} cores): interpreter/simulator "
              "timings are not performance figures")
    if prov.get("bandwidth_limit_gbps"):
        probes = ", ".join(f"{k} {v:.0f}" if isinstance(v, (int, float)) else f"{k}: {v}"
                           for k, v in prov.get("bandwidth", {}).items())
        bw = (f"memory bandwidth measured in the run: {prov['bandwidth_limit_gbps']:.0f} GB/s "
              f"({prov.get('bandwidth_limit_probe')}; probes in GB/s: {probes}); '% BW' is the "
              "bytes each problem must move over that")
        if (layout := prov.get("layout_limits")) is not None:
            had = [e for e in layout.values() if e.get("us") is not None]
            probes = ", ".join(sorted({e["probe"] for e in had})) or "none"
            bw += (f"; '% read' is a contiguous read of the same bytes over a row's time, '% layout' "
                   f"a read of the problem's attended K/V rows in its own layout ({probes}'s "
                   f"layout read, measured on {len(had)} of {len(layout)} problems)")
    elif prov.get("executor") == "ray":  # each GPU measures itself (listed once they report)
        bw = ("memory bandwidth measured in the run on each GPU (the executor line); '% BW' is the "
              "bytes each problem must move over the bandwidth of the GPU that measured the row")
    elif prov.get("gpu"):  # runs from before the bandwidth probes recorded a limit
        bw = "no bandwidth limit recorded in this run's provenance"
    else:
        bw = "no bandwidth figures without a GPU"
    gpus = [f"slot {n}: {g.get('gpu') or 'no GPU'} (index {g.get('gpu_index')}, {g.get('host')}"
            + (f", {g['gpu_uuid']}" if g.get("gpu_uuid") else "")
            + (f", {g['bandwidth_limit_gbps']:.0f} GB/s" if g.get("bandwidth_limit_gbps") else "") + ")"
            for n, g in enumerate(prov.get("gpus") or [])]
    where = [f"- executor: Ray {prov.get('ray_version')} at {prov.get('ray_address')}, "
             f"{prov.get('gpus_used')} GPUs, problems sharded over them (each GPU's bandwidth "
             f"is its own): {'; '.join(gpus) or 'none reported'}"] if prov.get("executor") == "ray" else []
    return [
        f"- command: `{prov['command']}`",
        f"- device: {device}" + (" (the run's driver)" if where else ""),
        *where,
        f"- {bw}",
        "- packages: " + ", ".join(f"{k} {v}" for k, v in sorted(pk.items())),
        f"- JIT disk caches: {prov.get('compile_caches', 'not recorded')}",
        f"- python {prov.get('python')}, commit {prov.get('commit')}, {prov.get('timestamp')}, "
        f"host {prov.get('host')}",
        *([f"- wall time of the cells: {prov['wall_s']:.0f} s"] if prov.get("wall_s") is not None else []),
    ]


def summary_counts(rows: list[dict]) -> str:
    counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
    return ", ".join(f"{n} {s}" for s, n in counts.items() if n)


SIDE_NOTE = ("Side by side: each backend's fastest passing variant per problem: median us "
             "[d]ense / [p]aged / [s]plit-k, % of measured bandwidth, the fastest vendor "
             "kernel's time over this one (> 1: faster than every vendor kernel on the problem) "
             "and its rank among all rows on the problem (#2= : tied, intervals overlap).")


def side_note(rows: list[dict]) -> str:
    """SIDE_NOTE, with what the ties were judged by where the run measured its repeatability."""
    noise, n = repeatability(rows)
    if noise is None:
        return SIDE_NOTE
    return (SIDE_NOTE + f" The intervals are widened by the run's repeatability, {100 * noise:.1f} % "
            f"(of {n} pairs of measurements of a cell, the {100 * REPEAT_QUANTILE:.0f}th percentile "
            "of how far apart their two medians came): rows closer than a remeasurement moves one "
            "are not ordered.")


def side_by_side(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """One line per problem, one column per backend (DSLs first, then vendor libraries)."""
    groups = by_backend(rows)
    names = sorted(groups, key=lambda b: (any(r.get("vendor") for r in groups[b]), b))
    first: dict[str, dict] = {}  # measured key -> its first row, in run order
    cells: dict[tuple[str, str], list[dict]] = {}  # (backend, measured key) -> its shown rows
    for r in rows:
        first.setdefault(measured_key(r), r)
    for name, group in groups.items():
        for r in group:
            cells.setdefault((name, measured_key(r)), []).append(r)
    labels = device_labels(rows)  # several GPUs: each line says which measured it
    body = []
    for key, row in first.items():
        vendor = f"{row['vendor_best']} {row['vendor_best_us']:.1f}" if row.get("vendor_best") else ""
        line = [row["problem"] + (f" @gpu {labels[device_id(row)]}" if labels else ""), vendor]
        for name in names:
            mine = cells.get((name, key), [])
            timed = [r for r in mine if r["status"] == "PASS" and r.get("median_us")]
            bad = sorted({r["status"] for r in mine if r["status"] in ("FAIL", "ERROR")})
            cell = ""
            if timed:
                r = min(timed, key=lambda r: r["median_us"])
                cell = f"{r['median_us']:.1f} [{r['variant'][0]}]"
                if r.get("pct_peak_bw") is not None:
                    cell += f" {r['pct_peak_bw']:.0f}%"
                if r.get("vs_vendor") is not None:
                    cell += f" {r['vs_vendor']:.2f}x"
                if r.get("rank"):
                    cell += f" #{rank_text(r)}"
            elif mine and all(r["status"] == "PASS" for r in mine):
                cell = "PASS"
            line.append(" ".join(filter(None, [cell, "+".join(bad)])) or "-")
        body.append(line)
    return ["problem", "fastest vendor (us)", *names], body


def by_gpu_model(rows: list[dict]) -> list[tuple[str, list[dict]]]:
    """The rows per GPU model where a run has several (a side-by-side table each, titled
    ': <model>'), else all of them under no title."""
    models = sorted({r["gpu"] for r in rows if r.get("gpu")})
    if len(models) < 2:
        return [("", rows)]
    return [(f": {m}", [r for r in rows if r.get("gpu") == m]) for m in models]


VENDOR_NOTE = ("Against the vendors: per backend, over the problems where it and a vendor kernel "
               "both pass, its fastest variant's time against the fastest vendor kernel's "
               "(> 1: faster); '% read' is the median over those problems of a pure read of the "
               "same bytes over its time. 'KV >= 256 MB' lists the same over the problems that "
               "large (bandwidth-bound), and '% layout read there' the range over them of a read "
               "of the same rows in the problem's own layout over its time.")
LARGE_KV = 256 * 10**6  # bytes of K and V past which a decode step is bound by HBM bandwidth


def against_vendors(group: list[dict]) -> list[dict]:
    """A backend's fastest timed row per problem where a vendor kernel passed too (its
    ``vs_vendor``), each problem counted once (the spread's repeats apart) and on its device."""
    return list(fastest_by_problem((r for r in summarised(group) if r.get("vs_vendor") is not None),
                                   measured_key).values())


def vendor_summary(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """One line per non-vendor backend: its fastest passing variant per problem against the
    fastest vendor kernel there (rows annotated), median / worst / best, over all problems and
    over those of KV >= 256 MB (with the best backend's % of the size-matched read there)."""
    groups = by_backend(rows)
    body = []
    for name in sorted(b for b, g in groups.items() if not any(r.get("vendor") for r in g)):
        best = against_vendors(groups[name])
        if not best:
            continue
        ratios = [r["vs_vendor"] for r in best]
        reads = [r["pct_read"] for r in best if r.get("pct_read") is not None]
        large = [r for r in best if (r.get("kv_bytes") or 0) >= LARGE_KV]
        large_reads = [r["pct_read"] for r in large if r.get("pct_read") is not None]
        large_layout = [r["pct_layout_read"] for r in large if r.get("pct_layout_read") is not None]
        body.append([name, str(len(ratios)), f"{statistics.median(ratios):.2f}x", f"{min(ratios):.2f}x",
                     f"{max(ratios):.2f}x", f"{statistics.median(reads):.0f}" if reads else "",
                     str(len(large)),
                     f"{statistics.median([r['vs_vendor'] for r in large]):.2f}x" if large else "",
                     f"{min(large_reads):.0f}-{max(large_reads):.0f}" if large_reads else "",
                     f"{min(large_layout):.0f}-{max(large_layout):.0f}" if large_layout else ""])
    return ["backend", "problems", "median", "worst", "best", "% read (median)",
            "KV >= 256 MB", "median there", "% read there", "% layout read there"], body


TIME_NOTE = ("Where the time went: per GPU and backend, its rows, when its first and last row "
             "were written (s from the run's first row) and its first calls (set-up, compile and "
             "first launch, summed): a backend's first row comes after its worker started and its "
             "first kernel compiled.")


def time_spent(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per (GPU, backend), in the order each began: rows, first and last row written (s from the
    run's first row), their first calls summed (s); empty for rows written before they carried
    ``written_s``."""
    timed = [r for r in rows if r.get("written_s") is not None]
    if not timed:
        return [], []
    start = min(r["written_s"] for r in timed)
    labels = device_labels(rows)
    spans: dict[tuple, list[dict]] = {}
    for r in sorted(timed, key=lambda r: r["written_s"]):
        spans.setdefault((labels.get(device_id(r), ""), r["backend"]), []).append(r)
    body = []
    for (gpu, backend), group in spans.items():
        first_calls = sum(r.get("first_call_ms") or 0 for r in group) / 1e3
        body.append(([gpu] if labels else []) + [
            backend, str(len(group)), f"{group[0]['written_s'] - start:.0f}",
            f"{group[-1]['written_s'] - start:.0f}", f"{first_calls:.1f}"])
    header = (["GPU"] if labels else []) + ["backend", "rows", "first row (s)", "last row (s)",
                                            "first calls (s)"]
    return header, sorted(body, key=lambda b: (len(b[0]), b[0])) if labels else body  # GPU 2 before 10


TUNING_NOTE = ("What tuning changed: per backend, each knob the tuner (--tune) moved away from its "
               "rule's choice, on how many cells, and the median change in time between the "
               "rule's configuration and the pick (the search's own cold-L2 timings); 'kept': "
               "cells where the rule's choice stayed. A move that recurs across problems is a "
               "rule's candidate, one seen once a problem's (scripts/tuning_gaps.py lists the cells).")


def tuned_cells(rows: Iterable[dict]) -> list[tuple]:
    """(implementation, problem, rule's knobs, its us, pick's knobs, its us) of each tuned cell
    whose search timed the rule's configuration (its ``tuning_trace``, the rule's first; the
    pick's knobs as its launch reported them)."""
    cells = []
    for r in rows:
        trace = r.get("tuning_trace") or []
        if r.get("status") != "PASS" or not trace or not r.get("tuning_rule_us") \
                or not r.get("tuning_best_us"):
            continue
        names = {k for config, _ in trace for k in config}
        pick = {k: v for k, v in (r.get("config") or {}).items() if k in names}
        cells.append((r["impl"], r["problem"], trace[0][0], r["tuning_rule_us"], pick,
                      r["tuning_best_us"]))
    return cells


def knob_changes(rule: dict, pick: dict) -> list[tuple]:
    """(knob, rule's value, pick's value) for each knob the pick sets otherwise, by name."""
    return [(k, rule.get(k), v) for k, v in sorted(pick.items()) if rule.get(k) != v]


def knob_moves(cells: Iterable[tuple]) -> tuple[list[str], list[list[str]]]:
    """Per backend and knob move (rule's value -> pick's) over ``cells`` (as ``tuned_cells``
    gives them): the cells that made it and the median change in time; 'kept' for the cells
    whose pick is the rule's own configuration."""
    changes: dict[tuple, list[float]] = {}
    for impl, _, rule, rule_us, pick, pick_us in cells:
        if not rule_us:
            continue
        for k, a, b in knob_changes(rule, pick) or [("kept", None, None)]:
            changes.setdefault((impl.split("/")[0], k, str(a), str(b)), []).append(pick_us / rule_us - 1)
    body = [[backend, k, "" if k == "kept" else f"{a} -> {b}", str(len(found)),
             f"{100 * statistics.median(found):+.1f}"]
            for (backend, k, a, b), found in sorted(changes.items(), key=lambda t: (t[0][0], -len(t[1])))]
    return ["backend", "knob", "rule -> tuned", "cells", "median change %"], body


SPREAD_NOTE = ("Spread between GPUs: the problems measured on every GPU of the run (the largest and "
               "the smallest): per implementation, the slowest GPU's median over the fastest's (these "
               "measurements are also the run's repeatability). Ranks and vendor ratios compare rows "
               "of one GPU only.")


def gpu_spread(rows: list[dict]) -> tuple[list[str], list[list[str]]]:
    """Per (implementation, problem) timed on more than one device: the devices, the fastest
    and slowest medians (us) and the slowest over the fastest, less one, in %."""
    timed: dict[tuple[str, str], dict[str, dict]] = {}
    for r in rows:
        if r["status"] == "PASS" and r.get("median_us") and device_id(r) is not None:
            timed.setdefault((r["impl"], problem_key(r)), {}).setdefault(device_id(r), r)  # its first
    labels = device_labels(rows)
    body = []
    for (impl, _), per_device in timed.items():
        if len(per_device) > 1:
            # sorted, not min and max: on a tie those both return the first, one GPU named twice
            fast, *_, slow = sorted(per_device.values(), key=lambda r: r["median_us"])
            body.append([impl, fast["problem"], str(len(per_device)),
                         f"{fast['median_us']:.1f} (gpu {labels[device_id(fast)]})",
                         f"{slow['median_us']:.1f} (gpu {labels[device_id(slow)]})",
                         f"{100 * (slow['median_us'] / fast['median_us'] - 1):.1f}"])
    return ["implementation", "problem", "GPUs", "fastest us", "slowest us", "spread %"], body


def compile_note(group: list[dict], on_gpu: bool) -> str:
    """How long first calls took (prepare + first launch, synced), for a backend that compiles."""
    what = next((r.get("compiles") for r in group if r.get("compiles")), "")
    firsts = [r["first_call_ms"] for r in group if r.get("first_call_ms") is not None]
    if not what or not firsts or not on_gpu:  # interpreters and simulators compile nothing
        return ""
    tuned = [r["tuning_s"] for r in group if r.get("tuning_s") is not None]
    tuning = (f" Autotuned on each problem (--tune): {min(tuned):.1f}-{max(tuned):.1f} s of "
              f"tuning over these cells, apart from the first call." if tuned else "")
    return (f"Compiles at run time ({what}): first call (set-up + compile + launch, synced) "
            f"{min(firsts):.0f}-{max(firsts):.0f} ms over these cells, apart from the timed "
            "median; a configuration compiled by an earlier cell of the run is not compiled "
            "again." + tuning)


def render_markdown(prov: dict, rows: list[dict]) -> str:
    mark = incomplete(prov, rows)
    parts = ["# decode-bench results", "", *([f"**{mark}** (the run was stopped)", ""] if mark else []),
             *provenance_lines(prov), "", f"Cells: {summary_counts(rows)}. " + COLUMNS_NOTE, ""]
    from harness import scorecard  # it reads the registry (the code's lines, capabilities)
    header, body = scorecard.scorecard(rows, prov)
    if body:
        parts += ["## Scorecard", "", scorecard.SCORE_NOTE, "", markdown(header, body), ""]
    header, body = vendor_summary(rows)
    if body:
        parts += ["## Against the vendors", "", VENDOR_NOTE, "", markdown(header, body), ""]
    for model, mine in by_gpu_model(rows):
        header, body = side_by_side(mine)
        if len(header) > 2:
            parts += [f"## Side by side{model}", "", side_note(rows), "", markdown(header, body), ""]
    header, body = gpu_spread(rows)
    if body:
        parts += ["## Spread between GPUs", "", SPREAD_NOTE, "", markdown(header, body), ""]
    for backend, group in by_backend(rows).items():
        why = unavailable_everywhere(group)
        table = f"unavailable: {why}" if why else markdown_table(group)
        notes = [n for n in (_timing_note(group), *backend_notes(prov, rows, backend, group)) if n]
        parts += [f"## {backend}", "", *[n + "\n" for n in notes], table, ""]
    header, body = knob_moves(tuned_cells(first_measurements(rows)))
    if body:
        parts += ["## What tuning changed", "", TUNING_NOTE, "", markdown(header, body), ""]
    header, body = time_spent(rows)
    if body:
        parts += ["## Where the time went", "", TIME_NOTE, "", markdown(header, body), ""]
    return "\n".join(parts)


COLUMNS_NOTE = (
    "Status PASS/FAIL carries the worst error in units of the tolerance (specs/tolerance.py). "
    "'cold us' is the primary figure: CUDA events around one call with the L2 flushed, median "
    "and its 95 % bootstrap interval (repetitions until that interval is within 1 % of the "
    "median, or a cap); 'graph' the same call replayed from a CUDA graph (launch gaps removed); "
    "'wall' host wall-clock of a call plus a sync; 'launch' the host time for the call to return "
    "while the GPU is busy (dispatch and launch overhead; '!' marks a note, 'n/a' a mode the call "
    "does not support). 'plan us': the host time of the work a serving loop redoes per batch "
    "before the call (a split plan and its device tensors, a library's plan), median, apart from "
    "the timed call, with the device idle (a plan that copies from pageable memory waits for the "
    "stream: behind running kernels it costs more). GB/s and % BW from the cold figure; '% read' "
    "is a pure read of the same bytes (same cold-L2 protocol, launched to fill the GPU at that "
    "size, measured in the run) over the row's time: how near the size-matched limit; '% layout' "
    "a read of exactly the problem's attended K/V rows in its own layout (strided, or gathered "
    "through its block table) over the row's time: how near what the layout allows. 'rank' "
    "on the problem: 1 + the rows "
    "faster beyond doubt (intervals apart); '=' marks a tie (overlapping intervals). 'vs vendor' "
    "is the fastest vendor kernel's time on the same problem over this row's: > 1 is faster than "
    "all of them. '1st call ms' is set-up plus the first launch, synced (JIT compilation "
    "included; an autotuner's search, with --tune, is not: 'tuned in' in the last column, and "
    "'tuned:' / 'cache:' mark a config tuned in this run or read from the tuning cache).")


def mode_notes(group: list[dict]) -> str:
    """The distinct notes of the secondary modes (graph capture refused, hidden syncs)."""
    notes = {}
    for r in group:
        for mode in ("graph", "launch"):
            if r.get(f"{mode}_note"):
                notes.setdefault(f"{mode}: {r[f'{mode}_note']}", []).append(r["variant"])
    exposed = [r for r in group if r.get("cold_note")]
    if exposed:  # counts differ per row: one line for them all
        notes[f"cold: the host launch was not hidden behind the spin in some calls of {len(exposed)} "
              "row(s) (cold_note in results.csv says how many): their medians can hold host time"] = \
            [r["variant"] for r in exposed]
    return " ".join(f"{note} ({', '.join(sorted(set(v)))})." for note, v in notes.items())


def backend_notes(prov: dict, rows: list[dict], backend: str, group: list[dict]) -> list[str]:
    """What a backend's table needs said above it: compile times, mode notes, missing variants."""
    return [compile_note(group, bool(prov.get("gpu"))), mode_notes(group),
            missing_variants(rows, backend)]


def render_text(prov: dict, rows: list[dict], width: int | None = None) -> str:
    """The tables as printed, fitted to ``width`` (the terminal's): one per backend, then the
    side-by-side one (printed last), cut into parts of a few backends each when too wide."""
    width = width or terminal_width()
    parts = []
    for backend, group in by_backend(rows).items():
        why = unavailable_everywhere(group)
        parts.append(f"\n== {backend} ==")
        parts += [n for n in backend_notes(prov, rows, backend, group) if n]
        parts.append(f"unavailable: {why}" if why else text_table(group, width))
    for model, mine in by_gpu_model(rows):
        header, body = side_by_side(mine)
        if len(header) > 2:
            parts += [f"\n== side by side{model} ==\n{side_note(rows)}", *fit_columns(header, body, width)]
    header, body = vendor_summary(rows)
    if body:
        parts += [f"\n== against the vendors ==\n{VENDOR_NOTE}", columns(header, body)]
    header, body = gpu_spread(rows)
    if body:
        parts += [f"\n== spread between GPUs ==\n{SPREAD_NOTE}", columns(header, body)]
    return "\n".join(parts)


def _timing_note(group: list[dict]) -> str:
    methods = sorted({r["timing"] for r in group if r.get("timing")})
    return f"Timing: {'; '.join(methods)}." if methods else ""


def render_csv(rows: list[dict]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_FIELDS, extrasaction="ignore")
    writer.writeheader()
    for r in rows:
        flat = dict(r)
        flat["config"] = json.dumps(r.get("config") or {})
        flat["spec"] = json.dumps(r["spec"])
        writer.writerow(flat)
    return buf.getvalue()


def write_whole(path: Path, text: str) -> Path:
    """``path``, written whole under a temporary name, then renamed: never found half-written."""
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(text)
    tmp.replace(path)
    return path


def write_all(out_dir: Path, prov: dict, rows: list[dict]) -> None:
    """results.json, .csv and .md, each written whole (``write_whole``)."""
    for name, text in (("results.json", json.dumps({"provenance": prov, "rows": rows}, indent=1)),
                       ("results.csv", render_csv(rows)), ("results.md", render_markdown(prov, rows))):
        write_whole(out_dir / name, text)


def incomplete(prov: dict, rows: list[dict]) -> str | None:
    """'incomplete: N of M cells' for a run that did not finish (stopped, killed), else None.
    Runs from before the mark are taken as complete."""
    total = prov.get("cells_total")
    if total is None or prov.get("complete"):
        return None
    return f"incomplete: {len({r['cell'] for r in rows if 'cell' in r})} of {total} cells"
