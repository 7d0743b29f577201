"""The tolerance from one token to a million: how close every kernel comes to it, and up to which
length each negative control is still caught.

    python scripts/long_context.py controls --out DIR     # the controls at every length, on this device
    python scripts/long_context.py table RUN [DIR]        # the markdown tables, from a run of
                                                          # `harness run --workloads lengths --no-timing`
                                                          # (and the controls' controls.json)

The controls are float32 PyTorch attention streamed over chunks of a sequence (as a split kernel
would), each with one classic mistake: ``wrong_scale`` (1/sqrt(head_dim - 1)), ``bf16_scores``
(scores rounded to bf16 before the softmax), ``drop_one_token`` (the last token left out),
``reads_past_end`` (one token past the length read). ``fp32_chunked``, the same code without a
mistake, must pass everywhere.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from harness import report  # noqa: E402
from specs.inputs import make_inputs  # noqa: E402
from specs.reference import reference  # noqa: E402
from specs.tolerance import compare  # noqa: E402
from specs.workloads import LENGTHS, model_problem  # noqa: E402

CHUNK = 1 << 16  # tokens a control reads at once
CONTROLS = ("fp32_chunked", "wrong_scale", "bf16_scores", "drop_one_token", "reads_past_end")
CONTROL_CASES = (("bfloat16", "paged", 16), ("float32", "paged", 16))


def attend(inputs, control: str):
    """Float32 online softmax over chunks of the first ``length`` rows (``control`` makes the
    mistake of its name); returns out (input dtype) and lse (float32), batch 1."""
    p = inputs.problem
    length = p.seq_lens[0] + {"drop_one_token": -1, "reads_past_end": 1}.get(control, 0)
    scale = 1 / math.sqrt(p.head_dim - 1) if control == "wrong_scale" else p.scale
    q = inputs.q[0].float().view(p.num_kv_heads, p.group_size, p.head_dim)
    shape = (p.num_kv_heads, p.group_size)
    m = torch.full(shape, -torch.inf, device=q.device)
    l = torch.zeros(shape, device=q.device)
    acc = torch.zeros(shape + (p.head_dim,), device=q.device)
    for start in range(0, length, CHUNK):
        k, v = inputs.rows(0, start, min(length, start + CHUNK))
        s = torch.einsum("hgd,lhd->hgl", q, k.float()) * scale
        if control == "bf16_scores":
            s = s.bfloat16().float()
        m_new = torch.maximum(m, s.amax(-1))
        alpha = torch.exp(m - m_new)
        e = torch.exp(s - m_new[..., None])
        l = l * alpha + e.sum(-1)
        acc = acc * alpha[..., None] + torch.einsum("hgl,lhd->hgd", e.to(inputs.q.dtype).float(), v.float())
        m = m_new
    out = (acc / l[..., None]).reshape(1, p.num_q_heads, p.head_dim).to(inputs.q.dtype)
    return out, (m + torch.log(l)).reshape(1, p.num_q_heads)


def controls(out_dir: Path) -> None:
    rows = []
    for dtype, layout, page_size in CONTROL_CASES:
        for n in LENGTHS:
            p = model_problem("llama3-8b", [n], layout, dtype, page_size)
            inputs = make_inputs(p, 0)
            ref = reference(inputs)
            for control in CONTROLS:
                if control == "drop_one_token" and n == 1:
                    continue  # nothing left: no output at all
                c = compare(p, *attend(inputs, control), ref)
                rows.append({"control": control, "dtype": dtype, "layout": f"{layout}{page_size}",
                             "length": n, "passed": c.passed, "nonfinite": c.n_nonfinite,
                             "out_err_ratio": c.out_err_ratio, "lse_err_ratio": c.lse_err_ratio})
                print(f"{control:15} {dtype:9} {n:8} {'PASS' if c.passed else 'FAIL'} "
                      f"out {c.out_err_ratio:.3g} lse {c.lse_err_ratio:.3g}", flush=True)
            del inputs, ref
            torch.cuda.empty_cache()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "controls.json").write_text(json.dumps(rows, indent=1))


def _length_label(n: int) -> str:
    return f"{n >> 20}M" if n >= 1 << 20 else f"{n >> 10}k" if n >= 1024 else str(n)


def table(run: Path, control_dir: Path | None) -> str:
    """Per backend, variant and dtype: the largest error ratio (out or LSE, over the layouts) at
    each length, or what the row was when it was no PASS."""
    cells: dict[tuple, dict[int, list]] = defaultdict(lambda: defaultdict(list))
    for r in report.load(run)[1]:
        n = r["spec"]["seq_lens"][0]
        key = (r["backend"], r["variant"], r["spec"]["dtype"])
        if r["status"] == "PASS":
            cells[key][n].append(max(x for x in (r.get("out_err_ratio"), r.get("lse_err_ratio")) if x is not None))
        elif r["status"] in ("FAIL", "ERROR"):
            cells[key][n].append(r["status"])
    lines = ["| backend | variant | dtype | " + " | ".join(_length_label(n) for n in LENGTHS) + " |",
             "|---|---|---|" + "---|" * len(LENGTHS)]
    for key in sorted(cells):
        row = []
        for n in LENGTHS:
            got = cells[key].get(n, [])
            bad = [g for g in got if isinstance(g, str)]
            row.append(bad[0] if bad else f"{max(got):.3f}" if got else "-")
        lines.append("| " + " | ".join(key) + " | " + " | ".join(row) + " |")
    if control_dir is not None:
        ctl = json.loads((control_dir / "controls.json").read_text())
        lines += ["", "| control | dtype | layout | " + " | ".join(_length_label(n) for n in LENGTHS) + " |",
                  "|---|---|---|" + "---|" * len(LENGTHS)]
        by = defaultdict(dict)
        for c in ctl:
            ratio = max(x for x in (c["out_err_ratio"], c["lse_err_ratio"]) if x is not None)
            figure = "NaN" if c.get("nonfinite") else f"{ratio:.3g}"
            by[(c["control"], c["dtype"], c["layout"])][c["length"]] = \
                f"{'PASS' if c['passed'] else 'FAIL'} {figure}"
        for key in sorted(by):
            lines.append("| " + " | ".join(key) + " | " + " | ".join(by[key].get(n, "-") for n in LENGTHS) + " |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("controls")
    c.add_argument("--out", type=Path, required=True)
    t = sub.add_parser("table")
    t.add_argument("run", type=Path)
    t.add_argument("controls", type=Path, nargs="?")
    args = ap.parse_args()
    if args.cmd == "controls":
        controls(args.out)
    else:
        print(table(args.run, args.controls))


if __name__ == "__main__":
    report.script_main(main)
