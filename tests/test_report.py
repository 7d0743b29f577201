"""``harness report`` (tables and plots of saved results) and ``harness compare`` (regressions
beyond the noise) on result files made for the purpose, plus the statistics under them."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from harness import report, results, stats, timing
from specs import workloads

ROOT = Path(__file__).resolve().parent.parent
IMPLS = [("triton/dense", False), ("triton/split-k", False), ("cupy/dense", False),
         ("torch-cudnn/dense", True)]


def fake_run(folder: Path, gpu: str = "NVIDIA H200", slow: dict | None = None, noise: float = 0.005,
             fail: str | None = None, seed: int = 0, names=("grid", "ragged"), layout="dense") -> Path:
    """A results.json as the harness writes it: the default grid and ragged problems (dense) or
    other workloads' problems of one layout,
    each implementation's time = bytes / (its bandwidth) with an interval of +-noise;
    ``slow`` multiplies one implementation's times, ``fail`` makes one implementation FAIL."""
    rng = np.random.default_rng(seed)
    rows = []
    problems = [p for p in workloads.named(names) if p.layout == layout]
    for i, p in enumerate(problems):
        for impl, vendor in IMPLS:
            backend, variant = impl.split("/")
            gbps = {"triton": 3800.0, "cupy": 3000.0, "torch-cudnn": 3900.0}[backend]
            us = p.bytes_moved / gbps / 1e3 * (1 + rng.normal(0, noise / 4)) * (slow or {}).get(impl, 1.0)
            row = {"cell": len(rows), "impl": impl, "backend": backend, "variant": variant,
                   "problem": p.label(), "spec": p.to_dict(), "vendor": vendor,
                   "status": "PASS", "timing": "cuda-events", "primary_mode": "cold",
                   "median_us": us, "ci_lo_us": us * (1 - noise), "ci_hi_us": us * (1 + noise),
                   "reps": 40, "gbps": p.bytes_moved / us / 1e3, "pct_peak_bw": 100 * p.bytes_moved / us / 1e3 / 4300,
                   "graph_us": us * 0.98, "wall_us": us + 30, "launch_us": 12.0}
            if impl == fail:
                row.update(status="FAIL", reason="out max err 1 (9x tol)", median_us=None)
            rows.append(row)
    folder.mkdir(parents=True, exist_ok=True)
    prov = {"gpu": gpu, "commit": "test", "command": "python -m harness run", "packages": {},
            "bandwidth_limit_gbps": 4300.0, "bandwidth": {"copy": 4200.0}, "bandwidth_limit_probe": "copy"}
    (folder / "results.json").write_text(json.dumps({"provenance": prov, "rows": rows}))
    return folder


def flips(stdout: str) -> int:
    """The number of ranking flips ``compare`` reports."""
    return int(re.search(r"ranking: .*?(\d+) in opposite orders", stdout).group(1))


def harness(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "harness", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300, env={**os.environ, "MPLBACKEND": "Agg"})


def test_compare_flags_a_regression_beyond_the_noise_and_nothing_else(tmp_path):
    base = fake_run(tmp_path / "a", seed=1)
    same = fake_run(tmp_path / "b", seed=2)  # another run of the same: noise only
    res = harness("compare", str(base), str(same))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "slower" not in res.stdout.split("summary:")[-1] and " same" in res.stdout
    slow = fake_run(tmp_path / "c", slow={"cupy/dense": 1.10}, seed=3)  # 10 % slower
    res = harness("compare", str(base), str(slow))
    assert res.returncode == 1
    flagged = [line for line in res.stdout.splitlines() if line.rstrip().endswith("slower")]
    assert flagged and all(line.startswith("cupy/dense") for line in flagged)
    assert len(flagged) == sum(1 for line in res.stdout.splitlines() if line.startswith("cupy/dense"))
    assert flips(harness("compare", str(base), str(same)).stdout) == 0
    # cupy 10 % slower stays behind everything it was behind: no flip either
    assert flips(res.stdout) == 0
    # within the noise: 0.5 % slower with +-0.5 % intervals is no regression
    assert harness("compare", str(base), str(fake_run(tmp_path / "d", slow={"cupy/dense": 1.005},
                                                       seed=1))).returncode == 0


def test_compare_with_a_second_pair_in_the_other_order_cancels_a_drift(tmp_path):
    every = {impl: 1.04 for impl, _ in IMPLS}  # the GPU 4 % slower on each later run
    cupy_and_drift = {**every, "cupy/dense": 1.04 * 1.10}
    old = fake_run(tmp_path / "old", seed=1)
    new = fake_run(tmp_path / "new", slow=cupy_and_drift, seed=2)  # ran second: drift + change
    new2 = fake_run(tmp_path / "new2", slow={"cupy/dense": 1.10}, seed=3)  # ran first
    old2 = fake_run(tmp_path / "old2", slow=every, seed=4)  # ran last: drift
    res = harness("compare", str(old), str(new))  # one pair: the drift passes for a change
    moved = [line for line in res.stdout.splitlines() if line.rstrip().endswith("slower")]
    assert any(line.startswith("triton/") for line in moved)
    res = harness("compare", str(old), str(new), "--again", str(old2), str(new2))
    assert res.returncode == 1, res.stdout + res.stderr
    rows = [line for line in res.stdout.splitlines() if line.startswith(("triton/", "cupy/", "torch-"))]
    moved = [line for line in rows if line.rstrip().endswith("slower")]
    assert moved and all(line.startswith("cupy/dense") for line in moved)
    assert len(moved) == sum(line.startswith("cupy/dense") for line in rows)
    assert all("the two orders disagree" in line for line in rows if line.startswith("triton/"))
    assert float(re.search(r"Drift between consecutive runs .*?slower\): ([+-][\d.]+) %", res.stdout)[1]) > 3
    assert report.agree("slower", "not timed in both") == "same (slower in the first pair only)"
    assert report.agree("regression (PASS -> FAIL)", "same").startswith("regression")
    assert report.agree("faster", "faster") == "faster" and report.agree("slower", "same") == "same"
    # the second pair from another GPU is refused as a first one would be
    other = fake_run(tmp_path / "h100", gpu="NVIDIA H100 80GB HBM3")
    res = harness("compare", str(old), str(new), "--again", str(other), str(new2))
    assert res.returncode == 2 and "different devices" in res.stderr


def test_compare_flags_a_lost_pass_and_refuses_other_gpus(tmp_path):
    base = fake_run(tmp_path / "a")
    res = harness("compare", str(base), str(fake_run(tmp_path / "b", fail="triton/dense")))
    assert res.returncode == 1 and "regression (PASS -> FAIL)" in res.stdout
    res = harness("compare", str(base), str(fake_run(tmp_path / "c", gpu="NVIDIA H100 80GB HBM3")))
    assert res.returncode == 2 and "different devices" in res.stderr


def test_report_renders_tables_and_plots(tmp_path):
    run = fake_run(tmp_path / "run")
    res = harness("report", str(run), "--out", str(tmp_path / "rep"))
    assert res.returncode == 0, res.stdout + res.stderr
    pngs = sorted(p.name for p in (tmp_path / "rep" / "plots").iterdir())
    assert pngs == ["llama3-8b_bfloat16_dense_vs_batch.png", "llama3-8b_bfloat16_dense_vs_seq_len.png",
                    "llama3-8b_bfloat16_ragged.png"]
    assert all((tmp_path / "rep" / "plots" / p).read_bytes()[:4] == b"\x89PNG" for p in pngs)
    md = (tmp_path / "rep" / "results.md").read_text()
    assert "## Side by side" in md and "cold us [95% CI]" in md


def test_report_plots_only_axes_with_lines(tmp_path):
    """The models workload: each shape and dtype at 16 x three lengths (a line against seq_len)
    and 1 x 32k, no two batches at one length (points only against batch: no such plot)."""
    run = fake_run(tmp_path / "run", names=("models",), layout="paged")
    assert harness("report", str(run)).returncode == 0
    pngs = sorted(p.name for p in (run / "plots").iterdir())
    assert pngs == sorted(f"{m}_{dtype}_paged16_vs_seq_len.png" for m in workloads.MODELS
                          for dtype in ("bfloat16", "float16"))


def test_bootstrap_interval_covers_the_median_and_tightens_with_samples():
    rng = np.random.default_rng(0)
    few = list(100 + rng.normal(0, 2, 20))
    many = list(100 + rng.normal(0, 2, 400))
    for x in (few, many):
        e = stats.estimate(x)
        assert e.ci_lo <= e.median <= e.ci_hi
    assert stats.estimate(many).rel_half_width < stats.estimate(few).rel_half_width
    assert stats.median_ci(few) == stats.median_ci(few)  # seeded: same samples, same interval
    assert not stats.precise_enough(list(100 + rng.normal(0, 30, 20)), 0.01)
    assert stats.precise_enough(list(100 + rng.normal(0, 0.5, 40)), 0.01)


def test_ranks_tie_overlapping_intervals():
    assert stats.ranks([(10, 11), (10.5, 12), (13, 14), (11.5, 13.5)]) == [1, 1, 3, 2]
    rows = [{"impl": n, "status": "PASS", "spec": {"p": 1}, "problem": "p", "median_us": m,
             "ci_lo_us": lo, "ci_hi_us": hi, "timing": "cuda-events"}
            for n, m, lo, hi in (("a/x", 10, 9.9, 10.1), ("b/x", 10.05, 10.0, 10.2), ("c/x", 12, 11.9, 12.1))]
    results.add_ranks(rows)
    assert [(r["rank"], r["tied"]) for r in rows] == [(1, True), (1, True), (3, False)]


def _us(median: float, lo: float, hi: float) -> dict:
    return {"median_us": median, "ci_lo_us": lo, "ci_hi_us": hi}


@pytest.mark.parametrize("old,new,verdict", [
    (_us(100, 99, 101), _us(110, 109, 111), "slower"),
    (_us(100, 99, 101), _us(90, 89, 91), "faster"),
    (_us(100, 95, 105), _us(104, 99, 109), "same"),
    (_us(100, 99.9, 100.1), _us(101, 100.9, 101.1), "same"),
])
def test_classify(old, new, verdict):
    assert report.classify({"status": "PASS", **old}, {"status": "PASS", **new}) == verdict
    cpu = {"status": "PASS", "timing": "cpu wall-clock (interpreter/simulator: not a performance figure)"}
    assert report.classify({**cpu, **old}, {**cpu, **new}).startswith("not compared")


def test_compare_reports_a_ranking_flip(tmp_path):
    base = fake_run(tmp_path / "a")  # triton (3800 GB/s) is behind cudnn (3900) everywhere
    flipped = fake_run(tmp_path / "b", slow={"torch-cudnn/dense": 1.06})  # now cudnn is behind
    res = harness("compare", str(base), str(flipped))
    assert flips(res.stdout) > 0
    assert "flipped: torch-cudnn/dense vs triton/dense" in res.stdout
    # cudnn 2.6 % ahead before, triton 3.3 % ahead after: each flip says how far apart, and the
    # count of those beyond the drift between runs (2 %) is all of them
    assert re.search(r"flipped: torch-cudnn/dense vs triton/dense on .* \(3\.\d % apart at most\)", res.stdout)
    assert f"({flips(res.stdout)} of them more than 2 % apart in one run)" in res.stdout
    assert "host launch exposed" not in res.stdout


def test_a_flip_says_where_a_rows_samples_can_hold_host_time(tmp_path):
    """A flip whose row saw the host's launch outlast the cold protocol's spin in more than a
    fifth of its calls says so (those samples can hold host time, not the kernel's); a few such
    calls are not worth a word."""
    base = fake_run(tmp_path / "a")
    flipped = fake_run(tmp_path / "b", slow={"torch-cudnn/dense": 1.06})
    data = json.loads((flipped / "results.json").read_text())
    for r in data["rows"]:
        if r["impl"] == "torch-cudnn/dense":
            calls = 300 if "b1x" in r["problem"] else 10
            r["cold_note"] = (f"host launch not hidden behind the spin in {calls} of 400 calls: "
                              "those samples can hold host time")
    (flipped / "results.json").write_text(json.dumps(data))
    lines = [line for line in harness("compare", str(base), str(flipped)).stdout.splitlines()
             if "flipped:" in line]
    assert lines and all(("b1x" in line) == ("host launch exposed: torch-cudnn/dense new, 300 of 400 "
                                              "calls" in line) for line in lines)
    assert any("b1x" in line for line in lines) and any("b1x" not in line for line in lines)


def with_repeats(folder: Path, drift: float, rng_seed: int = 0) -> Path:
    """Each row of the largest and the smallest problem measured a second time on the same GPU
    (as ``executors.plan``'s ``remeasure`` does), its median moved by up to ``drift``."""
    data = json.loads((folder / "results.json").read_text())
    rng = np.random.default_rng(rng_seed)
    sizes = sorted({r["spec"]["seq_lens"].__len__() * sum(r["spec"]["seq_lens"]): r["problem"]
                    for r in data["rows"]}.items())
    again = {sizes[0][1], sizes[-1][1]}
    base = len(data["rows"])
    for r in list(data["rows"]):
        if r["problem"] in again and r.get("median_us"):
            k = 1 + drift * rng.uniform(-1, 1)
            data["rows"].append(dict(r, cell=base + len(data["rows"]), spread_repeat=True,
                                     median_us=r["median_us"] * k, ci_lo_us=r["ci_lo_us"] * k,
                                     ci_hi_us=r["ci_hi_us"] * k))
    (folder / "results.json").write_text(json.dumps(data))
    return folder


def test_repeatability_is_what_a_second_measurement_moves_and_ties_rows_closer_than_it():
    """Cells measured twice on one GPU give the run's repeatability (the 90th percentile of how
    far apart the two came); the ranks widen each interval by it, so rows closer than that tie,
    and the repeats are neither ranked nor shown again."""
    rows = []
    for k in range(10):  # 10 cells measured twice, 0-9 % apart
        one = {"impl": f"x{k}/dense", "backend": f"x{k}", "variant": "dense", "status": "PASS",
               "median_us": 100.0, "spec": {"k": k},
               "problem": "p", "ci_lo_us": 99.9, "ci_hi_us": 100.1}
        rows += [one, dict(one, median_us=100.0 * (1 + k / 100), spread_repeat=True)]
    assert results.repeatability(rows) == (pytest.approx(0.08), 10)  # the 9th of 10 (nearest rank)
    assert results.repeatability(rows[:8]) == (None, 4)  # too few to say
    assert results.repeatability([dict(r, timing="cpu wall clock") for r in rows]) == (None, 0)
    # over several GPUs the second measurement is the spread's, on another GPU of the same model
    on_two = [dict(r, gpu="H100", gpu_index=n % 2, host="h") for n, r in enumerate(rows)]
    assert results.repeatability(on_two) == (pytest.approx(0.08), 10)
    assert results.repeatability([dict(r, gpu=("H100", "H200")[n % 2]) for n, r in enumerate(rows)]) \
        == (None, 0)  # two models: not one cell measured twice
    assert results.repeatability([dict(r, config={"block_n": n % 2}) for n, r in enumerate(rows)]) \
        == (None, 0)  # two configurations (each GPU tuned its own): not one cell either
    # four GPUs: each other GPU's measurement against the cell's own, not the range of all four
    on_four = [dict(r, cell=4 * k + g, gpu="H100", gpu_index=g, median_us=100.0 * (1 + g * k / 300))
               for k, r in enumerate(rows[::2]) for g in range(4)]
    assert results.repeatability(on_four) == (pytest.approx(0.06), 30)  # 27th of 30: k=9, g=2
    a, b = ({"impl": name, "status": "PASS", "median_us": us, "ci_lo_us": us - 0.1, "ci_hi_us": us + 0.1,
             "spec": {"n": 1}, "problem": "q"} for name, us in (("a/dense", 100.0), ("b/dense", 103.0)))
    results.add_ranks([a, b])  # no repeatability measured: the 95 % intervals alone order them
    assert (a["rank"], b["rank"], a["tied"]) == (1, 2, False)
    results.add_ranks([a, b] + rows)  # 3 % apart, a remeasurement moves a row up to 9 %: tied
    assert (a["rank"], b["rank"], a["tied"]) == (1, 1, True)
    assert not any(r.get("rank") for r in rows if r.get("spread_repeat"))
    assert [r["impl"] for r in results.by_backend(rows)["x3"]] == ["x3/dense"]  # shown once
    failed = dict(rows[6], status="FAIL", median_us=None)  # a second measurement that failed: shown
    assert [r["status"] for r in results.by_backend(rows + [failed])["x3"]] == ["PASS", "FAIL"]
    # compare's verdicts widen the intervals too: 3 % slower is "same" against 8 % of noise
    assert report.classify(a, b) == "slower"
    assert report.classify(a, b, noise=(0.08, 0.08)) == "same"


def test_with_a_repeatability_an_order_needs_the_middle_of_both_rows_calls_apart():
    """A cell whose calls split between two levels has a tight interval around its median: with
    the run's repeatability measured, the order is judged by the middle 60 % of its calls."""
    a = {"impl": "a/dense", "status": "PASS", "median_us": 100.0, "ci_lo_us": 99.9, "ci_hi_us": 100.1,
         "p20_us": 99.8, "p80_us": 100.2, "spec": {"n": 1}, "problem": "q"}
    b = dict(a, impl="b/dense", median_us=110.0, ci_lo_us=109.8, ci_hi_us=110.2, p20_us=100.5, p80_us=110.4)
    assert results.ordering_interval(b, None) == (109.8, 110.2)  # no repeatability: as before
    assert results.ordering_interval(b, 0.01) == pytest.approx((100.5 * 0.995, 110.4 * 1.005))
    assert report._order(a, b) == 1 and report._order(a, b, 0.001) == 1  # a's calls all below b's
    b_low = dict(b, p20_us=99.9)  # a fifth of b's calls as fast as a's: no order
    assert report._order(a, b_low) == 1 and report._order(a, b_low, 0.001) == 0
    assert report.classify(a, b_low, noise=(0.001, 0.001)) == "same"
    assert report.classify(a, b_low) == "slower"


def test_where_the_time_went_is_each_gpus_backends_in_the_order_they_began():
    rows = [{"backend": b, "written_s": t, "first_call_ms": fc, "gpu_index": g, "host": "h"}
            for b, t, fc, g in (("helion", 130.0, 9000, "1"), ("cupy", 100.0, 2000, "0"),
                                ("cupy", 112.0, None, "0"), ("helion", 101.0, 400, "1"),
                                ("triton", 120.0, 0, "0"))]
    header, body = results.time_spent(rows)
    assert header[:2] == ["GPU", "backend"]
    assert body == [["0", "cupy", "2", "0", "12", "2.0"], ["0", "triton", "1", "20", "20", "0.0"],
                    ["1", "helion", "2", "1", "30", "9.4"]]
    assert results.time_spent([{"backend": "x"}]) == ([], [])  # rows from before written_s


def test_compare_counts_no_flip_between_rows_closer_than_both_runs_repeatability(tmp_path):
    """The same near tie that flips beyond the 95 % intervals (cudnn 2.6 % ahead, then triton
    3.3 %) is no flip when each run measured that a second measurement moves a row by more."""
    base = with_repeats(fake_run(tmp_path / "a"), drift=0.08)
    flipped = with_repeats(fake_run(tmp_path / "b", slow={"torch-cudnn/dense": 1.06}), drift=0.08, rng_seed=1)
    res = harness("compare", str(base), str(flipped))
    assert flips(res.stdout) == 0, res.stdout
    assert "widened by a repeatability of" in res.stdout
    bare = re.search(r"by the 95 % intervals alone: \d+ pairs ordered, (\d+) in opposite orders", res.stdout)
    assert bare and int(bare.group(1)) > 0  # the same flips, still said
    steady = with_repeats(fake_run(tmp_path / "c"), drift=0.004)
    steady_flipped = with_repeats(fake_run(tmp_path / "d", slow={"torch-cudnn/dense": 1.06}), drift=0.004)
    assert flips(harness("compare", str(steady), str(steady_flipped)).stdout) > 0


@pytest.mark.parametrize("period", [1, 2, 4, 8])
@pytest.mark.parametrize("own_launches", range(8))
def test_launch_phase_cycling_visits_every_phase_equally(period, own_launches):
    """The GPU timer's design claim: with its empty launches before each repetition,
    each batch visits every phase of a period dividing LAUNCH_PHASES equally often, whatever
    number of kernels the call (plus the flush and the spin) launches itself."""
    launched, phases, shifts = 0, [], timing.phase_shifts()
    for _ in range(timing.BATCH):
        launched += next(shifts)  # the empty launches the timer issues first
        phases.append(launched % period)  # the phase the timed call starts in
        launched += own_launches
    assert sorted(Counter(phases).values()) == [timing.BATCH // period] * period


def test_a_wide_side_by_side_table_is_cut_to_fit_the_terminal():
    from harness.results import fit_columns

    header = ["problem", "fastest vendor (us)"] + [f"backend-{i}" for i in range(8)]
    body = [[f"problem {n}", "flashinfer/paged 12.3"] + ["123.4 [p] 95% 0.99x #2="] * 8 for n in range(3)]
    parts = fit_columns(header, body, width=80)
    assert len(parts) > 1
    assert all(len(line) <= 80 for part in parts for line in part.splitlines())
    shown = [name for part in parts for name in part.splitlines()[0].split() if name.startswith("backend-")]
    assert shown == [f"backend-{i}" for i in range(8)]  # each backend once, in order
    assert all(part.startswith("problem") for part in parts)


def test_every_backend_and_variant_has_its_own_colour_and_marker():
    from harness.report import style
    from impls import registry

    names = sorted({i.row_name(lay) for i in registry.all_impls() for lay in i.layouts})
    styles = {(style(n)["color"], style(n)["marker"]) for n in names}
    assert len(names) >= 11 and len(styles) == len(names)  # the old palette had 10 colours
    assert style("cupy/dense") != style("triton/split-k")  # the pair the old palette drew alike
    assert style("triton/paged") == style("triton/paged")  # stable


def test_report_names_the_problems_no_plot_shows(tmp_path):
    run = fake_run(tmp_path / "run")
    rows = json.loads((run / "results.json").read_text())
    lone = dict(rows["rows"][0])
    lone["spec"] = {**lone["spec"], "name": "lonely", "seq_lens": [777]}
    lone["problem"] = "lonely b1xs777"
    rows["rows"].append(lone)
    (run / "results.json").write_text(json.dumps(rows))
    res = harness("report", str(run))
    assert res.returncode == 0 and "not plotted (1 problem(s)" in res.stdout and "lonely b1xs777" in res.stdout


def test_report_on_a_folder_of_runs_writes_the_index(tmp_path):
    for name, stamp in (("old", "2026-01-01T00:00"), ("new", "2026-02-01T00:00"), ("stopped", "2026-03-01T00:00")):
        run = fake_run(tmp_path / "gpu" / name)
        data = json.loads((run / "results.json").read_text())
        data["provenance"].update(timestamp=stamp, cells_total=len(data["rows"]) + (5 if name == "stopped" else 0),
                                  complete=name != "stopped")
        (run / "results.json").write_text(json.dumps(data))
    res = harness("report", str(tmp_path))
    assert res.returncode == 0, res.stderr
    lines = {line.split("|")[1].strip(): line for line in (tmp_path / "INDEX.md").read_text().splitlines()
             if line.startswith("| gpu/")}
    assert "**current**" in lines["gpu/new"] and "superseded" in lines["gpu/old"]
    assert "incomplete: " in lines["gpu/stopped"] and "**current**" not in lines["gpu/stopped"]
    assert "plots" in lines["gpu/new"]  # a missing file is named


def test_vendor_summary_takes_each_backends_fastest_variant_per_problem():
    """Median / worst / best of the fastest variant against the fastest vendor kernel, and the
    bandwidth-bound problems apart; vendor backends get no line."""
    from harness import results

    def row(backend, variant, problem, us, vendor=False, kv=10**9):
        return {"backend": backend, "variant": variant, "problem": problem, "status": "PASS",
                "impl": f"{backend}/{variant}", "spec": {"p": problem}, "median_us": us,
                "vendor": vendor, "kv_bytes": kv, "pct_read": 1000 / us, "pct_layout_read": 1100 / us}

    rows = [row("v1", "one-pass", "a", 10.0, True), row("v2", "one-pass", "a", 9.0, True),
            row("dsl", "dense", "a", 12.0), row("dsl", "split-k", "a", 6.0),
            row("v1", "one-pass", "b", 10.0, True, kv=1), row("dsl", "dense", "b", 20.0, kv=1),
            row("dsl", "dense", "c", 5.0)]  # no vendor on c: not counted
    results.add_vendor_ratios(rows)
    header, body = results.vendor_summary(rows)
    assert [line[0] for line in body] == ["dsl"]
    line = dict(zip(header, body[0]))
    assert line["problems"] == "2" and line["worst"] == "0.50x" and line["best"] == "1.50x"
    assert line["median"] == "1.00x" and line["KV >= 256 MB"] == "1"
    assert line["median there"] == "1.50x" and line["% read there"] == "167-167"
    assert line["% layout read there"] == "183-183"


def test_compare_a_run_over_two_gpus_with_one_gpu_run(tmp_path):
    """A run over two GPUs measures some problems again on the other GPU (the spread): compare
    matches each problem once, on its own GPU, counts rows whose status changed, and sets the
    two wall times side by side."""
    base = fake_run(tmp_path / "a", seed=1)
    spread = fake_run(tmp_path / "b", seed=2, fail="cupy/dense")
    for folder, wall in ((base, 600.0), (spread, 320.0)):
        data = json.loads((folder / "results.json").read_text())
        data["provenance"]["wall_s"] = wall
        if folder == spread:  # a repeat of every row on another GPU, 20 % slower: matched never
            repeats = [dict(r, spread_repeat=True, gpu_index=1, host="h",
                            median_us=(r["median_us"] or 1) * 1.2) for r in data["rows"]]
            data["rows"] = [dict(r, gpu_index=0, host="h") for r in data["rows"]] + repeats
        (folder / "results.json").write_text(json.dumps(data))
    res = harness("compare", str(base), str(spread))
    assert res.returncode == 1, res.stdout + res.stderr  # the lost passes
    problems = len(json.loads((base / "results.json").read_text())["rows"])
    failed = sum(1 for r in json.loads((base / "results.json").read_text())["rows"] if r["impl"] == "cupy/dense")
    assert f"verdicts: {problems} rows in both runs, {failed} with another status" in res.stdout
    assert "cupy/dense on " in res.stdout and ": PASS -> FAIL" in res.stdout
    assert "wall time of the cells: old 600 s, new 320 s (new/old 0.53)" in res.stdout
    assert " slower" not in res.stdout.split("summary:")[-1].split("verdicts:")[0]  # no repeat matched
    assert flips(res.stdout) == 0


def test_vendor_ratios_counts_a_problem_the_spread_measured_on_every_gpu_once(tmp_path):
    """scripts/vendor_ratios.py over a run on two GPUs whose every problem was measured again
    on the other GPU (the spread), the repeats 20 % slower: each problem counted once, on its
    own GPU (a repeat paired with a vendor row of the other GPU gave no ratio and dropped the
    problem); --below lists the backend's problems under it, as the table rounds them."""
    run = fake_run(tmp_path / "two", seed=3)
    data = json.loads((run / "results.json").read_text())
    repeats = [dict(r, spread_repeat=True, gpu_index=1, host="h", median_us=r["median_us"] * 1.2)
               for r in data["rows"]]
    data["rows"] = [dict(r, gpu_index=0, host="h") for r in data["rows"]] + repeats
    (run / "results.json").write_text(json.dumps(data))
    res = subprocess.run([sys.executable, "scripts/vendor_ratios.py", "--below", "0.9", str(run)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    problems = sum(p.layout == "dense" for p in workloads.named(("grid", "ragged")))
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines()[2:4]}
    assert rows["cupy"][1] == rows["triton"][1] == str(problems)
    listed = res.stdout.split("cupy: under 0.9x")[1].split("\n\n")[0].strip().splitlines()[1:]
    assert len(listed) == problems  # cupy's 3000 GB/s against the vendor's 3900: 0.77x
    assert "triton: under" not in res.stdout  # 3800 against 3900: 0.97x


def test_vendor_ratios_pairs_a_later_folder_s_rows_named_otherwise_by_shape(tmp_path):
    """scripts/vendor_ratios.py over a run with the vendor rows, then a rerun of one backend on a
    workload file that names the same problems otherwise (twice as fast): the rerun's rows take
    the earlier names, replace the backend's rows there and pair with the vendor's (unpaired,
    they had no vendor row: the backend kept its old, slower rows)."""
    first = fake_run(tmp_path / "first", seed=1)
    again = fake_run(tmp_path / "again", seed=2)
    data = json.loads((again / "results.json").read_text())
    data["rows"] = [dict(r, spec={**r["spec"], "name": f"file.{r['cell']}"},
                         problem=f"file.{r['cell']} {r['problem']}", median_us=r["median_us"] / 2)
                    for r in data["rows"] if r["backend"] == "cupy"]
    (again / "results.json").write_text(json.dumps(data))
    res = subprocess.run([sys.executable, "scripts/vendor_ratios.py", "--below", "0.9", str(first),
                          str(again)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    problems = sum(p.layout == "dense" for p in workloads.named(("grid", "ragged")))
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines()[2:4]}
    assert rows["cupy"][1] == str(problems)
    assert "cupy: under" not in res.stdout  # 6000 GB/s against the vendor's 3900
    assert "file." not in res.stdout


def test_compare_counts_rows_in_both_runs_without_the_gone_ones(tmp_path):
    base = fake_run(tmp_path / "a", seed=1)
    fewer = fake_run(tmp_path / "b", seed=2)
    data = json.loads((fewer / "results.json").read_text())
    total = len(data["rows"])
    data["rows"] = data["rows"][1:]  # one row gone
    (fewer / "results.json").write_text(json.dumps(data))
    res = harness("compare", str(base), str(fewer))
    assert f"verdicts: {total - 1} rows in both runs, 0 with another status" in res.stdout
    assert "1 gone rows" in res.stdout


def test_compare_matches_a_problem_named_differently_by_its_shape(tmp_path):
    """A run of a workload file whose problems carry other names than the named workload's (the
    same shapes): compare pairs them by shape, says how many, and leaves apart two problems of
    one shape that one run tells apart by name."""
    base = fake_run(tmp_path / "a", seed=1)
    renamed = fake_run(tmp_path / "b", seed=2)
    data = json.loads((renamed / "results.json").read_text())
    total = len(data["rows"])
    for row in data["rows"]:
        row["spec"] = {**row["spec"], "name": "file." + str(row["cell"] // len(IMPLS))}
        row["problem"] = "file " + row["problem"]
    (renamed / "results.json").write_text(json.dumps(data))
    res = harness("compare", str(base), str(renamed))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"verdicts: {total} rows in both runs, 0 with another status" in res.stdout
    assert f"{total} rows matched by shape (named differently)" in res.stdout
    assert "gone rows" not in res.stdout and "new rows" not in res.stdout
    # a second problem of the first one's shape under a third name: that shape stays unmatched
    twin = dict(data["rows"][0], spec={**data["rows"][0]["spec"], "name": "twin"}, cell=-1)
    data["rows"].append(twin)
    (renamed / "results.json").write_text(json.dumps(data))
    res = harness("compare", str(base), str(renamed))
    assert f"{total - 1} rows matched by shape (named differently)" in res.stdout
    assert "2 new rows" in res.stdout and "1 gone rows" in res.stdout


def test_best_variant_sets_a_backends_fastest_variant_per_problem_side_by_side(tmp_path):
    """scripts/best_variant.py: per problem, the backend's fastest passing variant in each run
    (its split-K twice as fast in the new one: every problem 50 % faster, whichever variant was
    the old best), counted beyond the noise; runs of different GPUs are refused."""
    old = fake_run(tmp_path / "old", seed=1)
    new = fake_run(tmp_path / "new", seed=1, slow={"triton/split-k": 0.5})
    res = subprocess.run([sys.executable, "scripts/best_variant.py", str(old), str(new), "triton"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    problems = sum(p.layout == "dense" for p in workloads.named(("grid", "ragged")))  # fake_run's
    lines = [line for line in res.stdout.splitlines() if line.strip().endswith(("bf16", "fp16", "fp32"))]
    assert len(lines) == problems and all("new" in line and "triton/split-k" in line.split("new")[1]
                                          for line in lines)
    assert all(-51 < float(line.split("%")[0]) < -49 for line in lines), res.stdout
    assert f"{problems} problems: {problems} faster and 0 slower by more than 2 %" in res.stdout
    other = fake_run(tmp_path / "h100", gpu="NVIDIA H100", seed=1)
    refused = subprocess.run([sys.executable, "scripts/best_variant.py", str(old), str(other), "triton"],
                             cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2 and "different GPUs" in refused.stderr


def test_best_variant_takes_the_problems_whose_launch_did_not_change_as_the_pairs_control(tmp_path):
    """An A/B of a launch rule: problems where every variant kept its config ran the same kernels
    (marked =, even where another variant came out fastest by a hair); their spread (here about
    +3 %, a drift) is printed as the control, and the changed problems are counted beyond it,
    not beyond the 2 % noise alone."""
    def edit(folder, change):
        data = json.loads((folder / "results.json").read_text())
        for n, r in enumerate(data["rows"]):  # fake_run: one row per implementation a problem
            r["config"] = {"block_n": 64}
            change(r, n // len(IMPLS))
        (folder / "results.json").write_text(json.dumps(data))
        return folder

    def old_rows(r, i):  # the dense kernel the fastest everywhere
        r["median_us"] *= 1.0 if r["impl"] == "triton/dense" else 1.5

    def new_rows(r, i):  # even problems: split-K with a new tile, 2.5 % faster; odd: 3 % drift
        old_rows(r, i)
        if i % 2 == 0 and r["impl"] == "triton/split-k":
            r.update(config={"block_n": 128}, median_us=r["median_us"] / 1.5 * 0.975)
        elif i % 2 == 1:
            r["median_us"] *= 1.03
            if i % 4 == 1 and r["impl"] == "triton/split-k":  # now the fastest, its config as was
                r["median_us"] *= 0.999 / 1.5
    old = edit(fake_run(tmp_path / "old", seed=1, noise=0.0), old_rows)
    new = edit(fake_run(tmp_path / "new", seed=1, noise=0.0), new_rows)
    res = subprocess.run([sys.executable, "scripts/best_variant.py", str(old), str(new), "triton"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    problems = sum(p.layout == "dense" for p in workloads.named(("grid", "ragged")))
    same = [line for line in res.stdout.splitlines() if re.match(r"\s*\+(2\.9|3\.0)% = ", line)]
    assert len(same) == problems // 2, res.stdout
    assert any("new" in line and "triton/split-k" in line.split("new")[1] for line in same)
    assert f"control: {problems // 2} problems kept every variant's config" in res.stdout
    assert "+2.9 to +3.0 %" in res.stdout
    # 2.5 % faster is beyond the 2 % noise but within the control's 3 %: not counted
    assert f"{problems} problems: {problems - problems // 2} faster" in res.stdout
    assert f"changed: {problems - problems // 2} problems: 0 faster and 0 slower by more than 3.0 %" \
        in res.stdout


def test_best_variant_takes_the_untouched_variants_rows_as_the_control_of_a_code_ab(tmp_path):
    """An A/B of kernel code: the dense kernel 20 % faster on even problems and 3 % on odd ones
    with its config as it was, split-K's code untouched but 4 % slower (a drift beyond the 2 %
    noise), and one split-K row with a new config 30 % faster (not the drift: it changed). Without
    --control the problems that kept their configs read as the control and none as changed; with
    --control split-k, split-K's same-config rows are the drift (+4 %), and only the even
    problems' 20 % counts beyond it, not the odd ones' 3 %."""
    def edit(folder, dense, split, changed=None):
        data = json.loads((folder / "results.json").read_text())
        for n, r in enumerate(data["rows"]):  # fake_run: one row per implementation a problem
            r["config"] = {"block_n": 64}
            r["median_us"] *= {"triton/dense": dense(n // len(IMPLS)),
                               "triton/split-k": split}.get(r["impl"], 2.0)
        if changed:
            row = next(r for r in data["rows"] if r["impl"] == "triton/split-k")
            row.update(config={"block_n": 128}, median_us=row["median_us"] * changed)
        (folder / "results.json").write_text(json.dumps(data))
        return folder

    old = edit(fake_run(tmp_path / "old", seed=1, noise=0.0), lambda i: 1.0, 1.5)
    new = edit(fake_run(tmp_path / "new", seed=1, noise=0.0), lambda i: 0.97 if i % 2 else 0.8,
               1.5 * 1.04, changed=0.7 / 1.04)
    problems = sum(p.layout == "dense" for p in workloads.named(("grid", "ragged")))
    even = (problems + 1) // 2
    command = [sys.executable, "scripts/best_variant.py", str(old), str(new), "triton"]
    blind = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert "changed: 1 problems" in blind.stdout, blind.stdout
    res = subprocess.run(command + ["--control", "split-k"], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stdout + res.stderr
    assert not re.search(r"% = ", res.stdout)  # no problem claims to have run the same kernels
    assert f"control: {problems - 1} rows of split-k (code unchanged), old against new: +4.0 to +4.0 %" \
        in res.stdout, res.stdout
    assert f"every problem's fastest row: {problems} problems: {even} faster and 0 slower by " \
        "more than 4.0 %" in res.stdout, res.stdout
    assert f"triton/dense: {problems} rows: {even} faster and 0 slower by more than 4.0 %" in res.stdout
    missing = subprocess.run(command + ["--control", "fused"], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
    assert missing.returncode == 2 and "no row of fused" in missing.stderr


def test_scorecard_states_each_backends_median_share_of_the_layout_read():
    """The scorecard's '% layout (median)': over a backend's fastest timed row per problem, the
    median of its ``pct_layout_read``; empty for rows of runs that did not measure it."""
    from harness import scorecard

    def row(backend, problem, us, layout):
        return {"backend": backend, "variant": "dense", "problem": problem, "status": "PASS",
                "impl": f"{backend}/dense", "spec": {"p": problem}, "median_us": us,
                "vendor": False, "kv_bytes": 10**9, "pct_read": 50.0, "pct_layout_read": layout}

    rows = [row("a", "p1", 10.0, 80.0), row("a", "p2", 10.0, 90.0), row("a", "p3", 10.0, 70.0),
            row("b", "p1", 10.0, None)]
    header, body = scorecard.scorecard(rows, {"code": {}})
    lines = {line[0]: dict(zip(header, line)) for line in body}
    assert lines["a"]["% layout (median)"] == "80" and lines["b"]["% layout (median)"] == ""


def test_a_script_over_run_folders_says_which_path_is_not_a_run(tmp_path):
    """scripts/vendor_ratios.py given a file that is not a run's results: one line naming it,
    status 2, no traceback."""
    (tmp_path / "notes.json").write_text("not json")
    res = subprocess.run([sys.executable, "scripts/vendor_ratios.py", str(tmp_path / "notes.json")],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "Traceback" not in res.stderr, res.stderr
    assert res.stderr.startswith(f"error: {tmp_path / 'notes.json'}: not a run's results")
    cut = tmp_path / "cut"  # a run cut short: its rows, and a provenance that is not JSON
    cut.mkdir()
    (cut / "rows.jsonl").write_text("{}\n")
    (cut / "provenance.json").write_text("{")
    res = subprocess.run([sys.executable, "scripts/vendor_ratios.py", str(cut)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and res.stderr.startswith(f"error: {cut}: not a run's rows"), res.stderr
