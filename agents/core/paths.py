"""Where the studio keeps its files, outside the repository.

``STUDIO_HOME`` (default ``~/.text2sql-studio``) holds the run store, the example bank and the
config file; ``STUDIO_CACHE`` (default ``~/.cache/text2sql-studio``) holds the assembled model
weights and the LLM response cache. Both can be pointed elsewhere, which the tests do.
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
SAMPLE_DBS = REPO_ROOT / "sample_dbs"


def studio_home() -> Path:
    path = Path(os.environ.get("STUDIO_HOME") or Path.home() / ".text2sql-studio")
    path.mkdir(parents=True, exist_ok=True)
    return path


def cache_dir() -> Path:
    path = Path(os.environ.get("STUDIO_CACHE") or Path.home() / ".cache" / "text2sql-studio")
    path.mkdir(parents=True, exist_ok=True)
    return path
