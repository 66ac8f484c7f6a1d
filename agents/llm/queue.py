"""One queue in front of a model server that works on one request at a time.

The embedded llama.cpp server (and a local Ollama or LM Studio) has one CPU to share: two
requests sent at once are either queued inside the server, where the client cannot see them,
or decoded side by side, each at half speed with both prompts' memory. Every session of the
app and every run therefore takes a turn here, in arrival order, and a run whose turn has not
come is told how many requests are ahead of it, so the page can say "waiting for the model: 1
run ahead" instead of looking frozen. Each run has at most one model call in flight, so
requests ahead are runs ahead.

One queue exists per endpoint and process (:func:`queue_for`); remote endpoints, which serve
many requests at once, get none.
"""

from __future__ import annotations

import threading
from collections import deque
from contextlib import contextmanager
from typing import Callable, Iterator
from urllib.parse import urlsplit

WAIT_TICK = 0.1  # seconds between checks of the stop button while waiting


class QueueLeft(Exception):
    """The caller stopped while still waiting for its turn."""


class ModelQueue:
    """First come, first served turns at one model server."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._waiting: deque[object] = deque()

    @property
    def length(self) -> int:
        """Requests being served or waiting."""
        with self._cond:
            return len(self._waiting)

    @contextmanager
    def turn(self, on_wait: Callable[[int], None] | None = None,
             cancel: threading.Event | None = None) -> Iterator[None]:
        """Hold the server for one request; wait for the requests ahead first.

        ``on_wait(ahead)`` hears the number of requests ahead whenever it changes (and 0 when
        this request's turn comes, if it had to wait); a set ``cancel`` leaves the queue with
        :class:`QueueLeft`.
        """
        ticket = object()
        with self._cond:
            self._waiting.append(ticket)
            told = None
            try:
                while self._waiting[0] is not ticket:
                    ahead = self._waiting.index(ticket)
                    if ahead != told and on_wait is not None:
                        on_wait(ahead)
                    told = ahead
                    if cancel is not None and cancel.is_set():
                        raise QueueLeft()
                    self._cond.wait(WAIT_TICK)
            except BaseException:
                self._waiting.remove(ticket)
                self._cond.notify_all()
                raise
        if told is not None and on_wait is not None:
            on_wait(0)
        try:
            yield
        finally:
            with self._cond:
                self._waiting.remove(ticket)
                self._cond.notify_all()


_queues: dict[str, ModelQueue] = {}
_queues_lock = threading.Lock()


def queue_for(endpoint: str) -> ModelQueue:
    """The process-wide queue of ``endpoint`` (created on first use)."""
    with _queues_lock:
        queue = _queues.get(endpoint)
        if queue is None:
            queue = _queues[endpoint] = ModelQueue()
        return queue


def waiting_message(ahead: int) -> str:
    """What a run waiting for its turn shows: 'waiting for the model: 1 run ahead'."""
    return f"waiting for the model: {ahead} run{'s' if ahead != 1 else ''} ahead"


def is_local(base_url: str) -> bool:
    """Whether ``base_url`` points at this machine (a server that shares our CPU)."""
    host = (urlsplit(base_url).hostname or "").lower()
    return host in ("localhost", "::1") or host.startswith("127.")
