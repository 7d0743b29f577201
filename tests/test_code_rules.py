"""Rules of the code base that a reviewer would otherwise have to hold: one vocabulary in every
DSL backend (the glossary in ``impls/__init__.py``), no backend named outside its own folder in
the harness, the suite and the spec, and no code that cites a file outside the repository."""

from __future__ import annotations

import io
import re
import subprocess
import tokenize
from pathlib import Path

import pytest

import impls  # noqa: F401  (first: CPU modes before any DSL import)
from impls import registry

ROOT = Path(__file__).resolve().parent.parent
CODE = (".py", ".cu", ".cuh", ".sh", ".toml")


def tracked(*folders: str) -> list[Path]:
    out = subprocess.run(["git", "ls-files", *folders], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.split()
    return [ROOT / p for p in out if p.endswith(CODE) and (ROOT / p).exists()]


# identifiers the glossary replaced (whole names), each with the one it became
RETIRED = {
    # ``chunk`` itself is the plan's most tokens per work item; its old compounds meant splits or head blocks
    r"(?!chunk\Z)\w*chunk\w*": "items / chunk (split-K, impls.plan) or num_head_blocks / pid_hb (head blocks)",
    r"tokens_per_split": "chunk (the plan's most tokens per work item)",
    r"group": "group_size",
    r"GROUP": "BLOCK_H",
    r"stride_k[b01]": "stride_kp / stride_kt",
    r"split_len": "chunk",
    r"kernel_defines|config_for": "pick_launch_config",
    r"EPW|WPT|EPT|WPR": "VEC / VPT / VECS_PER_ROW",
    r"st": "m_i / l_i / acc",
}


def identifiers(path: Path) -> list[tuple[int, str]]:
    """(line, name) of every identifier in the code, comments and strings left out."""
    text = path.read_text()
    if path.suffix == ".py":
        tokens = tokenize.generate_tokens(io.StringIO(text).readline)
        return [(tok.start[0], tok.string) for tok in tokens if tok.type == tokenize.NAME]
    names = []
    for n, line in enumerate(text.splitlines(), 1):
        code = re.sub(r'//.*|"[^"]*"', "", line)
        names += [(n, name) for name in re.findall(r"[A-Za-z_]\w*", code)]
    return names


def dsl_folders() -> list[str]:
    """``impls/<name>`` of every DSL backend (not a vendor library's adapter) in the tree."""
    found = {impl.module.split(".")[1] for impl in registry.all_impls()
             if impl.module and not impl.backend.vendor and impl.module.startswith("impls.")}
    return [f"impls/{name}" for name in sorted(found)]


def shared_code() -> list[Path]:
    """The code every backend shares or that serves them all: ``impls/*.py`` and ``scripts/``."""
    return [p for p in tracked("impls", "scripts")
            if p.parent == ROOT / "impls" or p.parent == ROOT / "scripts"]


@pytest.mark.parametrize("pattern", sorted(RETIRED))
def test_dsl_backends_use_the_glossary(pattern):
    found = [f"{path.relative_to(ROOT)}:{n}: {name}"
             for path in tracked(*dsl_folders()) + shared_code()
             if path.suffix in (".py", ".cu", ".cuh")
             for n, name in identifiers(path) if re.fullmatch(pattern, name)]
    assert not found, f"use {RETIRED[pattern]}:\n" + "\n".join(found)


def test_every_dsl_folder_is_checked():
    assert {"impls/triton", "impls/gluon", "impls/cupy", "impls/numba", "impls/tilelang",
            "impls/helion"} <= set(dsl_folders())


def backend_names() -> re.Pattern:
    """Any registered backend's name, packages or JIT cache variables, as whole words."""
    words = set()
    for backend in registry.backends():
        words |= {backend.name, *backend.packages, *backend.jit_cache_env}
        words |= {part for part in re.split(r"[-_]", backend.name) if len(part) > 3
                  and part not in ("torch", "flash", "attn")}
    return re.compile("|".join(rf"(?<![\w.-]){re.escape(w)}(?![\w-])" for w in sorted(words)),
                      re.IGNORECASE)


def test_no_backend_is_named_in_the_harness_the_suite_or_the_spec():
    """Everything about a backend lives in its declaration (impls/<name>/__init__.py)."""
    pattern = backend_names()
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in tracked("harness", "conformance", "specs")
             for n, line in enumerate(path.read_text().splitlines(), 1)
             if pattern.search(line)]
    assert not found, "\n".join(found)


def code_tokens(path: Path) -> list[tuple[int, str]]:
    """(line, text) of the names and string literals of a Python file, docstrings and comments
    left out (prose may cite a backend as an example; code may not branch on one)."""
    found, previous = [], tokenize.NEWLINE
    for tok in tokenize.generate_tokens(io.StringIO(path.read_text()).readline):
        docstring = tok.type == tokenize.STRING and previous in (tokenize.NEWLINE, tokenize.NL,
                                                                 tokenize.INDENT, tokenize.DEDENT)
        if tok.type in (tokenize.NAME, tokenize.STRING) and not docstring:
            found.append((tok.start[0], tok.string))
        if tok.type not in (tokenize.COMMENT,):
            previous = tok.type
    return found


# impls/__init__.py sets the CPU modes' variables before any declaration can be read
BOOTSTRAP = {ROOT / "impls" / "__init__.py"}


def test_shared_code_and_scripts_name_no_backend():
    """The code every backend shares (impls/*.py) and the scripts (the sweep, the sanitiser)
    read the declarations: none imports a backend's module or branches on its name."""
    pattern = backend_names()
    found = [f"{path.relative_to(ROOT)}:{n}: {text}"
             for path in shared_code() if path.suffix == ".py" and path not in BOOTSTRAP
             for n, text in code_tokens(path) if pattern.search(text)]
    assert not found, "\n".join(found)


def test_no_code_cites_a_file_outside_the_repository():
    found = [f"{path.relative_to(ROOT)}:{n}: {line.strip()}"
             for path in tracked(".") if path != Path(__file__).resolve()  # the rule itself
             for n, line in enumerate(path.read_text().splitlines(), 1) if "../shared" in line]
    assert not found, "\n".join(found)


def test_no_run_s_files_under_results_are_ignored():
    """A run's files kept under results/ are committed whatever the folders are called: the
    harness's default output folder (``runs/`` at the root) is ignored there only (an ignore of
    ``runs/`` anywhere once kept six committed runs' rows out of the repository)."""
    run = "results/some-gpu/some-run/run/runs/lane"
    paths = [f"{run}/{name}" for name in ("results.json.xz", "rows.jsonl.xz", "results.md",
                                          "provenance.json", "report.html")]
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=ROOT,
                             capture_output=True, text=True).stdout.split()
    assert not ignored, ignored
    assert subprocess.run(["git", "check-ignore", "-q", "--no-index", "runs/x/results.json"],
                          cwd=ROOT).returncode == 0  # the root's own output folder stays out
