"""The pipeline registry: every sub-package here that defines ``PIPELINE`` is a pipeline."""

from __future__ import annotations

import importlib
import pkgutil
from functools import lru_cache

from agents.core.engine import Pipeline
from agents.core.events import Run

ORDER = ["baseline", "macsql", "deasql", "r3", "csma", "selection"]


@lru_cache(maxsize=None)
def _registry() -> dict[str, Pipeline]:
    found: dict[str, Pipeline] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        pipeline = getattr(module, "PIPELINE", None)
        if isinstance(pipeline, Pipeline):
            found[pipeline.name] = pipeline
    ordered = {n: found[n] for n in ORDER if n in found}
    ordered.update({n: p for n, p in sorted(found.items()) if n not in ordered})
    return ordered


def list_pipelines() -> list[Pipeline]:
    return list(_registry().values())


def names() -> list[str]:
    return list(_registry())


def get_pipeline(name: str) -> Pipeline:
    try:
        return _registry()[name]
    except KeyError:
        raise KeyError(f"unknown pipeline {name!r}; choose from {', '.join(names())}") from None


def load_run(data: dict) -> Run:
    """A stored run rebuilt as a :class:`Run`, every pipeline imported first so each step's
    output comes back as the typed record of its kind (not as a generic one)."""
    _registry()
    return Run.from_dict(data)
