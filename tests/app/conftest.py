"""Fixtures for the app tests: AppTest pointed at the scripted model server and sample DBs."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from agents.store import Store, default_path
from app_helpers import APP, TIMEOUT


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
    monkeypatch.setenv("STUDIO_WARMUP", "0")  # no test starts the embedded model behind a page
    _answer_in_words_off()
    return scripted_llm


def _answer_in_words_off() -> None:
    """The app starts Ask with the result summary on; the scripted servers here answer a
    pipeline's calls only, so the tests start as a user who saved it off (a test that wants
    the summary ticks the box)."""
    with Store(default_path()) as store:
        store.save_preferences({"ask_summary": False})


@pytest.fixture
def app(app_env) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    return at


@pytest.fixture
def server_upload_limit():
    """Set the server's upload limit (``server.maxUploadSize``, in MB) for one test."""
    from streamlit import config

    previous = config.get_option("server.maxUploadSize")
    yield lambda mb: config.set_option("server.maxUploadSize", mb)
    config.set_option("server.maxUploadSize", previous)
