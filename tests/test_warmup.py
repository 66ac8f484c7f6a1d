"""Reading a database's prompt prefix ahead of the question (agents.core.warmup)."""

from __future__ import annotations

import threading

import pytest

from agents.core.config import Settings
from agents.core.warmup import (STAND_IN, Warmups, cut_before,
                                first_prompt_prefix, warm)
from agents.db.database import open_database
from agents.pipelines import get_pipeline, list_pipelines
from first_request import LocalModel, first_request

QUESTION = "How many customers are there in each country?"


@pytest.fixture
def shop(sample_dbs):
    database = open_database(sample_dbs / "shop.sqlite")
    yield database
    database.close()


@pytest.mark.parametrize("name", [p.name for p in list_pipelines()])
def test_the_prefix_is_where_every_pipeline_s_first_prompt_begins(shop, name):
    pipeline = get_pipeline(name)
    prefix = first_prompt_prefix(pipeline, shop, LocalModel())
    real = first_request(pipeline, shop, QUESTION)
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
    """A model client that records the warm-ups sent to it; with ``gate``, each call waits for
    the gate (or for its cancel), after saying it has started."""

    def __init__(self, gate: threading.Event | None = None):
        self.calls: list[tuple[list[dict], dict]] = []
        self.gate = gate
        self.entered = threading.Event()

    def chat(self, messages, **kwargs):
        from agents.llm.errors import LLMStopped
        from agents.llm.reply import LLMReply

        self.calls.append((messages, kwargs))
        self.entered.set()
        if self.gate is not None:
            while not self.gate.wait(0.01):
                if kwargs["cancel"] is not None and kwargs["cancel"].is_set():
                    raise LLMStopped("stopped")
        return LLMReply(text="x", model="m", prompt_tokens=1234, completion_tokens=1,
                        seconds=0.0)


def _wait(item):
    for _ in range(1000):
        if item.done:
            return item
        threading.Event().wait(0.01)
    raise AssertionError("the warm-up did not end")


PREFIX = [{"role": "user", "content": "schema"}]


def test_a_key_is_read_once_with_one_token_and_no_response_cache():
    client = _Client()
    warmups = Warmups()
    item = _wait(warmups.start("db1", lambda: client, lambda llm: PREFIX))
    assert item.seconds is not None and item.prompt_tokens == 1234
    (messages, kwargs), = client.calls
    assert messages == PREFIX and kwargs["max_tokens"] == 1 and kwargs["cache"] is False
    assert warmups.start("db1", lambda: client, lambda llm: PREFIX) is item  # read already
    assert len(client.calls) == 1


def test_a_newer_database_stops_the_one_being_read_and_it_is_read_again_later():
    gate = threading.Event()
    client = _Client(gate)
    warmups = Warmups()
    first = warmups.start("db1", lambda: client, lambda llm: PREFIX)
    assert client.entered.wait(5)  # db1 is being read
    second = warmups.start("db2", lambda: client, lambda llm: PREFIX)
    assert _wait(first).stopped and first.seconds is None
    gate.set()
    assert _wait(second).seconds is not None
    again = warmups.start("db1", lambda: client, lambda llm: PREFIX)
    assert again is not first and _wait(again).seconds is not None


def test_a_run_stops_every_warm_up_but_the_one_it_needs():
    gate = threading.Event()
    client = _Client(gate)
    warmups = Warmups()
    needed = warmups.start("needed", lambda: client, lambda llm: PREFIX)
    assert client.entered.wait(5)
    warmups.stop_all(keep="needed")
    threading.Event().wait(0.05)
    assert needed.reading
    warmups.stop_all()
    assert _wait(needed).stopped


def test_nothing_is_sent_while_the_model_serves_others():
    client = _Client()
    warmups = Warmups()
    item = _wait(warmups.start("db1", lambda: client, lambda llm: PREFIX,
                               busy=lambda llm: True))
    assert item.stopped and client.calls == []
    assert _wait(warmups.start("db1", lambda: client, lambda llm: PREFIX)).seconds is not None


def test_a_failed_or_empty_warm_up_only_records_why_and_is_not_retried_at_once():
    warmups = Warmups()
    tries = []

    def broken():
        tries.append(1)
        raise RuntimeError("no model")

    failed = _wait(warmups.start("a", broken, lambda llm: PREFIX))
    assert failed.error == "no model"
    assert warmups.start("a", broken, lambda llm: PREFIX) is failed and len(tries) == 1
    empty = _wait(warmups.start("b", lambda: _Client(), lambda llm: None))
    assert empty.empty and empty.error is None
    assert warmups.start("b", lambda: _Client(), lambda llm: None) is empty


def test_no_prefix_where_retrieval_cuts_the_schema_for_the_question(shop):
    # a context too small for the whole schema: the tables shown depend on the question
    class Small:
        settings = Settings(provider="local", n_ctx=1200, max_tokens=128)
        model = "m"

    class Roomy:
        settings = Settings(provider="local", n_ctx=2500, max_tokens=128)
        model = "m"

    assert first_prompt_prefix(get_pipeline("baseline"), shop, Small()) is None
    assert first_prompt_prefix(get_pipeline("baseline"), shop, Roomy())
