"""What a problem's layout alone costs a pure read (a GPU diagnostic, not part of a run): for
each problem, the contiguous read of its K/V bytes that every row's ``pct_read`` is over
(``harness.bandwidth.size_matched``, cold L2) beside a read of the same rows in the problem's own
layout (``harness.bandwidth.layout_reads``, each read probe's: dense rows strided by KV head, or
gathered through the block table at its page size; the best is the layout column, each probe's
in brackets), both launched to fill the GPU. The best is what a timed run states as each row's
``pct_layout_read``; it bounds a problem only where it is at least as fast as the problem's best
decode kernel (Triton's alone was not; CuPy's was on 15 of 16 problems of 256 MB or more:
results/nvidia-h200/2026-11-29-layout-read/README.md).
On the device machine:
    python3 scripts/layout_read.py --workloads heldout:441 [--min-kv-mb 256] [--out FILE.json]
"""

from __future__ import annotations

import argparse
import json

import impls  # noqa: F401  (first: picks the CPU interpreters before any DSL import)
import torch

from harness import bandwidth
from specs import workloads
from specs.inputs import make_inputs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--workloads", default="heldout:441", help="comma-separated workload names")
    parser.add_argument("--workload-file", help="a JSON list of problems instead")
    parser.add_argument("--min-kv-mb", type=float, default=0.0, help="only problems of this much K/V")
    parser.add_argument("--out", help="write the rows as JSON here too")
    args = parser.parse_args()
    problems = (workloads.load_file(args.workload_file) if args.workload_file
                else workloads.named(args.workloads.split(","), False))
    problems = [p for p in problems if p.kv_bytes >= args.min_kv_mb * 1e6]
    device = torch.device("cuda")
    limit = bandwidth.measure(device)["limit_gbps"]
    limits = bandwidth.size_matched(device, [p.kv_bytes for p in problems], limit)
    rows = []
    print(f"{'problem':60s} {'KV MB':>8s} {'contiguous us':>13s} {'layout us':>10s} {'ratio':>6s}")
    for p in problems:
        inputs = make_inputs(p, device=device)
        contiguous = bandwidth.read_limit_us(limits, p.kv_bytes)
        reads = bandwidth.layout_reads(inputs)
        best = min((v for v in reads.values() if isinstance(v, float)), default=None)
        rows.append({"problem": p.label(), "kv_bytes": p.kv_bytes, "contiguous_us": contiguous,
                     "layout_us": reads})
        ratio = f"{best / contiguous:6.2f}" if best and contiguous else "     -"
        each = "  ".join(f"{name} {us:.1f}" if isinstance(us, float) else f"{name}: {us}"
                         for name, us in reads.items())
        print(f"{p.label()[:60]:60s} {p.kv_bytes / 1e6:8.1f} {contiguous or float('nan'):13.1f} "
              f"{best or float('nan'):10.1f} {ratio}  ({each})", flush=True)
        del inputs
        torch.cuda.empty_cache()
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"limit_gbps": limit, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
