"""The Ask page reads the open database's prompt prefix ahead of the question (ui.warmup)."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from agents.core.config import Settings
from agents.core.warmup import STAND_IN
from agents.llm.client import make_client
from app_helpers import APP, TIMEOUT
from ask_page import ask
from prompt_markers import WRITER


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


@pytest.fixture
def embedded(app_env, monkeypatch):
    """The Ask page as with the embedded model (which these tests never start): warm-ups on,
    sent to the scripted server."""
    from ui import warmup as ui_warmup

    ui_warmup._registry.clear()
    client = make_client(Settings(provider="openai", base_url=app_env.base_url, api_key="k",
                                  model="scripted-model", cache=False, max_retries=0))
    monkeypatch.setattr(ui_warmup, "_embedded", lambda settings: True)
    monkeypatch.setattr(ui_warmup, "_client_for", lambda settings: client)
    yield app_env
    ui_warmup._registry.clear()


def _until(check, at=None):
    for _ in range(200):
        if at is not None:
            at.run()
        if check():
            return
        time.sleep(0.05)
    raise AssertionError("not reached in time")


def test_the_schema_is_read_before_the_first_question_and_the_question_reads_on(embedded):
    embedded.when(lambda req: req.get("max_tokens") == 1, "x")  # every warm-up
    embedded.when("each country",
                  "```sql\nSELECT country, COUNT(*) FROM customers GROUP BY country\n```")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    _until(lambda: embedded.requests)
    warmup = embedded.requests[0]
    assert warmup["max_tokens"] == 1
    prefix = warmup["messages"][-1]["content"]
    assert WRITER in prefix and "CREATE TABLE" in prefix  # the writer's static text, the schema
    assert STAND_IN not in prefix
    _until(lambda: "Schema read ahead of the question" in _captions(at), at)
    assert len(embedded.requests) == 1  # a redraw does not read it again
    # the baseline's first prompt is the same writer's: its question reads on from the prefix
    ask(at, "How many customers are there in each country?", "baseline")
    questions = []
    _until(lambda: questions.extend(r for r in embedded.requests if r.get("max_tokens") != 1)
           or questions)
    asked = questions[0]["messages"][-1]["content"]
    assert asked.startswith(prefix) and "each country" in asked[len(prefix):]


def test_nothing_is_read_ahead_for_an_endpoint_elsewhere(app_env, monkeypatch):
    monkeypatch.setenv("STUDIO_WARMUP", "1")  # on, as in the app: only the provider decides
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    time.sleep(0.3)
    at.run()
    assert app_env.requests == []
    assert "ahead" not in _captions(at)
