"""Fixtures for the app tests: AppTest pointed at the scripted model server and sample DBs."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
TIMEOUT = 30


@pytest.fixture
def app_env(monkeypatch, scripted_llm, sample_dbs):
    """Environment seen by the app: the scripted server as an OpenAI-compatible endpoint, no
    response cache, no retries, and the sample databases built for this test session."""
    monkeypatch.setenv("OPENAI_BASE_URL", scripted_llm.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setenv("STUDIO_LLM_CACHE", "0")
    monkeypatch.setenv("STUDIO_MAX_RETRIES", "0")
    monkeypatch.setenv("STUDIO_REQUEST_TIMEOUT", "10")
    monkeypatch.setenv("STUDIO_SAMPLE_DIR", str(sample_dbs))
    return scripted_llm


@pytest.fixture
def app(app_env) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


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


def ask(at: AppTest, question: str, pipeline: str = "baseline", **params) -> AppTest:
    """Type a question, choose a pipeline (and parameters), click Run."""
    at.text_area(key="ask_question").input(question)
    at.selectbox(key="ask_pipeline").select(pipeline)
    at.run()
    for name, value in params.items():
        widget = at.get_by_key(f"ask_param_{pipeline}_{name}") if hasattr(at, "get_by_key") \
            else None
        if widget is None:
            raise KeyError(name)
        widget.set_value(value)
    at.button(key="ask_run_button").click().run()
    assert not at.exception, at.exception
    return at
