"""Read a database's prompt prefix before its first question, while the user is still typing.

The embedded model reads about 95 prompt tokens a second and keeps what it has read (llama.cpp's
prompt cache). Later questions on a database find its schema already read; the first one pays
for all of it: a pipeline's static text and the schema are 1,000-3,000 tokens, 10-30 s on this
kind of CPU, before the model writes anything. Yet up to where the question goes in, a
pipeline's first prompt does not depend on the question (static text first, schema next, as
every prompt here is laid out). So that prefix can be read as soon as the database is opened:
the pipeline's first prompt is built with a stand-in question (a client that only records the
request), cut before the stand-in, and sent with one token to write. When the real question
comes, the server reads only what follows the prefix.

It is worth doing only for a model server on this machine, whose prompt cache it fills; a
hosted endpoint caches by itself and bills the tokens. The Ask page does it for the embedded
model (:mod:`ui.warmup`); nothing here waits for it, and a failed warm-up only loses its time.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

from .engine import start_run

# A word that names nothing in any schema or stored value, so value grounding and retrieval find
# nothing for it, and that no prompt contains by itself.
STAND_IN = "Zqxwarmupzqx"


class _Recorded(Exception):
    """Raised by the recording client once it holds the first request."""


class _RecordingClient:
    """Takes the place of the model client for one run: records the first request and fails
    it, so the run stops at its first model call. Reads the real client's settings, so the
    prompt is the one the real client would be sent (the same context budget)."""

    def __init__(self, real) -> None:
        self.settings = getattr(real, "settings", None)
        self.model = getattr(real, "model", "") or ""
        self.messages: list[dict] | None = None

    def chat(self, messages: list[dict], **_: object):
        if self.messages is None:
            self.messages = [dict(m) for m in messages]
        raise _Recorded("the first request is recorded")


def first_prompt_prefix(pipeline, db, llm, *, params: dict | None = None,
                        services: dict | None = None) -> list[dict] | None:
    """The messages of ``pipeline``'s first model request on ``db``, cut before the question.

    None when the pipeline asks nothing of the model before needing a real question's answer,
    or when the question is not in its first prompt."""
    recorder = _RecordingClient(llm)
    run = start_run(pipeline, STAND_IN, db, recorder, params=params, services=services,
                    answer_checks=False)
    try:
        for _ in run:
            if recorder.messages is not None:
                break
    finally:
        run.close()
    return cut_before(recorder.messages or [], STAND_IN)


def cut_before(messages: list[dict], marker: str) -> list[dict] | None:
    """``messages`` up to ``marker``: the earlier messages whole, the one holding it cut."""
    kept: list[dict] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str):
            return None
        at = content.find(marker)
        if at < 0:
            kept.append(dict(message))
            continue
        if content[:at].strip():
            kept.append({**message, "content": content[:at]})
        return kept or None
    return None


@dataclass
class Warmup:
    """One warm-up: what it read, and how it ended."""

    key: str
    started: float
    seconds: float | None = None
    prompt_tokens: int | None = None
    error: str | None = None
    skipped: bool = False  # nothing to read (no prefix), or superseded before it started

    @property
    def done(self) -> bool:
        return self.seconds is not None or self.error is not None or self.skipped


def warm(llm, messages: list[dict], cancel: threading.Event | None = None) -> tuple[float, int]:
    """Send ``messages`` with one token to write and no response cache, so the server reads
    them; the seconds and the prompt tokens it reports."""
    t0 = time.perf_counter()
    reply = llm.chat(messages, max_tokens=1, temperature=0.0, cancel=cancel, cache=False)
    return time.perf_counter() - t0, reply.prompt_tokens


class Warmups:
    """The warm-ups of a process: one per key (database, pipeline and its parameters), one at a
    time. A newer request supersedes one still waiting to start, so opening several databases
    in a row reads only the last one's prefix."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, Warmup] = {}
        self._waiting: tuple[str, threading.Event] | None = None
        self._turn = threading.Lock()

    def get(self, key: str) -> Warmup | None:
        with self._lock:
            return self._by_key.get(key)

    def start(self, key: str, make_llm, prefix) -> Warmup:
        """Warm ``key`` in a background thread unless it is warm or warming. ``make_llm()``
        gives the client (called in that thread: starting the embedded model takes seconds)
        and ``prefix(llm)`` the messages to read (None: nothing to read)."""
        with self._lock:
            held = self._by_key.get(key)
            if held is not None and not (held.skipped or held.error):
                return held
            if self._waiting is not None:
                self._waiting[1].set()  # the older request has not started: drop it
            cancel = threading.Event()
            self._waiting = (key, cancel)
            item = self._by_key[key] = Warmup(key=key, started=time.time())
        threading.Thread(target=self._work, args=(item, make_llm, prefix, cancel), daemon=True,
                         name="warmup").start()
        return item

    def _work(self, item: Warmup, make_llm, prefix, cancel: threading.Event) -> None:
        with self._turn:
            with self._lock:
                if self._waiting is not None and self._waiting[1] is cancel:
                    self._waiting = None
            if cancel.is_set():
                item.skipped = True
                return
            try:
                llm = make_llm()
                messages = prefix(llm)
                if not messages:
                    item.skipped = True
                    return
                item.seconds, item.prompt_tokens = warm(llm, messages)
            except Exception as exc:  # a warm-up that fails only loses its own time
                item.error = str(exc) or exc.__class__.__name__
