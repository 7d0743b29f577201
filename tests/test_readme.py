"""The README's commands work as copied: every line of its fenced ``bash`` blocks after the two
set-up commands runs from the repository root and exits 0 (lines marked ``# gpu`` only where
there is a GPU). The run folders they name under ``runs/`` are removed before and after."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
SETUP = ("scripts/run.sh", "scripts/test.sh")  # the two commands: what set this machine up


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    lines = [line.strip() for block in blocks for line in block.splitlines() if line.strip()]
    return [line for line in lines if not line.startswith("#") and line.split()[0] not in SETUP]


def _run_folders(commands: list[str]) -> set[Path]:
    return {ROOT / m for c in commands for m in re.findall(r"\bruns/[\w.-]+", c)}


def test_the_readme_has_commands_beyond_the_two():
    commands = readme_commands()
    assert any("harness.sh run" in c for c in commands) and any("replay" in c for c in commands)


def test_every_readme_command_runs_as_copied():
    commands = readme_commands()
    folders = _run_folders(commands)
    for folder in folders:
        shutil.rmtree(folder, ignore_errors=True)
    try:
        for command in commands:
            if command.endswith("# gpu") and not torch.cuda.is_available():
                continue
            res = subprocess.run(["bash", "-c", command], cwd=ROOT, capture_output=True, text=True,
                                 timeout=900)
            assert res.returncode == 0, f"{command}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}"
    finally:
        for folder in folders:
            shutil.rmtree(folder, ignore_errors=True)
