"""The shape of the source, checked: the map names every package, modules and functions stay small,
imports sit at the top of modules.

The layering itself is `lint-imports`' job (the contracts in pyproject.toml, run by `make test`).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src" / "radsift"
DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 100
#: At most this share of radsift-internal imports may sit inside functions (the rest at module tops).
MAX_INNER_IMPORT_SHARE = 0.10


def _modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if "__pycache__" not in p.parts)


def _packages() -> list[str]:
    """Every package below radsift, as a path relative to src/radsift with a trailing slash."""
    return sorted(str(p.parent.relative_to(SRC)) + "/" for p in SRC.rglob("__init__.py")
                  if p.parent != SRC and "__pycache__" not in p.parts)


def test_the_map_names_every_package():
    doc = DOC.read_text(encoding="utf-8")
    named = set(re.findall(r"`([a-z_/]+/)`", doc))
    missing = [p for p in _packages() if p not in named]
    assert not missing, f"docs/architecture.md does not name these packages (as `pkg/`): {missing}"


def test_the_map_names_no_package_that_is_gone():
    doc = DOC.read_text(encoding="utf-8")
    packages = set(_packages())
    # Folders are named by their path below src/radsift (`index/backends/`, `serve/static/`).
    stale = sorted(n for n in set(re.findall(r"`([a-z_]+(?:/[a-z_]+)*/)`", doc))
                   if n not in packages and not (SRC / n).is_dir() and not (SRC.parents[1] / n).is_dir())
    assert not stale, f"docs/architecture.md names packages that do not exist: {stale}"


def test_no_module_is_too_long():
    long = {str(p.relative_to(SRC)): n for p in _modules()
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES}
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_too_long():
    long = []
    for path in _modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(SRC)}:{node.name} ({n} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def _internal_imports(path: Path) -> tuple[int, int]:
    """(imports at module level, imports inside functions) of radsift modules in one file."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = inner = 0

    def visit(node: ast.AST, in_function: bool) -> None:
        nonlocal top, inner
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                names = [a.name for a in child.names] if isinstance(child, ast.Import) else [child.module or ""]
                if getattr(child, "level", 0) or any(n == "radsift" or n.startswith("radsift.") for n in names):
                    if in_function:
                        inner += 1
                    else:
                        top += 1
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    visit(tree, False)
    return top, inner


def test_imports_sit_at_the_top_of_modules():
    counts = [_internal_imports(p) for p in _modules()]
    top, inner = sum(c[0] for c in counts), sum(c[1] for c in counts)
    share = inner / max(1, top + inner)
    assert share <= MAX_INNER_IMPORT_SHARE, (
        f"{inner} of {top + inner} radsift imports ({share:.0%}) sit inside functions; "
        f"at most {MAX_INNER_IMPORT_SHARE:.0%} may (heavy optional libraries are not counted)")


def test_the_counter_sees_an_import_inside_a_function(tmp_path):
    # The guard above must be able to fail: a module with one import inside a function counts it.
    mod = tmp_path / "m.py"
    mod.write_text("import radsift.errors\n\ndef f():\n    from radsift.records import Report\n    return Report\n")
    assert _internal_imports(mod) == (1, 1)


def test_search_takes_a_query_and_an_options_object():
    import inspect

    from radsift.search.engine import Index

    params = list(inspect.signature(Index.search).parameters.values())
    assert [p.name for p in params[:3]] == ["self", "query", "options"]
    assert all(p.kind in (p.VAR_KEYWORD,) for p in params[3:]), [p.name for p in params]


@pytest.mark.parametrize("path", ["radsift.cli", "radsift"])
def test_importing_the_cli_loads_no_torch(path):
    import subprocess
    import sys

    code = f"import sys, {path}; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
