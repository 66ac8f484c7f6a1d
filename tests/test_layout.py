"""The engine's layout stays readable: no import circle (function-level imports counted), small
modules, small folders, no UI in the engine, one-line help texts, test modules that stand alone.

These are the properties a newcomer relies on when reading ``agents/`` top-down; each test names
the offending module so a failure says what to split or move.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
AGENTS = ROOT / "agents"
SOURCE_DIRS = ("agents", "ui", "pages")
MAX_LINES = 400
MAX_MODULES_PER_FOLDER = 15
MAX_HELP_CHARS = 100


def _modules(top: str) -> dict[str, Path]:
    """Dotted module name -> file, for every Python file under ``top``."""
    found = {}
    for path in sorted((ROOT / top).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Modules of ``known`` that ``module`` imports anywhere in its body (functions included),
    except under ``if TYPE_CHECKING:``, which never runs."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()

    def visit(node):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                for sub in child.orelse:
                    visit_node(sub)
                continue
            visit_node(child)

    def visit_node(node):
        if isinstance(node, ast.Import):
            for alias in node.names:
                targets.add(alias.name)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                stem = ".".join(base + ([node.module] if node.module else []))
            else:
                stem = node.module or ""
            for alias in node.names:
                candidate = f"{stem}.{alias.name}"
                targets.add(candidate if candidate in known else stem)
        visit(node)

    visit(tree)
    resolved = set()
    for target in targets:
        while target and target not in known:
            target = target.rpartition(".")[0]
        if target and target != module:
            resolved.add(target)
    return resolved


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, result = {}, {}, [], set(), []
    counter = [0]

    def strong(node):
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                strong(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                item = stack.pop()
                on_stack.discard(item)
                component.append(item)
                if item == node:
                    break
            if len(component) > 1:
                result.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strong(node)
    return result


def _graph(top: str) -> dict[str, set[str]]:
    known = _modules(top)
    return {name: _imports(name, path, known) for name, path in known.items()}


def test_the_cycle_finder_sees_function_level_imports(tmp_path, monkeypatch):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg.b import thing\n")
    (pkg / "b.py").write_text("def thing():\n    from pkg import a\n    return a\n")
    (pkg / "c.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from pkg.a import x\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    graph = _graph("pkg")
    assert _cycles(graph) == [["pkg.a", "pkg.b"]]
    assert "pkg.a" not in graph["pkg.c"]


def test_the_engine_has_no_import_circle():
    cycles = _cycles(_graph("agents"))
    assert cycles == [], "import circles (function-level imports included): " + "; ".join(
        " <-> ".join(c) for c in cycles)


@pytest.mark.parametrize("top", SOURCE_DIRS)
def test_no_source_module_is_over_the_line_limit(top):
    long = {str(p.relative_to(ROOT)): n for p in (ROOT / top).rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"modules over {MAX_LINES} lines: {long}"


@pytest.mark.parametrize("top", SOURCE_DIRS)
def test_no_source_folder_holds_too_many_modules(top):
    crowded = {}
    for folder in [ROOT / top, *(p for p in (ROOT / top).rglob("*") if p.is_dir())]:
        modules = [p for p in folder.glob("*.py") if p.name != "__init__.py"]
        if len(modules) > MAX_MODULES_PER_FOLDER:
            crowded[str(folder.relative_to(ROOT))] = len(modules)
    assert crowded == {}, f"folders over {MAX_MODULES_PER_FOLDER} modules: {crowded}"


def test_the_engine_never_imports_the_ui():
    offenders = []
    for name, path in _modules("agents").items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) and
                     not node.level else [])
            if any(n.split(".")[0] in ("streamlit", "ui", "pages") for n in names):
                offenders.append(name)
    assert offenders == []


def test_every_help_text_is_one_short_line():
    from agents.pipelines import get_pipeline, names

    long = {}
    for name in names():
        for spec in get_pipeline(name).params:
            text = spec.help or ""
            if "\n" in text or len(text) > MAX_HELP_CHARS or not text.strip():
                long[f"{name}.{spec.name}"] = text
    assert long == {}, f"help texts must be one line of at most {MAX_HELP_CHARS} characters"


def test_no_test_module_imports_another():
    tests = {p.stem for p in (ROOT / "tests").rglob("test_*.py")}
    offenders = []
    for path in (ROOT / "tests").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[-1] in tests:
                offenders.append(f"{path.relative_to(ROOT)} imports {node.module}")
            elif isinstance(node, ast.Import):
                offenders += [f"{path.relative_to(ROOT)} imports {a.name}" for a in node.names
                              if a.name.split(".")[-1] in tests]
    assert offenders == []
