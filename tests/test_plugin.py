"""The README's "Adding a backend", tried: a backend written outside the tree
(``tests/plugin_backend.py``), registered through ``DECODE_BENCH_PLUGINS``, passes the whole
conformance suite and runs in the harness with no change outside its own module."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = {"DECODE_BENCH_PLUGINS": "tests.plugin_backend"}


def _run(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=900, env={**os.environ, **env})


def _suite(backend: str, plugins: dict) -> tuple[int, str]:
    """The conformance suite on one plugin backend (8 drawn examples): tests passed, and the
    summary line; a failing run fails the calling test."""
    res = _run("-m", "pytest", "conformance", "-q", "-p", "no:cacheprovider", "-k", backend,
               env={**plugins, "DECODE_BENCH_EXAMPLES": "8"})
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    return int(re.search(r"(\d+) passed", res.stdout).group(1)), res.stdout.splitlines()[-1]


def test_an_outside_backend_passes_the_whole_conformance_suite():
    passed, summary = _suite("plugin-torch", PLUGIN)
    # every property on dense, paged and split-k, invalid inputs and split counts included
    assert passed >= 50 and "skipped" not in summary, summary


def test_an_outside_backend_runs_in_the_harness(tmp_path):
    res = _run("-m", "harness", "run", "--backends", "plugin-torch", "--workloads", "cpu",
               "--out", str(tmp_path), env=PLUGIN)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert {r["impl"] for r in rows} == {"plugin-torch/dense", "plugin-torch/paged",
                                         "plugin-torch/split-k"}
    assert all(r["status"] == "PASS" for r in rows), [r["reason"] for r in rows]
    assert any(r.get("config_summary", "").startswith("num_splits=") for r in rows)


OUT_ONLY = {"DECODE_BENCH_PLUGINS": "tests.plugin_out_only"}


def test_an_out_only_kernel_with_stated_limits_passes_the_suite():
    """No LSE, one variant, a minimum head_dim, a GQA-group limit, a split-count limit and an
    ``Unsupported`` raised in prepare: the suite draws within the limits, judges out alone and
    treats the refusal as unsupported, not as a failure."""
    passed, summary = _suite("plugin-out-only", OUT_ONLY)
    # every property split-k runs (split invariance on out alone), invalid inputs included
    assert passed >= 20 and "skipped" not in summary, summary


def test_an_out_only_kernel_is_checked_and_timed_in_the_harness(tmp_path):
    problems = [{"num_q_heads": 8, "num_kv_heads": 2, "head_dim": 64, "seq_lens": [40, 9],
                 "layout": "paged", "page_size": ps} for ps in (16, 256)]
    res = _run("-m", "harness", "run", "--backends", "plugin-out-only", "--out", str(tmp_path),
               *[a for p in problems for a in ("--problem", json.dumps(p))], env=OUT_ONLY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = {r["spec"]["page_size"]: r for r in json.loads((tmp_path / "results.json").read_text())["rows"]}
    assert rows[16]["status"] == "PASS" and rows[16]["median_us"] > 0, rows[16]
    assert rows[16]["lse_err_ratio"] is None and rows[16]["out_err_ratio"] < 1
    assert rows[256]["status"] == "UNSUPPORTED" and "page_size 256" in rows[256]["reason"]
    assert "tol, lse -)" in (tmp_path / "results.md").read_text()
