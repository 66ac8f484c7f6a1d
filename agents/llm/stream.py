"""Watching one model call: idle and overall limits, a stop button, and a socket we can close.

A local model on a small CPU may spend minutes on a long prompt before its first token, then
write steadily. A fixed total timeout either cuts such a call off half-way or waits far too
long for a server that hung, and a timed-out request re-sent to a server that is still busy
with the abandoned one only makes the queue longer. So a call is watched by a
:class:`CallGuard` instead:

- before the first token it may wait ``first_token`` seconds (prompt processing);
- after that, ``idle`` seconds without a new token end it;
- ``cap`` seconds end it whatever happens;
- a set ``cancel`` event (the user pressed Stop) ends it at once.

Ending a call means shutting down its TCP connection, which wakes the thread blocked reading
it and tells the server the client has gone, so it stops generating. The guard learns the
socket through httpcore's ``trace`` hook when the connection is opened (every guarded request
gets a fresh connection, so a request still waiting for its response headers can be ended
too). :class:`GuardedTransport` also makes sure the SDK never re-sends a request that was
ended this way or that timed out: it raises such failures as SDK errors, which the SDK passes
on without retrying, while connection failures and 429/5xx keep the SDK's own retry policy
(:func:`sdk_client` builds the SDK client on this transport, its pauses scaled by
``retry_base_delay``).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import httpx2
import openai

TICK = 0.05  # seconds between the guard's checks
SDK_FIRST_PAUSE = 0.5  # seconds: the SDK's first retry pause, scaled by retry_base_delay

_current = threading.local()  # the guard of the call the current thread is making


class CallEnded(openai.OpenAIError):
    """The guard ended the call (timeout or stop); raised so the SDK does not retry it."""


class CallGuard:
    """The limits of one model call, enforced from a watchdog thread."""

    def __init__(self, *, first_token: float, idle: float, cap: float,
                 cancel: threading.Event | None = None):
        self.first_token, self.idle, self.cap = first_token, idle, cap
        self.cancel = cancel
        self.reason: str | None = None  # "stopped" | "first_token" | "idle" | "cap"
        self.started = time.monotonic()
        self.last_token: float | None = None
        self.requests = 0  # HTTP requests sent for this call (the SDK's retries included)
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the calling thread ---------------------------------------------------------------------
    def __enter__(self) -> "CallGuard":
        _current.guard = self
        self._thread = threading.Thread(target=self._watch, name="llm-call-guard", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        _current.guard = None
        self._done.set()

    def token(self) -> None:
        """A piece of the answer arrived: the idle clock restarts."""
        self.last_token = time.monotonic()

    @property
    def ended(self) -> bool:
        return self.reason is not None

    def adopt(self, sock: Any) -> None:
        """The connection the request goes over (closed if the call is ended)."""
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.append(sock)
            ended = self.ended
        if ended:
            _shutdown(sock)

    # -- the watchdog ---------------------------------------------------------------------------
    def _watch(self) -> None:
        while not self._done.wait(TICK):
            reason = self._overdue(time.monotonic())
            if reason is not None:
                self.end(reason)
                return

    def _overdue(self, now: float) -> str | None:
        if self.cancel is not None and self.cancel.is_set():
            return "stopped"
        if now - self.started > self.cap:
            return "cap"
        if self.last_token is None:
            return "first_token" if now - self.started > self.first_token else None
        return "idle" if now - self.last_token > self.idle else None

    def end(self, reason: str) -> None:
        """End the call now: remember why and close its connection."""
        with self._lock:
            if self.reason is None:
                self.reason = reason
            sockets = list(self._sockets)
        for sock in sockets:
            _shutdown(sock)


def current_guard() -> CallGuard | None:
    return getattr(_current, "guard", None)


def _shutdown(sock: socket.socket) -> None:
    """Shut the connection down both ways: a blocked read returns and the server sees EOF."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already closed


def _trace(name: str, info: dict) -> None:
    if name in ("connection.connect_tcp.complete", "connection.connect_unix_socket.complete"):
        guard = current_guard()
        stream = info.get("return_value")
        if guard is not None and stream is not None:
            guard.adopt(stream.get_extra_info("socket"))


class GuardedTransport(httpx2.BaseTransport):
    """An HTTP transport that lets the current :class:`CallGuard` close the connection, and
    turns a timed-out or ended request into an error the SDK does not retry."""

    def __init__(self, inner: httpx2.BaseTransport):
        self._inner = inner

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        guard = current_guard()
        if guard is not None:
            if guard.ended:
                raise CallEnded(guard.reason or "ended")
            request.extensions["trace"] = _trace
            guard.requests += 1
        try:
            return self._inner.handle_request(request)
        except httpx2.ReadTimeout:
            # The server accepted the request and is still working on it: sending it again
            # would only queue a second copy behind the first.
            raise openai.APITimeoutError(request=request) from None
        except Exception:
            if guard is not None and guard.ended:
                raise CallEnded(guard.reason or "ended") from None
            raise

    def close(self) -> None:
        self._inner.close()


def http_client(timeout: httpx2.Timeout) -> httpx2.Client:
    """The SDK's HTTP client: no kept-alive connections (so every request's socket is known to
    its guard; on loopback a connection costs nothing) and the guarded transport."""
    inner = httpx2.HTTPTransport(limits=httpx2.Limits(max_connections=100,
                                                      max_keepalive_connections=0))
    return httpx2.Client(transport=GuardedTransport(inner), timeout=timeout,
                         follow_redirects=True)


def _retry_pause(seconds: float) -> float:
    """The pause before an SDK retry (a module function so tests can observe the pauses)."""
    return seconds


class _SDK(openai.OpenAI):
    """The SDK client, its backoff scaled by ``retry_base_delay`` (the policy is the SDK's)."""

    retry_scale = 1.0

    def _calculate_retry_timeout(self, remaining_retries, options, response_headers=None):
        seconds = super()._calculate_retry_timeout(remaining_retries, options, response_headers)
        if self._parse_retry_after_header(response_headers) is None:
            seconds *= self.retry_scale
        return _retry_pause(seconds)


def sdk_client(settings, base_url: str) -> openai.OpenAI:
    """The ``openai`` client of an :class:`~agents.llm.client.LLMClient`: the SDK's retries
    (``max_retries``), the guarded transport, and HTTP timeouts that are only a backstop behind
    each call's guard, except for connecting, which fails fast."""
    backstop = max(settings.call_timeout, settings.request_timeout) + 30.0
    timeout = httpx2.Timeout(backstop, connect=min(settings.request_timeout, 30.0))
    sdk = _SDK(base_url=base_url, api_key=settings.api_key or "not-needed", timeout=timeout,
               max_retries=settings.max_retries, http_client=http_client(timeout))
    sdk.retry_scale = settings.retry_base_delay / SDK_FIRST_PAUSE
    return sdk
