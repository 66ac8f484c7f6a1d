"""The Ask page reads the open database's prompt prefix ahead of the question (ui.warmup)."""

from __future__ import annotations

import time

from streamlit.testing.v1 import AppTest

from agents.core.config import Settings
from agents.core.warmup import STAND_IN
from agents.llm.client import make_client
from app_helpers import APP, TIMEOUT
from prompt_markers import WRITER


def _captions(at) -> str:
    return " ".join(c.value for c in at.caption)


def test_the_schema_is_read_once_before_the_first_question(app_env, monkeypatch):
    from ui import warmup as ui_warmup

    client = make_client(Settings(provider="openai", base_url=app_env.base_url, api_key="k",
                                  model="scripted-model", cache=False, max_retries=0))
    # as with the embedded model, which these tests never start
    monkeypatch.setattr(ui_warmup, "_embedded", lambda settings: True)
    monkeypatch.setattr(ui_warmup, "_client_for", lambda settings: client)
    app_env.push("x")
    at = AppTest.from_file(APP, default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, at.exception
    for _ in range(200):
        if app_env.requests:
            break
        time.sleep(0.05)
    assert len(app_env.requests) == 1
    request = app_env.requests[0]
    assert request["max_tokens"] == 1
    prompt = request["messages"][-1]["content"]
    assert WRITER in prompt and "CREATE TABLE" in prompt  # the draft writer's static text, the schema
    assert STAND_IN not in prompt
    for _ in range(100):
        at.run()
        if "Schema read ahead" in _captions(at):
            break
        time.sleep(0.05)
    assert "Schema read ahead of the question" in _captions(at)
    at.run()
    assert len(app_env.requests) == 1  # a redraw does not read it again


def test_nothing_is_read_ahead_for_an_endpoint_elsewhere(app):
    assert not app.exception
    assert "Schema read ahead" not in _captions(app)
    assert "Reading the schema ahead" not in _captions(app)
