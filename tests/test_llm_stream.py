"""Streamed model calls against the scripted server: pieces, idle and first-token limits, the
stop button, and the one queue in front of a local server."""

from __future__ import annotations

import threading
import time

import pytest

from agents.core.config import Settings
from agents.llm.client import LLMStopped, LLMTimeout, make_client

MESSAGES = [{"role": "user", "content": "Which products cost more than 10?"}]
ANSWER = "```sql\nSELECT name\nFROM products\nWHERE price > 10\n```\nThat is all."


def client_for(base_url: str, **kw):
    values = dict(provider="openai", base_url=base_url, api_key="test-key",
                  model="scripted-model", cache=False, max_retries=2, retry_base_delay=0.01,
                  request_timeout=10.0)
    values.update(kw)
    return make_client(Settings(**values))


def _wait_for(predicate, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_pieces_arrive_and_join_to_exactly_the_non_streamed_answer(scripted_llm):
    scripted_llm.push({"content": ANSWER, "prompt_tokens": 31, "completion_tokens": 17},
                      {"content": ANSWER, "prompt_tokens": 31, "completion_tokens": 17})
    pieces: list[str] = []
    streamed = client_for(scripted_llm.base_url).chat(MESSAGES, on_text=pieces.append)
    plain = client_for(scripted_llm.base_url, stream=False).chat(MESSAGES)
    assert scripted_llm.requests[0]["stream"] is True
    assert scripted_llm.requests[0]["stream_options"] == {"include_usage": True}
    assert "stream" not in scripted_llm.requests[1]
    assert len(pieces) > 5 and "".join(pieces) == ANSWER
    assert streamed.text == plain.text == ANSWER
    assert (streamed.prompt_tokens, streamed.completion_tokens) == (31, 17)
    assert streamed.usage_estimated is False and streamed.model == "scripted-model"


def test_an_idle_stream_times_out_with_a_clear_message_and_is_not_resent(scripted_llm):
    client = client_for(scripted_llm.base_url, idle_timeout=0.5)
    scripted_llm.push({"content": ANSWER, "hang": 5.0, "hang_after": 3})
    pieces: list[str] = []
    t0 = time.monotonic()
    with pytest.raises(LLMTimeout) as info:
        client.chat(MESSAGES, on_text=pieces.append)
    assert time.monotonic() - t0 < 4.0
    assert "stopped writing: no new token for 0.5 s (idle_timeout)" in str(info.value)
    assert scripted_llm.base_url in str(info.value)
    assert len(pieces) == 3 and len(scripted_llm.requests) == 1
    _wait_for(lambda: scripted_llm.disconnects == 1)  # the server saw the client go


def test_reading_a_long_prompt_is_not_idleness(scripted_llm):
    """Before the first token only first_token_timeout applies, however short idle is."""
    client = client_for(scripted_llm.base_url, idle_timeout=0.3, first_token_timeout=5.0)
    scripted_llm.push({"content": ANSWER, "delay": 1.0})
    assert client.chat(MESSAGES).text == ANSWER


def test_a_first_token_that_never_comes_times_out(scripted_llm):
    client = client_for(scripted_llm.base_url, first_token_timeout=0.5)
    scripted_llm.push({"content": ANSWER, "delay": 5.0})
    t0 = time.monotonic()
    with pytest.raises(LLMTimeout, match=r"had not started its answer after 0.5 s "
                                         r"\(first_token_timeout\)"):
        client.chat(MESSAGES)
    assert time.monotonic() - t0 < 4.0
    assert len(scripted_llm.requests) == 1
    _wait_for(lambda: scripted_llm.disconnects == 1)


def test_a_slow_but_steady_stream_does_not_time_out(scripted_llm):
    client = client_for(scripted_llm.base_url, idle_timeout=1.0)
    scripted_llm.push({"content": ANSWER, "chunk_delay": 0.25})  # ~14 pieces, ~3 s in all
    t0 = time.monotonic()
    assert client.chat(MESSAGES).text == ANSWER
    assert time.monotonic() - t0 > 2.0  # longer than the idle limit, in small steps


def test_the_overall_cap_ends_a_call_that_never_finishes(scripted_llm):
    client = client_for(scripted_llm.base_url, idle_timeout=5.0, call_timeout=1.0)
    scripted_llm.push({"content": ANSWER, "chunk_delay": 0.3})
    with pytest.raises(LLMTimeout, match=r"did not finish its answer within 1 s"):
        client.chat(MESSAGES)


@pytest.mark.parametrize("hang_after", [0, 2])
def test_stopping_ends_the_call_and_closes_the_connection(scripted_llm, hang_after):
    client = client_for(scripted_llm.base_url)
    reply = {"content": ANSWER, "hang": 10.0, "hang_after": hang_after}
    if hang_after == 0:
        reply = {"content": ANSWER, "delay": 10.0}  # still reading the prompt
    scripted_llm.push(reply)
    cancel = threading.Event()
    outcome: list = []

    def call() -> None:
        try:
            outcome.append(client.chat(MESSAGES, cancel=cancel))
        except Exception as exc:
            outcome.append(exc)

    worker = threading.Thread(target=call)
    worker.start()
    _wait_for(lambda: scripted_llm.requests)
    time.sleep(0.3)
    t0 = time.monotonic()
    cancel.set()
    worker.join(timeout=5)
    assert not worker.is_alive() and time.monotonic() - t0 < 4.0
    assert isinstance(outcome[0], LLMStopped)
    _wait_for(lambda: scripted_llm.disconnects == 1)
    assert len(scripted_llm.requests) == 1


def test_a_local_server_serves_concurrent_calls_one_at_a_time_in_order(scripted_llm):
    client = client_for(scripted_llm.base_url)
    assert client.queue is not None  # the scripted server is on 127.0.0.1
    scripted_llm.when("first", {"content": "one", "delay": 0.8})
    scripted_llm.when("second", {"content": "two", "delay": 0.2})
    waits: list[int] = []
    replies: dict[str, str] = {}

    def call(word: str, **kw) -> None:
        replies[word] = client.chat([{"role": "user", "content": word}], **kw).text

    first = threading.Thread(target=call, args=("first",))
    first.start()
    _wait_for(lambda: len(scripted_llm.requests) == 1)
    second = threading.Thread(target=call, args=("second",), kwargs={"on_wait": waits.append})
    second.start()
    first.join(timeout=10)
    second.join(timeout=10)
    assert replies == {"first": "one", "second": "two"}
    assert scripted_llm.max_active == 1
    assert [r["messages"][0]["content"] for r in scripted_llm.requests] == ["first", "second"]
    assert waits == [1, 0]  # "1 request ahead", then its turn


def test_a_call_stopped_while_waiting_leaves_the_queue(scripted_llm):
    client = client_for(scripted_llm.base_url)
    scripted_llm.when("first", {"content": "one", "delay": 1.0})
    done = threading.Thread(target=lambda: client.chat([{"role": "user", "content": "first"}]))
    done.start()
    _wait_for(lambda: len(scripted_llm.requests) == 1)
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(LLMStopped):
        client.chat([{"role": "user", "content": "second"}], cancel=cancel)
    done.join(timeout=10)
    assert client.queue.length == 0 and len(scripted_llm.requests) == 1


def test_a_remote_endpoint_has_no_queue():
    client = client_for("https://api.example.com/v1")
    assert client.queue is None
    assert client_for("https://api.example.com/v1", model_queue="on").queue is not None


def test_a_broken_stream_is_a_connection_error_with_one_clear_line():
    import openai._base_client as base

    from agents.llm.errors import is_transport_error

    assert is_transport_error(base.httpx2.RemoteProtocolError("peer closed connection"))
    assert is_transport_error(base.httpx2.ReadError("reset"))
    assert not is_transport_error(ValueError("not JSON"))
