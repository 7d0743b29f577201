"""Numba's tensor-core probe (impls/numba/tensor_cores.py) timed beside Numba's two variants and
the built-in vendor kernels on the problems of a file, each checked against the float64 oracle
after its timing; the same cold-L2 protocol as every row (harness.timing.GpuTimer, cold mode).
On the device machine, from the repository root:
    python3 <this file> PROBLEMS.json [OUT.json]"""
import json
import sys

import impls  # noqa: F401  (first: the DSLs' modes)
import torch

from harness.timing import GpuTimer
from impls import registry
from impls.numba import tensor_cores
from specs import workloads
from specs.inputs import make_inputs
from specs.reference import reference
from specs.tolerance import compare

OTHERS = ("numba/one-pass", "numba/split-k", "torch-fa2/one-pass", "torch-cudnn/one-pass")


def main(path: str, out_path: str | None) -> None:
    device = torch.device("cuda")
    timer = GpuTimer(device, modes=("cold",))
    rows = []
    print(f"{'problem':58s} {'KV MB':>7s}  {'tc probe':>9s}  " + "  ".join(f"{n:>20s}" for n in OTHERS))
    for problem in workloads.load_file(path):
        inputs = make_inputs(problem, 0, device)
        ref = reference(inputs)
        row = {"problem": problem.label(), "kv_bytes": problem.kv_bytes}
        calls = {}
        try:
            run, out, lse = tensor_cores.prepare(inputs)
            calls["tc probe"] = (run, out, lse)
        except Exception as e:  # noqa: BLE001  (recorded, the others stand)
            row["tc probe"] = f"{type(e).__name__}: {e}"[:160]
        for name in OTHERS:
            impl = registry.get(name)
            try:
                out, lse = inputs.new_outputs()
                launch = impl.prepare(inputs, out, lse)
                calls[name] = (launch.run, out, lse)
            except Exception as e:  # noqa: BLE001
                row[name] = f"{type(e).__name__}: {e}"[:160]
        for name, (run, out, lse) in calls.items():
            try:
                median = timer(run)["cold"].estimate.median
                out.fill_(float("nan"))
                lse.fill_(float("nan"))
                run()
                torch.cuda.synchronize()
                result = compare(problem, out, lse, ref)
                row[name] = round(median, 2) if result.passed else f"FAIL {result.summary()[:120]}"
            except Exception as e:  # noqa: BLE001
                row[name] = f"{type(e).__name__}: {e}"[:160]
        rows.append(row)

        def cell(name):
            v = row.get(name)
            return f"{v:.1f}" if isinstance(v, float) else str(v)[:20]
        print(f"{problem.label()[:58]:58s} {problem.kv_bytes / 1e6:7.1f}  {cell('tc probe'):>9s}  "
              + "  ".join(f"{cell(n):>20s}" for n in OTHERS), flush=True)
        del inputs, ref, calls
        torch.cuda.empty_cache()
    if out_path:
        with open(out_path, "w") as f:
            json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else None)
