"""``python -m harness install``: each missing backend's declared command run once, where it can;
backends unavailable for another reason (no GPU) and those in an environment of their own left
alone, and a failed install said in one line, not raised."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass

from harness import install
from impls import registry


@dataclass
class FakeBackend:
    name: str
    why: str | None
    install: str = ""

    def mode(self):
        if self.why:
            raise registry.Unavailable(self.why)
        return "gpu"

    not_installed = registry.Backend.not_installed  # the registry's own reading of mode()


def test_install_runs_each_missing_backends_command_once(monkeypatch, capsys):
    backends = [
        FakeBackend("dsl-a", "package 'a' not installed: pip install -e .[a]", "pip install -e .[a]"),
        FakeBackend("dsl-b", "package 'a' not installed: pip install -e .[a]", "pip install -e .[a]"),
        FakeBackend("vendor-c", "package 'c' not installed: pip install --no-deps c==1.0",
                    "pip install --no-deps c==1.0"),
        FakeBackend("own-env", "package 't' not installed",
                    "pip install -e .[t] (in an environment of its own: README)"),
        FakeBackend("no-gpu", "no CUDA GPU", "pip install -e .[x]"),
        FakeBackend("here", None, "pip install -e .[h]"),
    ]
    monkeypatch.setattr(registry, "backends", lambda: backends)
    ran = []

    def fake_run(argv, **kwargs):
        ran.append(argv)
        failed = "c==1.0" in argv
        return subprocess.CompletedProcess(argv, 1 if failed else 0, "",
                                           "ERROR: No matching distribution found for c==1.0" if failed else "")
    monkeypatch.setattr(install.subprocess, "run", fake_run)
    assert install.install() == 1  # one command failed
    out = capsys.readouterr().out
    assert [a[a.index("install") + 1:][len(install.PIP_OPTIONS):] for a in ran] == \
        [["-e", ".[a]"], ["--no-deps", "c==1.0"]]  # once each; not the GPU-less or own-env ones
    assert all(a[:3] == [sys.executable, "-m", "pip"] for a in ran)
    assert "installed, for dsl-a, dsl-b: pip install -e .[a]" in out
    assert "could not install, for vendor-c: pip install --no-deps c==1.0 (pip: ERROR: No matching" in out
    assert "left to you, for own-env: pip install -e .[t] (in an environment of its own" in out
    assert "no-gpu" not in out and "here" not in out

    ran.clear()
    assert install.install(dry_run=True) == 0 and not ran
    assert "would run, for vendor-c: pip install --no-deps c==1.0" in capsys.readouterr().out


def test_install_with_nothing_missing_says_so(monkeypatch, capsys):
    monkeypatch.setattr(registry, "backends", lambda: [FakeBackend("here", None)])
    assert install.install() == 0
    assert "every backend's packages are installed here" in capsys.readouterr().out


def test_every_backend_that_needs_a_package_declares_how_to_install_it():
    """An UNAVAILABLE row and ``harness install`` both go by ``Backend.install``."""
    for backend in registry.backends():
        if backend.requires != ("torch",) or backend.packages:
            assert backend.install.startswith("pip install"), backend.name
