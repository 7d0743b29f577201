"""``python -m harness install``: install the packages of the backends missing on this machine,
each by the command its ``Backend.install`` declares (the same command its UNAVAILABLE rows
name), where it can: a machine without a package index gets one line per command saying so, and
the run that follows says in one line what is still missing. ``scripts/run.sh`` calls it on a
GPU machine before the run (``DECODE_BENCH_NO_INSTALL=1`` leaves the environment alone)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from impls import registry

ROOT = Path(__file__).resolve().parent.parent
PIP_OPTIONS = ("--retries", "1", "--timeout", "15", "--disable-pip-version-check", "-q")


def missing() -> dict[str, list[str]]:
    """Install command -> the backends that need it: those whose packages are not installed here
    (not those unavailable for another reason: no GPU, another architecture, a broken install)."""
    commands: dict[str, list[str]] = {}
    for backend in registry.backends():
        if backend.install and backend.not_installed():
            commands.setdefault(backend.install, []).append(backend.name)
    return commands


def pip_args(command: str) -> list[str] | None:
    """The arguments of a plain ``pip install ...`` command, run here by this interpreter's pip;
    None for one that needs more than that (an environment of its own: see the README)."""
    words = shlex.split(command) if "(" not in command else []
    return words[2:] if words[:2] == ["pip", "install"] and len(words) > 2 else None


def install(dry_run: bool = False) -> int:
    """Run each missing backend's install command once; 0 when every one that was tried worked."""
    todo = missing()
    if not todo:
        print("install: every backend's packages are installed here (or it cannot run here "
              "for another reason: python -m harness list)")
        return 0
    failed = 0
    for command, names in todo.items():
        args = pip_args(command)
        who = ", ".join(names)
        if args is None:
            print(f"install: left to you, for {who}: {command}")
            continue
        if dry_run:
            print(f"install: would run, for {who}: {command}")
            continue
        done = subprocess.run([sys.executable, "-m", "pip", "install", *PIP_OPTIONS, *args], cwd=ROOT,
                              capture_output=True, text=True)
        if done.returncode == 0:
            print(f"install: installed, for {who}: {command}")
        else:
            failed += 1
            last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
            print(f"install: could not install, for {who}: {command} (pip: {last[:200]})")
    return 1 if failed else 0
