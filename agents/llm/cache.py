"""On-disk cache of model answers, so re-running a question (or a whole evaluation) is instant.

Entries are keyed by the sha256 of the canonical JSON of everything that determines an answer:
the model, the messages, the sampling parameters, the requested JSON schema, stop sequences and
the endpoint. The store is one SQLite file in WAL mode, safe to share between threads and
processes. The cache is an optimisation only: a damaged file is moved aside and recreated, and
any other storage failure turns the cache off with a warning, never failing a model call.
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from agents.core.paths import cache_dir
from agents.llm.reply import LLMReply

log = logging.getLogger(__name__)

KEY_VERSION = 1  # bump when the key's ingredients change, so old entries stop matching

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    model TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    seconds REAL NOT NULL,
    created REAL NOT NULL
)"""


def default_cache_path() -> Path:
    return cache_dir() / "llm_cache.sqlite"


def cache_key(*, model: str, messages: list[dict], temperature: float, max_tokens: int,
              json_schema: dict | None, stop: list[str] | str | None, endpoint: str,
              sample: int = 0) -> str:
    """sha256 of the canonical JSON of a request's answer-determining parts.

    ``endpoint`` is the base URL, or for the embedded model its provider and variant (its port
    changes with every start). ``sample`` tells apart repeated identical requests at a
    temperature above zero, which ask for fresh samples rather than the same answer.
    """
    payload = {"v": KEY_VERSION, "model": model, "messages": messages,
               "temperature": temperature, "max_tokens": max_tokens, "json_schema": json_schema,
               "stop": stop, "endpoint": endpoint, "sample": sample}
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                           default=str)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class ResponseCache:
    """A thread-safe key -> :class:`~agents.llm.reply.LLMReply` store in one SQLite file."""

    def __init__(self, path: str | Path | None = None):
        self.path = Path(path) if path else default_cache_path()
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None
        self.disabled_reason: str | None = None
        with self._lock:
            self._open()

    # -- public -------------------------------------------------------------------------------
    def get(self, key: str) -> "LLMReply | None":
        row = self._run(lambda c: c.execute(
            "SELECT text, model, prompt_tokens, completion_tokens FROM responses WHERE key = ?",
            (key,)).fetchone())
        if not row:
            return None
        return LLMReply(text=row[0], model=row[1], prompt_tokens=row[2],
                        completion_tokens=row[3], seconds=0.0, cached=True)

    def put(self, key: str, reply: "LLMReply") -> None:
        def write(c: sqlite3.Connection) -> None:
            with c:
                c.execute("INSERT OR REPLACE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
                          (key, reply.text, reply.model, reply.prompt_tokens,
                           reply.completion_tokens, reply.seconds, time.time()))
        self._run(write)

    def __len__(self) -> int:
        row = self._run(lambda c: c.execute("SELECT count(*) FROM responses").fetchone())
        return int(row[0]) if row else 0

    def clear(self) -> None:
        def wipe(c: sqlite3.Connection) -> None:
            with c:
                c.execute("DELETE FROM responses")
        self._run(wipe)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # -- internals ----------------------------------------------------------------------------
    def _run(self, action) -> Any:
        """Run ``action(conn)``; recover once from a damaged file, else disable the cache."""
        with self._lock:
            for attempt in range(2):
                if self._conn is None:
                    return None
                try:
                    return action(self._conn)
                except sqlite3.DatabaseError as exc:
                    if attempt == 0 and _looks_corrupt(exc):
                        self._recreate(exc)
                        continue
                    self._disable(f"{exc.__class__.__name__}: {exc}")
                    return None
            return None

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = self._connect()
        except sqlite3.DatabaseError as exc:
            if _looks_corrupt(exc):
                self._recreate(exc)
            else:
                self._disable(f"{exc.__class__.__name__}: {exc}")
        except OSError as exc:
            self._disable(f"cannot create {self.path.parent}: {exc.strerror or exc}")

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=10.0, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)
            conn.execute("SELECT count(*) FROM responses").fetchone()
        except sqlite3.DatabaseError:
            conn.close()
            raise
        return conn

    def _recreate(self, exc: Exception) -> None:
        """Move the damaged file (and its WAL companions) aside and start an empty cache."""
        self._drop_connection()
        aside = self.path.with_name(f"{self.path.name}.corrupt-{int(time.time())}")
        log.warning("LLM cache %s is damaged (%s); moved it to %s and started a new one",
                    self.path, exc, aside)
        try:
            if self.path.exists():
                self.path.replace(aside)
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self._conn = self._connect()
        except (OSError, sqlite3.Error) as again:
            self._disable(f"could not recreate it: {again}")

    def _disable(self, reason: str) -> None:
        if self.disabled_reason is None:
            log.warning("LLM cache %s turned off: %s", self.path, reason)
        self.disabled_reason = reason
        self._drop_connection()

    def _drop_connection(self) -> None:
        """Close the connection, ignoring errors: it is being given up because it failed."""
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = None


def _looks_corrupt(exc: Exception) -> bool:
    text = str(exc).lower()
    return any(s in text for s in ("not a database", "malformed", "corrupt", "disk image"))
