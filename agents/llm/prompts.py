"""Prompt templates are text files beside their pipeline; this fills them in.

Placeholders are ``{name}``. Only names passed to :func:`render` are replaced, so JSON examples
in a template keep their braces without any escaping. A placeholder left unfilled is an error,
because a prompt with a literal ``{schema}`` in it silently wastes a model call.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")


@lru_cache(maxsize=None)
def load(folder: str, name: str) -> str:
    """The text of ``<folder>/prompts/<name>.txt`` (``folder`` is usually ``__file__``'s dir)."""
    path = Path(folder)
    if path.is_file():
        path = path.parent
    return (path / "prompts" / f"{name}.txt").read_text(encoding="utf-8")


def render(template: str, **values: object) -> str:
    missing = sorted({m for m in _PLACEHOLDER.findall(template) if m not in values})
    if missing:
        raise KeyError(f"prompt placeholders not filled: {', '.join(missing)}")
    return _PLACEHOLDER.sub(
        lambda m: str(values[m.group(1)]) if m.group(1) in values else m.group(0), template)


def placeholders(template: str) -> list[str]:
    return sorted(set(_PLACEHOLDER.findall(template)))

