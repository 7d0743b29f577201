"""A run as one self-contained HTML page (``report.html``): it opens from disk with no server and
no network (style, script and plots inlined). The same tables as the markdown and the text, from
the same builders (``results``, ``scorecard``): the scorecard, the provenance, the vendor
summary, every row in one table (sortable by any column, filtered by backend, workload, layout,
dtype, model shape, status and GPU), the side-by-side tables, each backend's table, what did not pass
and why, the plots. A stopped run says so at the top."""

from __future__ import annotations

import base64
import html
from pathlib import Path

from harness import results, scorecard

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:2px 6px;
text-align:left;vertical-align:top}th{background:#f0f0f0;white-space:nowrap}td{max-width:36em}th.sort{cursor:pointer}
th.sort:after{content:" \\2195";color:#999}tr:nth-child(even){background:#fafafa}
.banner{background:#fde2e2;border:1px solid #e99;padding:.5em 1em;font-weight:bold}
.note{color:#555;max-width:70em}.filters select,.filters input{margin-right:1em}
img{max-width:100%;border:1px solid #ddd;margin:.5em 0}details{margin:.3em 0}
"""

# sort any table of class "sortable" by a header click (numbers as numbers); filter the rows
# table by the selects (a value of the cell's comma-separated ones: a problem two workloads
# share) and the text box (substring of the whole row)
SCRIPT = """
function cellValue(row, i) {
  const t = row.cells[i].textContent.trim();
  const n = parseFloat(t);
  return isNaN(n) || !/^[-+]?[0-9.]/.test(t) ? t.toLowerCase() : n;
}
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, i) {
    th.classList.add("sort");
    th.addEventListener("click", function () {
      const body = table.tBodies[0];
      const up = th.dataset.dir !== "asc";
      th.dataset.dir = up ? "asc" : "desc";
      const rows = Array.from(body.rows).sort(function (a, b) {
        const x = cellValue(a, i), y = cellValue(b, i);
        if (typeof x !== typeof y) return typeof x === "number" ? -1 : 1;
        return (x < y ? -1 : x > y ? 1 : 0) * (up ? 1 : -1);
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
function applyFilters() {
  const table = document.getElementById("rows");
  const heads = Array.from(table.tHead.rows[0].cells).map(function (c) { return c.textContent; });
  const picks = Array.from(document.querySelectorAll(".filters select")).map(function (s) {
    return [heads.indexOf(s.name), s.value];
  });
  const text = document.getElementById("filter-text").value.toLowerCase();
  let shown = 0;
  Array.from(table.tBodies[0].rows).forEach(function (r) {
    const ok = picks.every(function (p) {
        return !p[1] || r.cells[p[0]].textContent.split(",").indexOf(p[1]) >= 0; }) &&
      (!text || r.textContent.toLowerCase().includes(text));
    r.style.display = ok ? "" : "none";
    shown += ok ? 1 : 0;
  });
  document.getElementById("shown").textContent = shown;
}
document.querySelectorAll(".filters select, #filter-text").forEach(function (e) {
  e.addEventListener("input", applyFilters);
  e.addEventListener("change", applyFilters);
});
"""

ROW_COLUMNS = ("problem", "workload", "model", "layout", "dtype", "backend", "variant", "status", "us",
               "95% CI", "% BW", "% read", "% layout", "vs vendor", "rank", "gpu", "reason / config")
FILTERED = ("backend", "workload", "layout", "dtype", "model", "status", "gpu")


def _e(value) -> str:
    return html.escape(str(value))


def escape(value) -> str:
    return html.escape(str(value))


def link(href: str, text: str) -> str:
    return f'<a href="{_e(href)}">{_e(text)}</a>'


def table(header, body, cls: str = "sortable", ident: str = "", escaped: bool = False) -> str:
    """A table; ``escaped``: the cells are HTML already (links)."""
    ident = f' id="{ident}"' if ident else ""
    cell = (lambda c: c) if escaped else _e
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    rows = "".join("<tr>" + "".join(f"<td>{cell(c)}</td>" for c in line) + "</tr>" for line in body)
    return f'<table class="{cls}"{ident}><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>'


def _row_line(r: dict, gpu: str) -> list[str]:
    spec = r.get("spec") or {}
    timed = r.get("median_us") is not None
    ci = f"{r['ci_lo_us']:.1f}-{r['ci_hi_us']:.1f}" if timed and r.get("ci_lo_us") is not None else ""
    note = r.get("reason") or r.get("config_summary") or ""
    return [r["problem"], r.get("workload", ""), spec.get("name") or "", spec.get("layout", ""),
            spec.get("dtype", ""),
            r["backend"], r["variant"], r["status"], f"{r['median_us']:.2f}" if timed else "", ci,
            results._fmt(r.get("pct_peak_bw"), ".1f"), results._fmt(r.get("pct_read"), ".0f"),
            results._fmt(r.get("pct_layout_read"), ".0f"), results._fmt(r.get("vs_vendor"), ".2f"),
            results.rank_text(r) if r.get("rank") else "",
            gpu, note]


def _filters(body: list[list[str]]) -> str:
    out = []
    for name in FILTERED:
        i = ROW_COLUMNS.index(name)
        values = sorted({v for line in body for v in line[i].split(",") if v})
        if len(values) > 1:
            options = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in values)
            out.append(f'<label>{name} <select name="{name}"><option value="">all</option>'
                       f"{options}</select></label>")
    return ('<div class="filters">' + "".join(out) + '<label>text <input id="filter-text" '
            f'type="search"></label> <span id="shown">{len(body)}</span> rows shown</div>')


def _plots(folder: Path | None, inline: bool) -> list[str]:
    if not folder or not folder.is_dir():
        return []
    def src(p: Path) -> str:
        if inline:
            return f"data:image/png;base64,{base64.b64encode(p.read_bytes()).decode()}"
        return f"{folder.name}/{p.name}"  # beside the page: a committed run's plots
    return [f'<h3>{_e(p.stem)}</h3><img alt="{_e(p.stem)}" src="{_e(src(p))}">'
            for p in sorted(folder.glob("*.png"))]


def render(prov: dict, rows: list[dict], plots: Path | None = None, inline: bool = True) -> str:
    """The page, from annotated rows (``results.annotate``) and the run's provenance; the PNG
    plots of ``plots`` (a folder), when given, inlined (or, ``inline=False``, linked from the
    page's folder)."""
    parts = ["<h1>decode-bench results</h1>"]
    if mark := results.incomplete(prov, rows):
        parts.append(f'<p class="banner">{_e(mark)}: the run was stopped</p>')
    parts.append("<ul>" + "".join(f"<li>{_e(line[2:])}</li>" for line in results.provenance_lines(prov))
                 + f"</ul><p>Cells: {_e(results.summary_counts(rows))}.</p>")
    header, body = scorecard.scorecard(rows, prov)
    parts += ["<h2>Scorecard</h2>", f'<p class="note">{_e(scorecard.SCORE_NOTE)}</p>',
              table(header, body, ident="scorecard")]
    header, body = results.vendor_summary(rows)
    if body:
        parts += ["<h2>Against the vendors</h2>", f'<p class="note">{_e(results.VENDOR_NOTE)}</p>',
                  table(header, body)]
    labels = results.device_labels(rows)
    lines = [_row_line(r, labels.get(results.device_id(r), "")) for r in rows if not r.get("no_kernel")]
    parts += ["<h2>Every row</h2>", f'<p class="note">{_e(results.COLUMNS_NOTE)}</p>',
              _filters(lines), table(ROW_COLUMNS, lines, ident="rows")]
    for model, mine in results.by_gpu_model(rows):
        header, body = results.side_by_side(mine)
        if len(header) > 2:
            parts += [f"<h2>Side by side{_e(model)}</h2>", f'<p class="note">{_e(results.side_note(rows))}</p>',
                      table(header, body)]
    header, body = results.gpu_spread(rows)
    if body:
        parts += ["<h2>Spread between GPUs</h2>", f'<p class="note">{_e(results.SPREAD_NOTE)}</p>',
                  table(header, body)]
    wrong = [r for r in rows if r["status"] in ("FAIL", "ERROR")]
    if wrong:
        parts += ["<h2>Failed</h2>", table(["backend", "variant", "problem", "status", "reason"],
                                           [[r["backend"], r["variant"], r["problem"], r["status"],
                                             r.get("reason", "")] for r in wrong])]
    skipped: dict[tuple, int] = {}  # (backend, variant, status, reason) -> problems
    for r in rows:
        if r["status"] in ("UNSUPPORTED", "UNAVAILABLE") and not r.get("no_kernel"):
            key = (r["backend"], r["variant"], r["status"], r.get("reason", ""))
            skipped[key] = skipped.get(key, 0) + 1
    if skipped:
        parts += ["<h2>Not run, and why</h2>", table(["backend", "variant", "status", "reason", "problems"],
                                                      [[*k, n] for k, n in skipped.items()])]
    parts.append("<h2>Per backend</h2>")
    for backend, group in results.by_backend(rows).items():
        why = results.unavailable_everywhere(group)
        if why:
            content = f"<p>unavailable: {_e(why)}</p>"
        else:
            header, body, keep = results._backend_table(group)
            content = table(*results._subset(header, body, keep))
        parts.append(f"<details><summary>{_e(backend)}</summary>{content}</details>")
    header, body = results.knob_moves(results.tuned_cells(results.first_measurements(rows)))
    if body:
        parts += ["<h2>What tuning changed</h2>", f'<p class="note">{_e(results.TUNING_NOTE)}</p>',
                  table(header, body)]
    header, body = results.time_spent(rows)
    if body:
        parts += ["<h2>Where the time went</h2>", f'<p class="note">{_e(results.TIME_NOTE)}</p>',
                  table(header, body)]
    if images := _plots(plots, inline):
        parts += ["<h2>Plots</h2>", *images]
    return page(f"decode-bench: {prov.get('command', 'run')}", parts)


def page(title: str, parts: list[str]) -> str:
    return (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head><body>" + "\n".join(parts)
            + f"<script>{SCRIPT}</script></body></html>")


def write_page(path: Path, title: str, parts: list[str]) -> Path:
    """``path``, written whole (``results.write_whole``)."""
    return results.write_whole(path, page(title, parts))


def write(out_dir: Path, prov: dict, rows: list[dict], plots: Path | None = None,
          inline: bool = True) -> Path:
    """``out_dir/report.html``, written whole (``results.write_whole``)."""
    return results.write_whole(out_dir / "report.html", render(prov, rows, plots, inline))
