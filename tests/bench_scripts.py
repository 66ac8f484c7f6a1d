"""The ``bench/`` scripts imported as modules for their tests (the scripts are not a package)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench"
ARCHIVE = BENCH / "archive"  # the one-off replays of a single rule


def script_path(name: str) -> Path:
    """``bench/<name>.py``, or ``bench/archive/<name>.py`` for an archived replay."""
    path = BENCH / f"{name}.py"
    return path if path.is_file() else ARCHIVE / f"{name}.py"


def bench_script(monkeypatch, name: str):
    """``bench/<name>.py`` (or ``bench/archive/<name>.py``) imported as the module ``name``,
    registered in ``sys.modules`` for the test (dataclasses look their module up there)."""
    spec = importlib.util.spec_from_file_location(name, script_path(name))
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module
