"""Reading a database's prompt prefix ahead of the question (agents.core.warmup)."""

from __future__ import annotations

import threading

import pytest

from agents.core.config import Settings
from agents.core.engine import start_run
from agents.core.warmup import (STAND_IN, Warmups, _RecordingClient, cut_before,
                                first_prompt_prefix, warm)
from agents.db.database import open_database
from agents.pipelines import get_pipeline, list_pipelines

QUESTION = "How many customers are there in each country?"


class _Local:
    """What the prompts are built for: the embedded model's settings (its context budget)."""
    settings = Settings(provider="local")
    model = "m"


def _first_request(pipeline, db, question):
    recorder = _RecordingClient(_Local())
    run = start_run(pipeline, question, db, recorder, answer_checks=False)
    for _ in run:
        if recorder.messages is not None:
            break
    run.close()
    return recorder.messages


@pytest.fixture
def shop(sample_dbs):
    database = open_database(sample_dbs / "shop.sqlite")
    yield database
    database.close()


@pytest.mark.parametrize("name", [p.name for p in list_pipelines()])
def test_the_prefix_is_where_every_pipeline_s_first_prompt_begins(shop, name):
    pipeline = get_pipeline(name)
    prefix = first_prompt_prefix(pipeline, shop, _Local())
    real = _first_request(pipeline, shop, QUESTION)
    assert prefix and real
    *whole, cut = prefix
    assert real[:len(whole)] == whole
    assert real[len(whole)]["content"].startswith(cut["content"])
    assert STAND_IN not in cut["content"]
    # where the first prompt shows the schema (not DEA-SQL's, which reads the question's
    # elements first), the prefix holds it: only the question's own words are left to read
    if "order_items" in real[len(whole)]["content"]:
        assert "order_items" in cut["content"]
    assert len(real[len(whole)]["content"]) - len(cut["content"]) < 400


def test_cut_before_keeps_the_earlier_messages_and_cuts_the_one_with_the_marker():
    messages = [{"role": "system", "content": "rules"},
                {"role": "user", "content": "schema\nQuestion: MARK\nSQL:"}]
    assert cut_before(messages, "MARK") == [{"role": "system", "content": "rules"},
                                            {"role": "user", "content": "schema\nQuestion: "}]
    assert cut_before(messages, "absent") is None
    assert cut_before([{"role": "user", "content": "MARK first"}], "MARK") is None


def test_warm_reaches_the_server_with_one_token_past_the_response_cache(scripted_llm, tmp_path):
    from agents.llm.client import make_client

    client = make_client(Settings(provider="openai", base_url=scripted_llm.base_url,
                                  api_key="k", model="scripted-model", cache=True,
                                  cache_path=str(tmp_path / "cache.sqlite"), max_retries=0))
    scripted_llm.push("x", "x")
    messages = [{"role": "user", "content": "static text and the schema"}]
    warm(client, messages)
    warm(client, messages)  # read again (after a restart of the server, say): not cached
    assert len(scripted_llm.requests) == 2
    assert all(r["max_tokens"] == 1 for r in scripted_llm.requests)
    assert scripted_llm.requests[0]["messages"] == messages


class _Client:
    def __init__(self, gate: threading.Event | None = None):
        self.calls: list[list[dict]] = []
        self.gate = gate

    def chat(self, messages, **kwargs):
        from agents.llm.reply import LLMReply

        assert kwargs["max_tokens"] == 1 and kwargs["cache"] is False
        if self.gate is not None:
            self.gate.wait(5)
        self.calls.append(messages)
        return LLMReply(text="x", model="m", prompt_tokens=1234, completion_tokens=1,
                        seconds=0.0)


def _wait(item):
    for _ in range(500):
        if item.done:
            return item
        threading.Event().wait(0.01)
    raise AssertionError("the warm-up did not end")


def test_a_key_is_warmed_once_and_a_newer_request_drops_one_still_waiting():
    gate = threading.Event()
    client = _Client(gate)
    warmups = Warmups()
    prefix = [{"role": "user", "content": "schema"}]
    first = warmups.start("db1", lambda: client, lambda llm: prefix)
    threading.Event().wait(0.05)  # db1 is being read (held at the gate)
    second = warmups.start("db2", lambda: client, lambda llm: prefix)
    third = warmups.start("db3", lambda: client, lambda llm: prefix)
    assert warmups.start("db3", lambda: client, lambda llm: prefix) is third
    gate.set()
    assert _wait(first).seconds is not None and first.prompt_tokens == 1234
    assert _wait(second).skipped  # superseded by db3 before its turn
    assert _wait(third).seconds is not None
    assert len(client.calls) == 2
    assert warmups.start("db1", lambda: client, lambda llm: prefix) is first  # warm already


def test_a_failed_or_empty_warm_up_only_records_why():
    warmups = Warmups()

    def broken():
        raise RuntimeError("no model")

    failed = _wait(warmups.start("a", broken, lambda llm: []))
    assert failed.error == "no model"
    empty = _wait(warmups.start("b", lambda: _Client(), lambda llm: None))
    assert empty.skipped and empty.error is None
