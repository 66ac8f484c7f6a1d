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

import streamlit as st

from agents.core.config import Settings, SettingsError
from agents.core.warmup import Warmup, Warmups, first_prompt_prefix
from ui import state as ui_state


@st.cache_resource(show_spinner=False)
def _registry() -> Warmups:
    return Warmups()


def _embedded(settings: Settings) -> bool:
    off = os.environ.get("STUDIO_WARMUP", "1").strip().lower() in ("0", "false", "no", "off")
    return settings.provider == "local" and not off


def _client_for(settings: Settings):
    from agents.llm.client import make_client

    return make_client(settings)  # the process's one embedded server for the variant


def prepare(pipeline, db_key: str | None, db, params: dict) -> Warmup | None:
    """Start reading ``pipeline``'s first prompt on ``db`` (unless read or being read); what
    is known of it, or None when there is nothing to warm."""
    if db is None or db_key is None:
        return None
    try:
        settings = ui_state.effective_settings()
    except SettingsError:
        return None
    if not _embedded(settings):
        return None
    try:
        resolved = pipeline.resolve_params(params)
    except (KeyError, TypeError, ValueError):
        return None
    values = dataclasses.asdict(settings)
    values["api_key"] = None
    key = json.dumps([db_key, pipeline.name, resolved, values], sort_keys=True, default=str)
    return _registry().start(
        key, lambda: _client_for(settings),
        lambda llm: first_prompt_prefix(pipeline, db, llm, params=resolved))


def caption(item: Warmup | None) -> str | None:
    """One line on the warm-up for under the Run button, or None when there is nothing to say."""
    if item is None or item.skipped or item.error:
        return None
    if item.seconds is None:
        return "Reading the schema ahead of your question, so the first answer comes sooner…"
    tokens = f"{item.prompt_tokens:,} tokens" if item.prompt_tokens else "the schema"
    return f"Schema read ahead of the question ({tokens} in {item.seconds:.0f} s)."
