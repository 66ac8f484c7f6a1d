"""Per-browser-session settings, kept only in ``st.session_state``.

Two browser sessions never share these values, and none of them is ever written to disk: an API
key typed on the Settings page lives here and nowhere else. Settings come from
:func:`agents.config.load_settings` (config file and environment) with this session's overrides
on top, which is also the seam tests use: environment variables set before the app starts, or
``session_state["llm_overrides"]`` set directly.
"""

from __future__ import annotations

from typing import Any

import streamlit as st

from agents.config import Settings, load_settings
from agents.engine import ExecLimits, Pipeline

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


def effective_settings() -> Settings:
    """The configured settings with this session's overrides applied.

    Raises :class:`agents.config.SettingsError` with a readable message when a value is invalid.
    """
    return load_settings(**{k: v for k, v in llm_overrides().items() if k in OVERRIDABLE})


def exec_limits() -> ExecLimits:
    values = st.session_state.get(EXEC_LIMITS) or {}
    return ExecLimits(timeout=float(values.get("timeout", DEFAULT_TIMEOUT_S)),
                      max_rows=int(values.get("max_rows", DEFAULT_MAX_ROWS)))


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
