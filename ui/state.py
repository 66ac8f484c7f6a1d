"""Per-browser-session settings, kept in ``st.session_state``.

Two browser sessions never share these values. What the user chose on the Settings page is also
saved for them and set here again when a new session starts (:mod:`ui.preferences`); an API key
typed on the Settings page is not: it lives here and nowhere else. Settings come from
:func:`agents.core.config.load_settings` (config file and environment) with this session's overrides
on top, which is also the seam tests use: environment variables set before the app starts, or
``session_state["llm_overrides"]`` set directly.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

import streamlit as st

from agents.core.config import Settings, load_settings
from agents.core.engine import ExecLimits, Pipeline

from ui import signin

LLM_OVERRIDES = "llm_overrides"
EXEC_LIMITS = "exec_limits"
PIPELINE_DEFAULTS = "pipeline_defaults"

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_MAX_ROWS = 1000

# Settings the app lets a session override; everything else comes from config and environment.
OVERRIDABLE = ("provider", "base_url", "api_key", "model", "temperature")


def llm_overrides() -> dict[str, Any]:
    return dict(st.session_state.get(LLM_OVERRIDES) or {})


def set_llm_overrides(values: dict[str, Any]) -> None:
    """Replace this session's LLM overrides (values of ``None`` mean: use the configured one)."""
    st.session_state[LLM_OVERRIDES] = {k: v for k, v in values.items() if k in OVERRIDABLE}


def session_endpoints_allowed() -> bool:
    """Whether a session may type its own endpoint URL (and key): ``STUDIO_SESSION_ENDPOINTS``
    on/off; by default yes in local mode (one person on localhost) and no in team mode, where
    endpoints are the operator's and the server fetches no URL a visitor types."""
    raw = os.environ.get("STUDIO_SESSION_ENDPOINTS", "").strip().lower()
    if raw in ("1", "on", "true", "yes"):
        return True
    if raw in ("0", "off", "false", "no"):
        return False
    return not signin.team_mode()


def configured_providers() -> list[str]:
    """The providers a session may choose without typing an endpoint: the embedded model, and
    the OpenAI-compatible endpoint when the operator configured one (a base URL or a key)."""
    remote = load_settings(provider="openai")
    return ["local"] + (["openai"] if remote.base_url or remote.api_key else [])


def effective_settings() -> Settings:
    """The configured settings with this session's overrides applied.

    Raises :class:`agents.core.config.SettingsError` with a readable message when a value is invalid.
    """
    overrides = {k: v for k, v in llm_overrides().items() if k in OVERRIDABLE}
    if not session_endpoints_allowed():
        # The session picks among the operator's endpoints; whatever it asked for before (or
        # was set in its state) never names another URL or key.
        overrides.pop("base_url", None)
        overrides.pop("api_key", None)
        if overrides.get("provider") not in configured_providers():
            overrides.pop("provider", None)
    settings = load_settings(**overrides)
    if settings.api_key and not overrides.get("api_key"):
        # The operator's key goes only to the operator's endpoint: a session that points the
        # studio elsewhere sends its own key or none, never the configured one.
        configured = load_settings()
        if (settings.provider, settings.base_url) != (configured.provider, configured.base_url):
            settings = dataclasses.replace(settings, api_key=None)
    return settings


def _server_cap(var: str, default: float, floor: float) -> float:
    """An upper bound the operator sets for every session (``var``); ``default`` without it."""
    try:
        value = float(os.environ.get(var, "") or default)
    except ValueError:
        return default
    return max(value, floor) if math.isfinite(value) else default


def timeout_range() -> tuple[float, float]:
    """Seconds a session may let a query take: the server's cap is ``STUDIO_MAX_QUERY_SECONDS``."""
    return (0.5, _server_cap("STUDIO_MAX_QUERY_SECONDS", 300.0, 0.5))


def rows_range() -> tuple[int, int]:
    """Rows a session may let a query return: the server's cap is ``STUDIO_MAX_QUERY_ROWS``."""
    return (10, int(_server_cap("STUDIO_MAX_QUERY_ROWS", 1_000_000, 10)))


def exec_limits() -> ExecLimits:
    """This session's query limits, never above the server's caps (which may have been lowered
    since the session chose them)."""
    values = st.session_state.get(EXEC_LIMITS) or {}
    return ExecLimits(timeout=min(float(values.get("timeout", DEFAULT_TIMEOUT_S)),
                                  timeout_range()[1]),
                      max_rows=min(int(values.get("max_rows", DEFAULT_MAX_ROWS)),
                                   rows_range()[1]))


def set_exec_limits(timeout: float, max_rows: int) -> None:
    st.session_state[EXEC_LIMITS] = {"timeout": float(timeout), "max_rows": int(max_rows)}


def upload_limit_mb() -> int:
    """The largest upload in MB: the server's ``server.maxUploadSize`` (``.streamlit/config.toml``
    or ``STREAMLIT_SERVER_MAX_UPLOAD_SIZE``). A server setting, so no session can raise it:
    every upload costs the server memory."""
    return int(st.get_option("server.maxUploadSize"))


def pipeline_defaults(pipeline: Pipeline) -> dict[str, Any]:
    """The pipeline's parameter values for new runs: its own defaults, then this session's."""
    values = {p.name: p.default for p in pipeline.params}
    saved = (st.session_state.get(PIPELINE_DEFAULTS) or {}).get(pipeline.name) or {}
    values.update({k: v for k, v in saved.items() if k in values})
    return values


def set_pipeline_defaults(pipeline: Pipeline, values: dict[str, Any]) -> None:
    """Validate ``values`` with the pipeline's own rules and keep them for this session."""
    resolved = pipeline.resolve_params(values)
    store = dict(st.session_state.get(PIPELINE_DEFAULTS) or {})
    store[pipeline.name] = resolved
    st.session_state[PIPELINE_DEFAULTS] = store
