"""The Ask page reads the open database's prompt prefix while the question is being typed.

For the embedded model only (:mod:`agents.core.warmup` says why): the first question on a newly
opened database then waits for its own words to be read, not for the pipeline's static text and
the whole schema. The warm-ups of the process are kept in one registry (``st.cache_resource``),
so every session on a database shares its warm prefix and a page redraw never reads it twice.
``STUDIO_WARMUP=0`` turns it off.
"""

from __future__ import annotations

import dataclasses
import json
import os
import threading

import streamlit as st

from agents.core.config import Settings, SettingsError
from agents.core.warmup import Warmup, Warmups, first_prompt_prefix
from ui import services as ui_services
from ui import state as ui_state


@st.cache_resource(show_spinner=False)
def _registry() -> Warmups:
    return Warmups()


_clients: dict[str, object] = {}
_clients_lock = threading.Lock()


def _embedded(settings: Settings) -> bool:
    off = os.environ.get("STUDIO_WARMUP", "1").strip().lower() in ("0", "false", "no", "off")
    return settings.provider == "local" and not off


def _client_for(settings: Settings):
    """One client per settings, kept for the process, without a response cache (a warm-up's
    answer is never used); it talks to the process's one embedded server for the variant."""
    from agents.llm.client import make_client

    key = json.dumps(dataclasses.asdict(settings), sort_keys=True, default=str)
    with _clients_lock:
        if key not in _clients:
            _clients[key] = make_client(dataclasses.replace(settings, cache=False))
        return _clients[key]


def _busy(llm) -> bool:
    queue = getattr(llm, "queue", None)
    return queue is not None and queue.length > 0


def key_for(pipeline, db_key: str, db, resolved: dict, settings: Settings) -> str:
    """What a warm-up is for: the database (this opened copy of it), the pipeline with its
    parameters, and the model."""
    values = dataclasses.asdict(settings)
    values["api_key"] = None
    return json.dumps([db_key, id(db), pipeline.name, resolved, values], sort_keys=True,
                      default=str)


def _settings() -> Settings | None:
    try:
        settings = ui_state.effective_settings()
    except SettingsError:
        return None
    return settings if _embedded(settings) else None


def prepare(pipeline, db_key: str | None, db, params: dict) -> Warmup | None:
    """Start reading ``pipeline``'s first prompt on ``db`` (unless read or being read); what
    is known of it, or None when there is nothing to warm."""
    settings = _settings()
    if db is None or db_key is None or settings is None:
        return None
    try:
        resolved = pipeline.resolve_params(params)
    except (KeyError, TypeError, ValueError):
        return None
    key = key_for(pipeline, db_key, db, resolved, settings)
    held = _registry().current(key)
    if held is not None:
        return held
    services = ui_services.example_services(db)  # resolved here: the thread has no script context
    return _registry().start(
        key, lambda: _client_for(settings),
        lambda llm: first_prompt_prefix(pipeline, db, llm, params=resolved, services=services),
        busy=_busy)


def before_run(pipeline, db_key: str | None, db, params: dict | None) -> None:
    """A run is about to start: stop every warm-up but the one reading what it needs."""
    settings = _settings()
    if settings is None:
        return
    keep = None
    if params is not None and db_key is not None:
        try:
            keep = key_for(pipeline, db_key, db, pipeline.resolve_params(params), settings)
        except (KeyError, TypeError, ValueError):
            keep = None
    _registry().stop_all(keep=keep)


def caption(item: Warmup | None) -> str | None:
    """One line on the warm-up for under the Run button, or None when there is nothing to say."""
    if item is None or item.empty or item.error or item.stopped:
        return None
    if item.seconds is None:
        return "Reading the schema ahead of your question, so the first answer comes sooner…"
    tokens = f"{item.prompt_tokens:,} tokens" if item.prompt_tokens else "the schema"
    return f"Schema read ahead of the question ({tokens} in {item.seconds:.0f} s)."


READ_AHEAD_REDRAW_S = 2.0


def show(item: Warmup | None) -> None:
    """The caption under the Run button. While the prefix is read it is redrawn alone every
    few seconds (a fragment): the page itself does not rerun while a question is typed."""
    if item is None or caption(item) is None:
        return

    def pane() -> None:
        text = caption(item)
        if text is not None:
            st.caption(text)

    st.fragment(pane, run_every=READ_AHEAD_REDRAW_S if item.reading else None)()
