"""Kernel lines of the Triton and Gluon backends: non-blank, non-comment, non-docstring lines of
the module-level functions decorated ``@triton.jit`` / ``@gluon.jit``. Run from the repository
root: ``python results/nvidia-h100/2026-11-24-gluon-tma/kloc.py``."""

import ast
from pathlib import Path


def docstring_lines(tree: ast.Module) -> set[int]:
    lines = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.Module)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def kernel_lines(folder: str, decorator: str) -> int:
    total = 0
    for path in sorted(Path(folder).glob("*.py")):
        source = path.read_text()
        tree = ast.parse(source)
        text, docs = source.splitlines(), docstring_lines(tree)
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and \
                    any(decorator in ast.unparse(d) for d in node.decorator_list):
                total += sum(1 for n in range(node.lineno, node.end_lineno + 1)
                             if n not in docs and text[n - 1].strip()
                             and not text[n - 1].strip().startswith("#"))
    return total


if __name__ == "__main__":
    print("triton", kernel_lines("impls/triton", "triton.jit"))
    print("gluon", kernel_lines("impls/gluon", "gluon.jit"))
