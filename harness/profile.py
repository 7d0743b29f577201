"""``python -m harness profile IMPL --problem JSON``: one implementation on one problem, for a
profiler. It prepares the launch as a run does (seeded inputs, the implementation's options),
makes the first call (compilation, a library's set-up) outside what is profiled, then:

* with ``--ncu`` where Nsight Compute is installed: runs itself again under ``ncu``, its
  launches between cudaProfilerStart and Stop (``--profile-from-start off``, so a vendor
  library's kernels, whose names are not known in advance, are seen and nothing else is), and
  prints ncu's report of the sections asked for;
* otherwise: the launch's configuration and the time of a call by the harness's own protocol
  (cold L2 on a GPU; the interpreter's wall clock on a CPU), checked against the float64 oracle.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import torch

from conformance.checks import check
from harness.timing import CpuTimer, GpuTimer
from impls import registry
from specs.inputs import default_device, make_inputs
from specs.problem import DecodeProblem, ProblemError

NCU_SECTIONS = ("SpeedOfLight", "Occupancy", "LaunchStats", "MemoryWorkloadAnalysis",
                "WarpStateStats")


def _options(args) -> dict:
    options = {}
    if args.config is not None:
        options["config"] = args.config
    if args.num_splits is not None:
        options["num_splits"] = args.num_splits
    return options


def _problem(args) -> DecodeProblem:
    try:
        data = json.loads(args.problem)
    except json.JSONDecodeError as e:
        raise ProblemError(f"--problem: not JSON ({e})") from None
    return DecodeProblem.from_dict(data, where="--problem")


def profiled_calls(args) -> str:
    """The child under ncu: the first call outside, ``--calls`` more inside the profiled range."""
    impl, problem = registry.get(args.impl), _problem(args)
    inputs = make_inputs(problem, args.seed, default_device())
    out, lse = inputs.new_outputs()
    launch = impl.prepare(inputs, out, lse, **_options(args))
    launch.run()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(args.calls):
        launch.run()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    return f"{args.impl} on {problem.label()}: {launch.config}\n{_fewest_bytes(problem)}"


def _fewest_bytes(problem: DecodeProblem) -> str:
    """The bytes a correct call must read (K, V, q, the block table and scales in use) and write
    (out, lse), each beside the ncu counter it compares with (--metrics
    dram__bytes_read.sum,dram__bytes_write.sum): what a kernel moves on top."""
    written = problem.query.written_bytes(problem.batch)
    return (f"  fewest bytes a call reads: {problem.bytes_moved - written:,} (K and V: "
            f"{problem.kv_bytes:,}); writes: {written:,}")


def profile(args) -> str:
    """What ``harness profile`` prints (see the module's docstring)."""
    impl, problem = registry.get(args.impl), _problem(args)
    if why := impl.availability():
        raise ProblemError(f"{args.impl}: unavailable here ({why})")
    if args.ncu:
        ncu = shutil.which("ncu")
        if ncu is None or not torch.cuda.is_available():
            raise ProblemError("--ncu: needs Nsight Compute ('ncu' on PATH) and a GPU")
        cmd = [ncu, "--profile-from-start", "off", *[a for s in args.sections for a in ("--section", s)],
               *(["--metrics", ",".join(args.metrics)] if args.metrics else []),
               sys.executable, "-m", "harness", "profile", args.impl, "--problem", args.problem,
               "--seed", str(args.seed), "--calls", str(args.calls), "--under-ncu"]
        if args.config is not None:
            cmd += ["--config", json.dumps(args.config)]
        if args.num_splits is not None:
            cmd += ["--num-splits", str(args.num_splits)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            raise ProblemError(f"ncu exited {res.returncode}: {(res.stderr or res.stdout)[-1500:]}")
        return res.stdout
    device = default_device()
    inputs = make_inputs(problem, args.seed, device)
    checked = check(impl, inputs, options=_options(args))
    timer = GpuTimer(device, quick=True, modes=("cold",)) if device.type == "cuda" else CpuTimer()
    timing = next(iter(timer(checked.run.launch.run).values()))
    e = timing.estimate
    return "\n".join([
        f"{args.impl} on {problem.label()} (seed {args.seed}, {device.type})",
        f"  launch config: {checked.run.launch.config}",
        _fewest_bytes(problem),
        f"  check: {'PASS' if checked.comparison.passed else 'FAIL'} ({checked.comparison.summary()})",
        f"  first call (set-up and compilation included): {checked.run.seconds * 1e3:.1f} ms",
        f"  a call: median {e.median:.2f} us [{e.ci_lo:.2f}-{e.ci_hi:.2f}], {e.reps} repetitions "
        f"({timing.method})",
        "  (--ncu: Nsight Compute's sections of the same launches)" if device.type == "cuda" else
        "  (no GPU: the interpreter's wall clock, not a kernel time)"])
