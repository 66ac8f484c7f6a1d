"""Helpers shared by the app tests."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from streamlit.testing.v1 import AppTest

APP = str(Path(__file__).resolve().parents[2] / "app.py")
TIMEOUT = 30  # seconds per AppTest run


def sqlite_bytes(tmp_path: Path, sql: str, name: str = "mine.sqlite") -> bytes:
    """The bytes of a fresh SQLite file built from ``sql``."""
    path = tmp_path / name
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.commit()
    conn.close()
    return path.read_bytes()


def errors(at: AppTest) -> list[str]:
    return [e.value for e in at.error]
