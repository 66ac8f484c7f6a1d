"""The user's saved settings: read once per session, before any page draws, and saved on
Settings.

A browser reload starts a new session, whose ``st.session_state`` is empty; the settings a user
made on the Settings page are therefore kept in the studio's store
(:mod:`agents.store.preferences`), per signed-in user in team mode and for the one local user
otherwise, and set as the new session's starting values by :func:`apply_saved`, which
``app.py`` calls before the navigation runs a page. API keys are never among them: the store
refuses to write a secret, and the Settings page never hands it one.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from agents.store.preferences import PIPELINE, preference_user

from ui import services as ui_services
from ui import signin
from ui import state as ui_state

SAVED = "user_preferences"  # this session's copy of what the store keeps for its user
LOADED_FOR = "_preferences_loaded_for"  # the user whose preferences this session started from
PROBLEM = "_preferences_problem"  # why they could not be read, shown on the Settings page

ASK_PIPELINE = "ask_pipeline"
ASK_SUMMARY = "ask_summary"
DEFAULT_PIPELINE = "selection"  # the most accurate pipeline, with a draft answer in seconds
DEFAULT_SUMMARY = True  # an analyst reads the answer in words before the table


def saved() -> dict[str, Any]:
    """What the store keeps for this session's user, as last read or saved."""
    return dict(st.session_state.get(SAVED) or {})


def problem() -> str | None:
    """Why the saved settings could not be read, when they could not."""
    return st.session_state.get(PROBLEM)


def apply_saved() -> None:
    """Once per session and user: make the saved settings this session's starting values
    (values the session already holds are kept). Never raises: a store that cannot be read
    leaves the studio's defaults, and the Settings page says why."""
    user = preference_user(signin.viewer())
    if not user or st.session_state.get(LOADED_FOR) == user:
        return
    st.session_state[LOADED_FOR] = user
    try:
        values = ui_services.store().preferences()
    except Exception as exc:  # a damaged or locked store: pages report it where they need it
        values = {}
        st.session_state[PROBLEM] = f"Your saved settings could not be read: {exc}"
    else:
        st.session_state.pop(PROBLEM, None)
    st.session_state[SAVED] = values
    _start_from(values)


def _start_from(values: dict[str, Any]) -> None:
    """The model choice, query limits and pipeline defaults the session starts with; each
    value is checked as the Settings page checks it, and one that no longer fits is left out."""
    llm = values.get("llm")
    if isinstance(llm, dict) and ui_state.LLM_OVERRIDES not in st.session_state:
        ui_state.set_llm_overrides(llm)
    limits = values.get("exec_limits")
    if isinstance(limits, dict) and ui_state.EXEC_LIMITS not in st.session_state:
        try:
            ui_state.set_exec_limits(float(limits["timeout"]), int(limits["max_rows"]))
        except (KeyError, TypeError, ValueError):
            pass
    if ui_state.PIPELINE_DEFAULTS not in st.session_state:
        for key, params in values.items():
            if key.startswith(PIPELINE) and isinstance(params, dict):
                _restore_pipeline_defaults(key[len(PIPELINE):], params)


def _restore_pipeline_defaults(name: str, params: dict[str, Any]) -> None:
    from agents.pipelines import get_pipeline

    try:
        pipeline = get_pipeline(name)
        known = {p.name for p in pipeline.params}
        ui_state.set_pipeline_defaults(pipeline, {k: v for k, v in params.items() if k in known})
    except (KeyError, TypeError, ValueError):
        pass  # a pipeline no longer installed, or a value its rules refuse now


def save(values: dict[str, Any]) -> str | None:
    """Save ``values`` for this session's user; None when saved, else the one message the page
    shows (the values still apply to this session)."""
    try:
        kept = ui_services.store().save_preferences(values)
    except Exception as exc:  # read-only folder, full disk, locked file, signed out
        return f"Applied for this session, but not saved: {exc}"
    current = saved()
    current.update(kept)
    st.session_state[SAVED] = {k: v for k, v in current.items() if v is not None}
    return None


def default_pipeline(names: list[str]) -> str:
    """The pipeline the Ask page starts with: the user's saved choice, else the studio's."""
    chosen = saved().get(ASK_PIPELINE)
    if chosen in names:
        return chosen
    return DEFAULT_PIPELINE if DEFAULT_PIPELINE in names else names[0]


def summary_default() -> bool:
    """Whether the Ask page's "Summarize the result in words" starts switched on."""
    value = saved().get(ASK_SUMMARY)
    return value if isinstance(value, bool) else DEFAULT_SUMMARY


def save_pipeline_defaults(name: str, values: dict[str, Any]) -> str | None:
    """Save a pipeline's parameter defaults (as :func:`save` does)."""
    return save({PIPELINE + name: values})
