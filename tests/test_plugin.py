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


def test_an_outside_backend_passes_the_whole_conformance_suite():
    res = _run("-m", "pytest", "conformance", "-q", "-p", "no:cacheprovider", "-k", "plugin-torch",
               env={**PLUGIN, "DECODE_BENCH_EXAMPLES": "8"})
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    passed = int(re.search(r"(\d+) passed", res.stdout).group(1))
    # every property on dense, paged and split-k, invalid inputs and split counts included
    assert passed >= 50 and "skipped" not in res.stdout.splitlines()[-1], res.stdout[-2000:]


def test_an_outside_backend_runs_in_the_harness(tmp_path):
    res = _run("-m", "harness", "run", "--backends", "plugin-torch", "--workloads", "cpu",
               "--out", str(tmp_path), env=PLUGIN)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]
    rows = json.loads((tmp_path / "results.json").read_text())["rows"]
    assert {r["impl"] for r in rows} == {"plugin-torch/dense", "plugin-torch/paged",
                                         "plugin-torch/split-k"}
    assert all(r["status"] == "PASS" for r in rows), [r["reason"] for r in rows]
    assert any(r.get("config_summary", "").startswith("num_splits=") for r in rows)
