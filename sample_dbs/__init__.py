"""The demo databases shipped with the studio and their example questions.

The ``.sqlite`` files are not versioned: :func:`ensure_built` (or ``python -m sample_dbs.build``)
generates them deterministically. ``questions.json`` lists, per database, a title, a one-line
description and example questions with verified reference SQL, which the app offers as
suggestions.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

SAMPLE_DIR = Path(__file__).resolve().parent
QUESTIONS_FILE = SAMPLE_DIR / "questions.json"


@lru_cache(maxsize=1)
def catalog() -> dict[str, dict]:
    """``{name: {"file", "title", "description", "questions": [...]}}``; each question is
    ``{"question", "sql", "difficulty"}``."""
    return json.loads(QUESTIONS_FILE.read_text(encoding="utf-8"))["databases"]


def ensure_built(folder: Path | str = SAMPLE_DIR) -> dict[str, Path]:
    """Paths of the sample databases by name, building them first if any file is missing."""
    folder = Path(folder)
    paths = {name: folder / entry["file"] for name, entry in catalog().items()}
    if not all(p.is_file() for p in paths.values()):
        from .build import build_all

        build_all(folder)
    return paths
