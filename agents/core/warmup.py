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

It is worth doing only for a model server on this machine, whose prompt cache it fills (the
embedded server keeps the prompts it read in memory, several GiB of them, not just the last); a
hosted endpoint caches by itself and bills the tokens. The Ask page does it for the embedded
model (:mod:`ui.warmup`). A warm-up never holds up a real run: it starts only when the model is
idle, one at a time, and a run or a newer warm-up stops it; a failed one only loses its time.
Where the schema shown depends on the question (a schema too large for the prompt, cut by
retrieval), there is no prefix to read.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from .engine import start_run
from .events import StepEvent

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

    None when the question comes first in that prompt, when the pipeline asks nothing of the
    model first, or when retrieval cut the schema for the (stand-in) question."""
    recorder = _RecordingClient(llm)
    run = start_run(pipeline, STAND_IN, db, recorder, params=params, services=services,
                    answer_checks=False)
    try:
        for item in run:
            if isinstance(item, StepEvent) and item.kind == "schema_retrieval" and \
                    (item.parsed or {}).get("dropped"):
                return None  # the real question gets other tables: nothing in common
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
    empty: bool = False       # nothing to read: no prefix for this pipeline and database
    stopped: bool = False     # stopped or superseded before it was read; tried again later
    cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def done(self) -> bool:
        return self.seconds is not None or self.error is not None or self.empty or self.stopped

    @property
    def reading(self) -> bool:
        return not self.done


def warm(llm, messages: list[dict], cancel: threading.Event | None = None) -> tuple[float, int]:
    """Send ``messages`` with one token to write and no response cache, so the server reads
    them; the seconds and the prompt tokens it reports."""
    if not messages:
        raise ValueError("nothing to read: no prompt prefix")
    t0 = time.perf_counter()
    reply = llm.chat(messages, max_tokens=1, temperature=0.0, cancel=cancel, cache=False)
    return time.perf_counter() - t0, reply.prompt_tokens


RETRY_AFTER_S = 120.0  # a warm-up that failed is tried again after this long, not at every redraw


class Warmups:
    """The warm-ups of a process: one per key (database, pipeline and its parameters, model),
    one at a time. A newer key stops the one before it, and :meth:`stop_all` (a run starting)
    stops them all: what a run or the newest database needs comes first."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_key: dict[str, Warmup] = {}
        self._turn = threading.Lock()

    def current(self, key: str) -> Warmup | None:
        """``key``'s warm-up while it stands (reading, read, nothing to read, or failed
        recently), or None when :meth:`start` would begin another."""
        with self._lock:
            held = self._by_key.get(key)
            return held if held is not None and self._stands(held) else None

    @staticmethod
    def _stands(held: Warmup) -> bool:
        return held.reading or held.seconds is not None or held.empty or bool(
            held.error and time.time() - held.started < RETRY_AFTER_S)

    def start(self, key: str, make_llm, prefix, *, busy=lambda llm: False) -> Warmup:
        """Warm ``key`` in a background thread unless it is warm, warming, empty or failed
        recently. ``make_llm()`` gives the client (called in that thread: starting the
        embedded model takes seconds), ``prefix(llm)`` the messages to read (None: nothing to
        read), and ``busy(llm)`` says the model is serving others (then it waits for a later
        redraw)."""
        with self._lock:
            held = self._by_key.get(key)
            if held is not None and self._stands(held):
                return held
            for other in self._by_key.values():
                if other.reading:
                    other.cancel.set()
            item = self._by_key[key] = Warmup(key=key, started=time.time())
        threading.Thread(target=self._work, args=(item, make_llm, prefix, busy), daemon=True,
                         name="warmup").start()
        return item

    def stop_all(self, keep: str | None = None) -> None:
        """Stop every warm-up but ``keep``'s (a run about to start on what ``keep`` reads)."""
        with self._lock:
            for item in self._by_key.values():
                if item.reading and item.key != keep:
                    item.cancel.set()

    def _work(self, item: Warmup, make_llm, prefix, busy) -> None:
        with self._turn:
            if item.cancel.is_set():
                item.stopped = True
                return
            try:
                llm = make_llm()
                messages = prefix(llm)
                if not messages:
                    item.empty = True
                elif busy(llm) or item.cancel.is_set():
                    item.stopped = True
                else:
                    item.seconds, item.prompt_tokens = warm(llm, messages, item.cancel)
            except Exception as exc:  # a warm-up that fails only loses its own time
                if item.cancel.is_set():
                    item.stopped = True
                else:
                    item.error = str(exc) or exc.__class__.__name__
