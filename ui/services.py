"""Process-wide resources the pages share: the run store and the model client.

Both are created once per server process with ``st.cache_resource``. The embedded model's server
is started on first use behind a visible spinner; a client for an OpenAI-compatible endpoint is
cheap and made per use, so an API key typed by one session is never cached where another session
could reach it.

All browser sessions share the one embedded server of this process (sessions with different
settings get different clients, but ``agents.llm.local_model`` keeps one server per model variant),
and every client of a server on this machine takes turns in that server's one queue
(``agents.llm.queue``): two sessions asking at once are served one after the other, and the
second one's running step says how many runs are ahead of it.
"""

from __future__ import annotations

import dataclasses
import json

import streamlit as st

from agents.core.config import Settings
from agents.store import Store, StoreView, default_path
from agents.store.recovery import open_for_app
from ui.signin import viewer

SESSION_CLIENT = "llm_client"


@st.cache_resource(show_spinner=False)
def _store_at(path: str) -> tuple[Store, str | None]:
    return open_for_app(path)


def store_notice() -> str | None:
    """What every page says about the store when it had to be moved aside or opened read-only
    (:func:`agents.store.recovery.open_for_app`)."""
    return _store_at(str(default_path()))[1]


def store() -> StoreView:
    """The shared run store (WAL mode; safe for several sessions and threads) as this
    session's user sees it: in team mode their own items and the team's shared ones, and
    changes only to what is theirs (:mod:`agents.store.access`)."""
    return StoreView(_store_at(str(default_path()))[0], viewer())


@st.cache_resource(show_spinner="Starting the embedded model…")
def _embedded_client(settings_json: str):
    from agents.llm.client import make_client

    return make_client(Settings(**json.loads(settings_json)))


def llm_client(settings: Settings):
    """A model client for ``settings``; raises ``LLMError`` with a clear message on failure.

    A client for a remote endpoint is kept in this session's state (with its key) and reused
    while the settings stay the same.
    """
    from agents.llm.client import make_client

    values = dataclasses.asdict(settings)
    if settings.provider == "local":
        values["api_key"] = None  # the embedded server needs none; keep keys out of cache keys
        return _embedded_client(json.dumps(values, sort_keys=True))
    fingerprint = json.dumps(values, sort_keys=True)
    held = st.session_state.get(SESSION_CLIENT)
    if held is not None and held[0] == fingerprint:
        return held[1]
    client = make_client(settings)
    st.session_state[SESSION_CLIENT] = (fingerprint, client)
    return client



@st.cache_resource(show_spinner="Loading the imported example bank…")
def _imported_examples(path: str) -> list:
    from agents.example_bank import load_imported

    return load_imported(path)


def example_services(db) -> dict:
    """``services`` for a run on ``db``: a few-shot example bank made of this database's
    accepted answers plus, when ``STUDIO_EXAMPLES`` names a Spider-format file (e.g. Spider's
    ``train.json``), its examples. Pipelines without few-shot prompts simply ignore it.
    """
    import os

    from agents.example_bank import bank_for

    imported: list = []
    path = os.environ.get("STUDIO_EXAMPLES")
    if path:
        try:
            imported = _imported_examples(path)
        except Exception as exc:  # a bad file must not stop the run
            st.warning(f"The example file {path} could not be loaded: {exc}")
    return {"examples": bank_for(db, store(), imported)}
