"""What can go wrong with a model call, as exceptions whose message a user can act on.

The ``openai`` SDK raises one exception class per transport or HTTP failure, with messages meant
for developers ("Connection error.", a JSON body). :func:`translate_error` turns each into an
:class:`LLMError` subclass whose ``str()`` is one sentence naming the endpoint, what happened and
what to change, so the app, the CLI and a failed step can show it as it is.
"""

from __future__ import annotations

import errno

import openai


class LLMError(Exception):
    """A model call failed; ``str(exc)`` is a clear message for the user."""


class LLMConnectionError(LLMError):
    """The endpoint cannot be reached."""


class LLMAuthError(LLMError):
    """The API key is missing or rejected."""


class LLMModelNotFound(LLMError):
    """The endpoint does not serve the requested model."""


class LLMTimeout(LLMError):
    """The endpoint did not answer in time."""


class LLMStopped(LLMError):
    """The call was ended because the run was stopped."""


class LLMBadResponse(LLMError):
    """The endpoint answered something that is not a usable chat completion."""


def ended_error(reason: str, *, where: str, first_token: float, idle: float, cap: float,
                streamed: bool) -> LLMError:
    """The error for a call its guard ended (:mod:`agents.llm.stream`): stopped or timed out.

    A timed-out call is never re-sent, so the message says what to change instead of "tried N
    times"."""
    if reason == "stopped":
        return LLMStopped("The model call was stopped.")
    if not streamed:
        return LLMTimeout(f"The model at {where} did not answer within {cap:g} s "
                          "(request_timeout). The server may be busy or the prompt too long; "
                          "try again, raise request_timeout, or turn streaming back on.")
    if reason == "first_token":
        return LLMTimeout(f"The model at {where} had not started its answer after "
                          f"{first_token:g} s (first_token_timeout). Reading a long prompt can "
                          "take minutes on a busy CPU; raise first_token_timeout or try again "
                          "when the machine is less busy.")
    if reason == "idle":
        return LLMTimeout(f"The model at {where} stopped writing: no new token for {idle:g} s "
                          "(idle_timeout). The server may have hung or be overloaded; try again "
                          "or raise idle_timeout.")
    return LLMTimeout(f"The model at {where} did not finish its answer within {cap:g} s "
                      "(call_timeout); raise call_timeout or lower max_tokens.")


def translate_error(exc: Exception, *, where: str, model: str, timeout: float, has_key: bool,
                    attempts: int) -> LLMError:
    """Map an SDK exception to the :class:`LLMError` a user can act on.

    ``where`` is the endpoint's base URL, ``model`` the model asked for, ``timeout`` the
    request timeout in seconds, ``has_key`` whether an API key was sent, ``attempts`` how many
    tries were made (mentioned when more than one).
    """
    tries = f" (tried {attempts} times)" if attempts > 1 else ""
    if isinstance(exc, openai.APITimeoutError):
        return LLMTimeout(f"The model at {where} did not answer within "
                          f"{timeout:g} s{tries}. The server may be busy "
                          "or the prompt too long; try again or raise the timeout.")
    if isinstance(exc, openai.APIConnectionError):
        return LLMConnectionError(f"Cannot reach the model endpoint at {where}: "
                                  f"{_connection_reason(exc)}{tries}. Is the server running?")
    if isinstance(exc, openai.APIStatusError):
        return _status_error(exc, where=where, model=model, has_key=has_key, tries=tries)
    if isinstance(exc, openai.APIResponseValidationError):
        return LLMBadResponse(f"The model endpoint at {where} returned a malformed "
                              f"response: {exc}.")
    if isinstance(exc, openai.OpenAIError):
        return LLMError(f"The model call to {where} failed: {exc}")
    return LLMError(str(exc))


def _status_error(exc: openai.APIStatusError, *, where: str, model: str, has_key: bool,
                  tries: str) -> LLMError:
    status = exc.status_code
    detail = server_message(exc)
    if status == 401:
        if not has_key:
            return LLMAuthError(f"The endpoint at {where} needs an API key (401); set "
                                "OPENAI_API_KEY or api_key in config.toml.")
        return LLMAuthError(f"The API key was rejected (401) by {where}: {detail}. "
                            "Check OPENAI_API_KEY.")
    if status == 403:
        return LLMAuthError(f"Access was denied (403) by {where}: {detail}. The API key "
                            "may lack permission for this model.")
    if status == 404:
        return LLMModelNotFound(f"Model '{model}' is not available at {where} "
                                f"(404: {detail}). Check the model name, and that the "
                                "base URL ends with /v1.")
    if status == 429:
        return LLMError(f"The endpoint at {where} is rate limiting requests (429){tries}: "
                        f"{detail}. Wait a moment and try again.")
    if status >= 500:
        return LLMError(f"The model server at {where} failed with HTTP {status}{tries}: "
                        f"{detail}.")
    return LLMError(f"The model endpoint at {where} rejected the request ({status}): "
                    f"{detail}.")


def server_message(exc: openai.APIStatusError) -> str:
    """The server's own explanation of an HTTP error, at most 300 characters."""
    body = exc.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        message = inner.get("message") if isinstance(inner, dict) else inner
        if message:
            return str(message)[:300]
    if isinstance(body, str) and body.strip():
        return body.strip()[:300]
    return exc.message or f"HTTP {exc.status_code}"


def _connection_reason(exc: openai.APIConnectionError) -> str:
    """The low-level reason behind the SDK's generic 'Connection error.', in plain words."""
    chain = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(chain) < 6:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    for cause in chain:
        text = str(cause).lower()
        if getattr(cause, "errno", None) == errno.ECONNREFUSED or "refused" in text:
            return "connection refused"
        if "name or service not known" in text or "nodename nor servname" in text:
            return "unknown host name"
    text = str(chain[-1]) if chain else str(exc)
    return text.strip() or "connection failed"


def is_transport_error(exc: Exception) -> bool:
    """A network failure raised by the HTTP library under the SDK while a streamed body is read
    (the SDK wraps failures of the request itself, not of reading its stream)."""
    return any(cls.__name__ in ("TransportError", "StreamError")
               for cls in type(exc).__mro__)

