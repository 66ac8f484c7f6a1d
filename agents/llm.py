"""One chat client for every model: the embedded one, OpenAI, or any OpenAI-compatible server.

Everything goes through the ``openai`` SDK, so the embedded llama.cpp server, Ollama, vLLM,
LM Studio and OpenAI itself take exactly the same code path. On top of the SDK this adds what
the pipelines rely on:

- retries with exponential backoff and jitter on timeouts, dropped connections, 429 and 5xx
  (never on 400/401/403/404, which a retry cannot fix); the SDK's own retries are off, so these
  are the only ones;
- errors as :class:`LLMError` subclasses whose message is one sentence a user can act on
  (:mod:`agents.llm_errors`);
- structured output: a JSON schema is sent as ``response_format``; when the server rejects it,
  the client falls back to ``json_object`` and then to plain text, once, for its lifetime
  (:mod:`agents.llm_structured`);
- accounting per call (tokens, wall seconds) and the on-disk response cache
  (:mod:`agents.llm_cache`).
"""

from __future__ import annotations

import collections
import random
import threading
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable

import openai

from .config import Settings, load_settings, mask_secret
from .llm_cache import ResponseCache, cache_key
from .llm_errors import (LLMAuthError, LLMBadResponse, LLMConnectionError, LLMError,
                         LLMModelNotFound, LLMTimeout, translate_error)
from .llm_structured import JSON_LEVELS, rejects_response_format, response_format

__all__ = [
    "LLMAuthError", "LLMBadResponse", "LLMClient", "LLMConnectionError", "LLMError",
    "LLMModelNotFound", "LLMReply", "LLMTimeout", "estimate_tokens", "make_client",
]

RETRYABLE_STATUS = (408, 409, 429)  # plus every 5xx
MAX_RETRY_AFTER = 30.0  # seconds: a server asking to wait longer gets our own backoff instead


@dataclass
class LLMReply:
    text: str
    model: str
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    cached: bool = False

    def to_dict(self) -> dict:
        return asdict(self)


def _sleep(seconds: float) -> None:
    """Backoff pause (a module function so tests can observe the delays)."""
    time.sleep(seconds)


class LLMClient:
    """Chat completions with retries, structured output, accounting and caching."""

    def __init__(self, settings: Settings, *, base_url: str | None = None,
                 model: str | None = None, cache: ResponseCache | None = None):
        self.settings = settings
        self.base_url = (base_url or settings.base_url or "https://api.openai.com/v1").rstrip("/")
        self.model = model if model is not None else settings.resolved_model()
        self.cache = cache
        self._endpoint = (f"local:{settings.local_variant}" if settings.provider == "local"
                          else self.base_url)
        self._sdk = openai.OpenAI(base_url=self.base_url,
                                  api_key=settings.api_key or "not-needed",
                                  timeout=settings.request_timeout, max_retries=0)
        self._lock = threading.Lock()
        self._json_level = (0 if settings.json_mode == "auto"
                            else JSON_LEVELS.index(settings.json_mode))
        self._samples: collections.Counter[str] = collections.Counter()

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
             stop: list[str] | str | None = None) -> LLMReply:
        """Send a chat request; return the answer text with its accounting.

        ``json_schema`` is either a JSON Schema or OpenAI's wrapper ``{"name", "schema",
        "strict"}``; the prompt should still describe the format, since a server without
        structured output gets the request without it.
        """
        _check_messages(messages)
        temperature = self.settings.temperature if temperature is None else float(temperature)
        max_tokens = self.settings.max_tokens if max_tokens is None else int(max_tokens)
        if self.model == "":
            self.model = self._served_model()
        key = None
        if self.cache is not None and self.settings.cache:
            key = self._cache_key(messages, temperature, max_tokens, json_schema, stop)
            hit = self.cache.get(key)
            if hit is not None:
                return hit
        reply = self._call_with_retries(messages, temperature, max_tokens, json_schema, stop)
        if key is not None:
            self.cache.put(key, reply)
        return reply

    def ping(self) -> dict:
        """Check the endpoint once, quickly: ``{"ok", "model", "latency_s", "error"}``."""
        t0 = time.perf_counter()
        try:
            sdk = self._sdk.with_options(timeout=min(self.settings.request_timeout, 10.0))
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

    def _call_with_retries(self, messages, temperature, max_tokens, json_schema, stop) -> LLMReply:
        attempts = 0
        while True:
            attempts += 1
            level = self._json_level
            try:
                return self._call_once(messages, temperature, max_tokens,
                                       response_format(json_schema, level), stop)
            except openai.APIStatusError as exc:
                if (json_schema is not None and self.settings.json_mode == "auto"
                        and rejects_response_format(exc) and level < len(JSON_LEVELS) - 1):
                    with self._lock:  # remember: later calls start at the working level
                        self._json_level = max(self._json_level, level + 1)
                    attempts -= 1  # a format fallback is not a failed attempt
                    continue
                if not _retryable(exc) or attempts > self.settings.max_retries:
                    raise self._translate(exc, attempts) from None
                _sleep(self._backoff(attempts, _retry_after(exc)))
            except (openai.APITimeoutError, openai.APIConnectionError) as exc:
                if attempts > self.settings.max_retries:
                    raise self._translate(exc, attempts) from None
                _sleep(self._backoff(attempts))
            except openai.OpenAIError as exc:
                raise self._translate(exc, attempts) from None
            except ValueError as exc:  # the SDK raises JSONDecodeError for a non-JSON body
                raise LLMBadResponse(f"The model endpoint at {self.base_url} returned a body "
                                     f"that is not JSON ({exc}).") from None

    def _call_once(self, messages, temperature, max_tokens, response_format, stop) -> LLMReply:
        kwargs: dict[str, Any] = dict(model=self.model or "default", messages=messages,
                                      temperature=temperature, max_tokens=max_tokens)
        if response_format is not None:
            kwargs["response_format"] = response_format
        if stop:
            kwargs["stop"] = stop
        t0 = time.perf_counter()
        response = self._sdk.chat.completions.create(**kwargs)
        seconds = time.perf_counter() - t0
        text = self._content_of(response)
        usage = getattr(response, "usage", None)
        prompt_tokens = getattr(usage, "prompt_tokens", None)
        completion_tokens = getattr(usage, "completion_tokens", None)
        return LLMReply(
            text=text,
            model=str(getattr(response, "model", None) or self.model),
            prompt_tokens=(int(prompt_tokens) if isinstance(prompt_tokens, int)
                           else estimate_tokens(_messages_text(messages))),
            completion_tokens=(int(completion_tokens) if isinstance(completion_tokens, int)
                               else estimate_tokens(text)),
            seconds=seconds, cached=False)

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

    def _backoff(self, attempt: int, retry_after: float | None = None) -> float:
        base = self.settings.retry_base_delay
        if retry_after is not None and retry_after <= MAX_RETRY_AFTER:
            return retry_after
        return base * (2 ** (attempt - 1)) + random.uniform(0, base * 0.25)

    # -- errors -------------------------------------------------------------------------------
    def _translate(self, exc: Exception, attempts: int) -> LLMError:
        """Map an SDK exception to the :class:`LLMError` a user can act on."""
        return translate_error(exc, where=self.base_url, model=self.model,
                               timeout=self.settings.request_timeout,
                               has_key=bool(self.settings.api_key), attempts=attempts)


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
        from . import local_model

        if not local_model.weights_installed(settings.local_variant):
            raise LLMError(local_model.not_installed_message(settings.local_variant))
        try:
            base_url = local_model.get_local_server(settings.local_variant,
                                                    n_ctx=settings.n_ctx,
                                                    threads=settings.threads,
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


def _retryable(exc: openai.APIStatusError) -> bool:
    return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500


def _retry_after(exc: openai.APIStatusError) -> float | None:
    try:
        value = exc.response.headers.get("retry-after")
        return float(value) if value is not None else None
    except (AttributeError, TypeError, ValueError):
        return None


def _model_listed(model: str, served: list[str]) -> bool:
    return model in served or f"{model}:latest" in served

