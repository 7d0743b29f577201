"""Where a result came from: machine, GPU, driver, package versions, commit, time, command."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

import torch

PACKAGES = ("torch", "numpy", "hypothesis")  # the framework's; backends declare their own
ROOT = Path(__file__).resolve().parent.parent


def _version(dist: str) -> str | None:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return None


def _git(*args: str) -> str | None:
    try:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None


def commit() -> str:
    """The value the caller exported in DECODE_BENCH_COMMIT, if any (a copy of a working tree,
    as on the GPU machine, may carry a .git whose HEAD is not what was copied); else HEAD
    (+ "-dirty" with uncommitted changes)."""
    if os.environ.get("DECODE_BENCH_COMMIT"):
        return os.environ["DECODE_BENCH_COMMIT"] + " (declared by DECODE_BENCH_COMMIT)"
    head = _git("rev-parse", "HEAD")
    if head:
        return head + ("-dirty" if _git("status", "--porcelain", "--untracked-files=no") else "")
    return "unknown"


def _driver() -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20, check=True).stdout
        return out.strip().splitlines()[0]
    except (OSError, subprocess.SubprocessError, IndexError):
        return None


def packages() -> dict[str, str]:
    """Versions of the framework's packages and of every registered backend's (those installed),
    plus what a backend reports that no distribution names."""
    from impls import registry

    found = {p: v for p in PACKAGES if (v := _version(p))}
    for backend in registry.backends():  # each from the environment its worker runs in
        found.update(backend.package_versions())
    return found


def collect(argv: list[str] | None = None) -> dict:
    info: dict = {
        "timestamp": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": " ".join(["python -m harness"] + list(argv if argv is not None else sys.argv[1:])),
        "commit": commit(),
        "host": platform.node(),
        "python": platform.python_version(),
        "packages": packages(),
        "cuda_runtime": torch.version.cuda,
        "environment": environment(),
    }
    info.update(device_fields())
    return info


# variables that change what a run measures (backends, their JIT caches and modes, devices)
VARIABLE_PREFIXES = ("DECODE_BENCH_", "CUDA_", "TRITON_", "NUMBA_", "CUPY_", "TORCH", "PYTORCH_",
                     "FLASHINFER_", "FLASH_ATTENTION_", "NVIDIA_", "TILELANG_", "HELION_")


def environment() -> dict:
    """The environment as a lock: every installed distribution's version (the harness's
    interpreter) and the variables that change what a run measures."""
    dists = {}
    for d in importlib.metadata.distributions():
        name = d.metadata.get("Name")
        if name:
            dists[name] = d.version
    return {"distributions": dict(sorted(dists.items(), key=lambda kv: kv[0].lower())),
            "variables": {k: v for k, v in sorted(os.environ.items()) if k.startswith(VARIABLE_PREFIXES)}}


def device_fields(slot: str | None = None) -> dict:
    """The device this process measures on: the GPU torch sees first (its name, SMs, L2,
    memory, driver, and the identity every row carries: ``gpu_index``, the physical index where
    ``CUDA_VISIBLE_DEVICES`` or a scheduler picked it, ``gpu_uuid``), or the CPU. ``slot`` names
    a device a scheduler assigned where there is no GPU to ask (Ray's declared GPUs on a CPU)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        uuid = getattr(props, "uuid", None)
        return dict(device="gpu", gpu=props.name, sm_count=props.multi_processor_count,
                    l2_mb=round(props.L2_cache_size / 2**20, 1),
                    gpu_memory_gb=round(props.total_memory / 2**30, 1), driver=_driver(),
                    gpu_index=visible or "0", gpu_uuid=str(uuid) if uuid is not None else None)
    return dict(device="cpu", gpu=None, cpu=platform.processor() or platform.machine(),
                cpu_count=os.cpu_count(), gpu_index=slot, gpu_uuid=None)


def gpu_slug(info: dict) -> str:
    """results/<slug>/ folder name: 'nvidia-h100-80gb-hbm3', or 'cpu'."""
    if not info.get("gpu"):
        return "cpu"
    return "".join(c if c.isalnum() else "-" for c in info["gpu"].lower()).strip("-").replace("--", "-")
