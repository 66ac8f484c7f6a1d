"""One chat client for every model: the embedded one, OpenAI, or any OpenAI-compatible server.

Everything goes through the ``openai`` SDK, so the embedded llama.cpp server, Ollama, vLLM,
LM Studio and OpenAI itself take exactly the same code path. On top of the SDK this adds what
the pipelines rely on:

- streaming: answers arrive token by token (``on_text`` hears each piece), and a call is
  watched for an idle stream, a first token that never comes, an overall cap and the stop
  button (:mod:`agents.llm.stream`); the joined pieces are exactly the text a non-streamed call
  returns, and token usage comes from the stream's last chunk (``include_usage``);
- retries: the SDK's own policy (exponential backoff with jitter, honouring Retry-After) for
  dropped connections, 429 and 5xx; a request that timed out is never re-sent, because the
  server is most likely still working on it;
- one queue per local server (:mod:`agents.llm.queue`): requests take turns, and a waiting
  call hears how many are ahead (``on_wait``);
- errors as :class:`LLMError` subclasses whose message is one sentence a user can act on
  (:mod:`agents.llm.errors`);
- structured output: a JSON schema is sent as ``response_format``; when the server rejects it,
  the client falls back to ``json_object`` and then to plain text, once, for its lifetime
  (:mod:`agents.llm.structured`);
- accounting per call (tokens, wall seconds) and the on-disk response cache
  (:mod:`agents.llm.cache`).
"""

from __future__ import annotations

import collections
import logging
import threading
import time
from typing import Any, Callable

import openai

from agents.llm import local_model, stream as llm_stream
from agents.core.config import Settings, load_settings, mask_secret
from agents.llm.cache import ResponseCache, cache_key
from agents.llm.errors import (LLMAuthError, LLMBadResponse, LLMConnectionError, LLMError,
    LLMModelNotFound, LLMStopped, LLMTimeout, ended_error, is_transport_error, translate_error)
from agents.llm.reply import LLMReply
from agents.llm.queue import QueueLeft, is_local, queue_for
from agents.llm.structured import JSON_LEVELS, rejects_response_format, response_format

__all__ = [
    "LLMAuthError", "LLMBadResponse", "LLMClient", "LLMConnectionError", "LLMError",
    "LLMModelNotFound", "LLMReply", "LLMStopped", "LLMTimeout", "estimate_tokens",
    "make_client",
]

log = logging.getLogger(__name__)


TextListener = Callable[[str], None]
WaitListener = Callable[[int], None]


class LLMClient:
    """Chat completions with streaming, retries, structured output, accounting and caching."""

    def __init__(self, settings: Settings, *, base_url: str | None = None,
                 model: str | None = None, cache: ResponseCache | None = None):
        self.settings = settings
        self.base_url = (base_url or settings.base_url or "https://api.openai.com/v1").rstrip("/")
        self.model = model if model is not None else settings.resolved_model()
        self.cache = cache
        self._endpoint = (f"local:{settings.local_variant}" if settings.provider == "local"
                          else self.base_url)
        self._sdk = llm_stream.sdk_client(settings, self.base_url)
        self._lock = threading.Lock()
        self._json_level = (0 if settings.json_mode == "auto"
                            else JSON_LEVELS.index(settings.json_mode))
        self._samples: collections.Counter[str] = collections.Counter()
        queued = settings.model_queue == "on" or (settings.model_queue == "auto" and (
            settings.provider == "local" or is_local(self.base_url)))
        self.queue = queue_for(self.base_url) if queued else None
        self._warned_usage = False

    def __repr__(self) -> str:
        return (f"LLMClient(model={self.model!r}, base_url={self.base_url!r}, "
                f"api_key={mask_secret(self.settings.api_key)!r})")

    @property
    def json_mode(self) -> str:
        """The structured-output mode in use now (after any fallback)."""
        return JSON_LEVELS[self._json_level]

    # -- public -------------------------------------------------------------------------------
    def chat(self, messages: list[dict], *, temperature: float | None = None,
             max_tokens: int | None = None, json_schema: dict | None = None,
             stop: list[str] | str | None = None, on_text: TextListener | None = None,
             on_wait: WaitListener | None = None,
             cancel: threading.Event | None = None, seed: int | None = None,
             cache: bool = True) -> LLMReply:
        """Send a chat request; return the answer text with its accounting.

        ``json_schema`` is either a JSON Schema or OpenAI's wrapper ``{"name", "schema",
        "strict"}``; the prompt should still describe the format, since a server without
        structured output gets the request without it. ``on_text(piece)`` hears the answer as
        it is written (a cached or non-streamed answer comes as one piece), ``on_wait(ahead)``
        the requests ahead in the model queue, and a set ``cancel`` ends the call at once with
        :class:`LLMStopped` (closing the connection, so the server stops generating).
        A sampled request (temperature above 0) carries the settings' ``sample_seed`` plus
        ``seed`` (which tells apart several samples of one prompt), so a run repeats.
        ``cache=False`` skips the response cache for this request (a warm-up must reach the
        server: :mod:`agents.core.warmup`).
        """
        _check_messages(messages)
        temperature = self.settings.temperature if temperature is None else float(temperature)
        max_tokens = self.settings.max_tokens if max_tokens is None else int(max_tokens)
        if cancel is not None and cancel.is_set():
            raise LLMStopped("The model call was stopped.")
        if self.model == "":
            self.model = self._served_model()
        key = None
        if cache and self.cache is not None and self.settings.cache:
            key = self._cache_key(messages, temperature, max_tokens, json_schema, stop)
            hit = self.cache.get(key)
            if hit is not None:
                if on_text is not None:
                    on_text(hit.text)
                return hit
        sent_seed = (self.settings.sample_seed + (seed or 0)
                     if temperature > 0 and self.settings.sample_seed >= 0 else None)
        request = (messages, temperature, max_tokens, json_schema, stop, on_text, cancel,
                   sent_seed)
        if self.queue is None:
            reply = self._call(*request)
        else:
            try:
                with self.queue.turn(on_wait, cancel):
                    reply = self._call(*request)
            except QueueLeft:
                raise LLMStopped("The model call was stopped while waiting for its turn.") \
                    from None
        if key is not None:
            self.cache.put(key, reply)
        return reply

    def ping(self) -> dict:
        """Check the endpoint once, quickly: ``{"ok", "model", "latency_s", "error"}``."""
        t0 = time.perf_counter()
        try:
            sdk = self._sdk.with_options(timeout=min(self.settings.request_timeout, 10.0),
                                         max_retries=0)
            served = [m.id for m in sdk.models.list()]
            if self.model == "" and served:
                self.model = served[0]
            if (served and self.settings.provider != "local" and self.model
                    and not _model_listed(self.model, served)):
                raise LLMModelNotFound(
                    f"Model '{self.model}' is not available at {self.base_url}; it serves: "
                    f"{', '.join(served[:10])}{' …' if len(served) > 10 else ''}.")
            error = None
        except LLMError as exc:
            error = str(exc)
        except openai.OpenAIError as exc:
            error = str(self._translate(exc, attempts=1))
        except Exception as exc:  # a malformed /models body
            error = (f"The endpoint at {self.base_url} answered the model list with something "
                     f"unreadable ({exc.__class__.__name__}).")
        return {"ok": error is None, "model": self.model,
                "latency_s": round(time.perf_counter() - t0, 3), "error": error}

    def close(self) -> None:
        self._sdk.close()
        if self.cache is not None:
            self.cache.close()

    # -- request ------------------------------------------------------------------------------
    def _cache_key(self, messages, temperature, max_tokens, json_schema, stop) -> str:
        base = dict(model=self.model, messages=messages, temperature=temperature,
                    max_tokens=max_tokens, json_schema=json_schema, stop=stop,
                    endpoint=self._endpoint)
        sample = 0
        if temperature > 0:
            # Identical sampling requests within one client are distinct samples: the n-th
            # repeat maps to the n-th cached sample, so a re-run replays the same sequence.
            with self._lock:
                first = cache_key(**base)
                sample = self._samples[first]
                self._samples[first] += 1
        return cache_key(**base, sample=sample)

    def _call(self, messages, temperature, max_tokens, json_schema, stop, on_text,
              cancel, seed=None) -> LLMReply:
        """One answer, stepping down the structured-output level when the server rejects it.
        Retries of failed requests happen inside the SDK."""
        while True:
            level = self._json_level
            guard = self._guard(cancel)
            try:
                with guard:
                    return self._call_once(messages, temperature, max_tokens,
                                           response_format(json_schema, level), stop,
                                           on_text, guard, seed)
            except LLMError:
                raise
            except Exception as exc:
                if guard.ended:
                    raise self._ended(guard) from None
                if (isinstance(exc, openai.APIStatusError) and json_schema is not None
                        and self.settings.json_mode == "auto"
                        and rejects_response_format(exc) and level < len(JSON_LEVELS) - 1):
                    with self._lock:  # remember: later calls start at the working level
                        self._json_level = max(self._json_level, level + 1)
                    continue
                if isinstance(exc, openai.OpenAIError):
                    raise self._translate(exc, guard.requests) from None
                if isinstance(exc, ValueError):  # a body that is not JSON
                    raise LLMBadResponse(f"The model endpoint at {self.base_url} returned a "
                                         f"body that is not JSON ({exc}).") from None
                if is_transport_error(exc):  # the stream broke while being read
                    raise LLMConnectionError(f"The connection to the model endpoint at "
                                             f"{self.base_url} broke: {exc}") from None
                raise

    def _guard(self, cancel) -> llm_stream.CallGuard:
        s = self.settings
        if s.stream:
            return llm_stream.CallGuard(first_token=s.first_token_timeout, idle=s.idle_timeout,
                                        cap=s.call_timeout, cancel=cancel)
        return llm_stream.CallGuard(first_token=s.request_timeout, idle=s.request_timeout,
                                    cap=s.request_timeout, cancel=cancel)

    def _call_once(self, messages, temperature, max_tokens, response_format, stop, on_text,
                   guard: llm_stream.CallGuard, seed: int | None = None) -> LLMReply:
        kwargs: dict[str, Any] = dict(model=self.model or "default", messages=messages,
                                      temperature=temperature, max_tokens=max_tokens)
        if response_format is not None:
            kwargs["response_format"] = response_format
        if stop:
            kwargs["stop"] = stop
        if seed is not None:
            kwargs["seed"] = seed
        t0 = time.perf_counter()
        if self.settings.stream:
            text, model, usage = self._read_stream(kwargs, guard, on_text)
        else:
            response = self._sdk.chat.completions.create(**kwargs)
            guard.token()
            text = self._content_of(response)
            model, usage = getattr(response, "model", None), getattr(response, "usage", None)
            if on_text is not None:
                on_text(text)
        seconds = time.perf_counter() - t0
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        estimated = not (isinstance(prompt_tokens, int) and isinstance(completion_tokens, int))
        if estimated and not self._warned_usage:
            self._warned_usage = True
            log.warning("The model endpoint at %s reports no token usage; token counts are "
                        "estimated from the text length.", self.base_url)
        return LLMReply(
            text=text,
            model=str(model or self.model),
            prompt_tokens=(int(prompt_tokens) if isinstance(prompt_tokens, int)
                           else estimate_tokens(_messages_text(messages))),
            completion_tokens=(int(completion_tokens) if isinstance(completion_tokens, int)
                               else estimate_tokens(text)),
            seconds=seconds, cached=False, usage_estimated=estimated)

    def _read_stream(self, kwargs: dict, guard: llm_stream.CallGuard,
                     on_text: TextListener | None) -> tuple[str, Any, Any]:
        """The streamed answer: its joined text, the model that wrote it and its usage.

        Only pieces of the answer (text, a refusal, the closing chunk) restart the idle clock:
        a server may announce the assistant's role before it has read the prompt, and reading
        the prompt is what ``first_token_timeout`` allows for."""
        stream = self._sdk.chat.completions.create(
            **kwargs, stream=True, stream_options={"include_usage": True})
        parts: list[str] = []
        refusal: list[str] = []
        model = usage = None
        try:
            for chunk in stream:
                model = getattr(chunk, "model", None) or model
                if getattr(chunk, "usage", None) is not None:
                    usage = chunk.usage
                    guard.token()
                for choice in getattr(chunk, "choices", None) or []:
                    delta = getattr(choice, "delta", None)
                    piece = getattr(delta, "content", None)
                    if getattr(delta, "refusal", None):
                        refusal.append(delta.refusal)
                        guard.token()
                    if isinstance(piece, str) and piece:
                        parts.append(piece)
                        guard.token()
                        if on_text is not None:
                            on_text(piece)
                    if getattr(choice, "finish_reason", None):
                        guard.token()
        finally:
            stream.close()
        if guard.ended:  # a connection shut down by the guard can look like a clean end
            raise llm_stream.CallEnded(guard.reason or "ended")
        text = "".join(parts)
        if not text.strip():
            if refusal:
                raise LLMBadResponse(f"The model refused to answer: {''.join(refusal)}")
            raise LLMBadResponse(f"The model at {self.base_url} returned an empty answer.")
        return text, model, usage

    def _content_of(self, response: Any) -> str:
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise LLMBadResponse(f"The model endpoint at {self.base_url} returned a response "
                                 "without any answer (no 'choices').")
        message = getattr(choices[0], "message", None)
        content = getattr(message, "content", None)
        if not isinstance(content, str) or not content.strip():
            refusal = getattr(message, "refusal", None)
            if refusal:
                raise LLMBadResponse(f"The model refused to answer: {refusal}")
            raise LLMBadResponse(f"The model at {self.base_url} returned an empty answer.")
        return content

    def _served_model(self) -> str:
        """The model a single-model server (llama.cpp, vLLM) serves, when none is configured."""
        try:
            served = [m.id for m in self._sdk.models.list()]
        except openai.OpenAIError as exc:
            raise self._translate(exc, attempts=1) from None
        if not served:
            raise LLMModelNotFound(f"No model name is configured and the endpoint at "
                                   f"{self.base_url} lists none; set STUDIO_MODEL or 'model' in "
                                   f"the [llm] table of config.toml.")
        return served[0]

    # -- errors -------------------------------------------------------------------------------
    def _ended(self, guard: llm_stream.CallGuard) -> LLMError:
        s = self.settings
        if s.stream:
            return ended_error(guard.reason or "cap", where=self.base_url,
                               first_token=s.first_token_timeout, idle=s.idle_timeout,
                               cap=s.call_timeout, streamed=True)
        return ended_error(guard.reason or "cap", where=self.base_url, first_token=0, idle=0,
                           cap=s.request_timeout, streamed=False)

    def _translate(self, exc: Exception, attempts: int) -> LLMError:
        """Map an SDK exception to the :class:`LLMError` a user can act on."""
        s = self.settings
        timeout = s.call_timeout if s.stream else s.request_timeout
        return translate_error(exc, where=self.base_url, model=self.model, timeout=timeout,
                               has_key=bool(s.api_key), attempts=max(1, attempts))


def make_client(settings: Settings | None = None, *,
                progress: Callable[[float, str], None] | None = None) -> LLMClient:
    """A client for ``settings`` (default: :func:`load_settings`), starting the embedded
    model's server first when the provider is ``local``.

    ``progress(fraction, message)`` hears about the one-time assembly and verification of the
    embedded weights (seconds on first use), e.g. to drive a progress bar.
    """
    settings = settings or load_settings()
    base_url = settings.base_url
    if settings.provider == "local":
        if not local_model.weights_installed(settings.local_variant):
            raise LLMError(local_model.not_installed_message(settings.local_variant))
        try:
            base_url = local_model.get_local_server(settings.local_variant,
                                                    n_ctx=settings.n_ctx,
                                                    threads=settings.threads,
                                                    decoding=settings.decoding,
                                                    progress=progress)
        except local_model.LocalModelError as exc:
            raise LLMError(str(exc)) from None
    elif not settings.api_key and not settings.base_url:
        raise LLMAuthError("No API key is configured for OpenAI: set OPENAI_API_KEY (or "
                           "OPENAI_BASE_URL for a local server such as Ollama), or use the "
                           "embedded model with provider = \"local\".")
    cache = ResponseCache(settings.cache_path) if settings.cache else None
    return LLMClient(settings, base_url=base_url, cache=cache)


# -- helpers ----------------------------------------------------------------------------------
def estimate_tokens(text: str) -> int:
    """Rough token count (~4 characters per token) for servers that report no usage."""
    return max(1, round(len(text) / 4)) if text else 0


def _messages_text(messages: list[dict]) -> str:
    return "\n".join(str(m.get("content") or "") for m in messages)


def _check_messages(messages: Any) -> None:
    if not isinstance(messages, list) or not messages:
        raise ValueError("messages must be a non-empty list of {'role', 'content'} dicts")
    for m in messages:
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise ValueError(f"each message needs 'role' and 'content', got {m!r:.80}")


def _model_listed(model: str, served: list[str]) -> bool:
    return model in served or f"{model}:latest" in served
