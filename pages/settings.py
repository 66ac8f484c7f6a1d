"""Settings: the Ask page's defaults, the model connection, safe-execution limits and
per-pipeline defaults.

What is set here applies at once and is saved for the user (:mod:`ui.preferences`), so a reload
or another visit shows it again. An API key typed here is the exception: it lives in
``st.session_state`` and nowhere else.
"""

from __future__ import annotations

import streamlit as st

from agents.core.config import SettingsError, mask_secret
from agents.db.exec_result import MAX_CELL_BYTES, MAX_RESULT_BYTES
from agents.pipelines import list_pipelines

from ui.widgets import params as ui_params
from ui import preferences as ui_preferences
from ui import services as ui_services
from ui import signin
from ui import state as ui_state
from ui.bootstrap import run_through_app
from ui.format import md_text, pipeline_label

PROVIDER_LABELS = {"local": "Embedded model (runs on this machine, offline)",
                   "openai": "OpenAI-compatible endpoint"}
NOTICE = "settings_notice"


def _current():
    try:
        return ui_state.effective_settings(), None
    except SettingsError as exc:
        return None, str(exc)


def _report(not_saved: str | None, saved: str) -> None:
    """One message: ``saved`` when the store took the change, else why it could not."""
    if not_saved:
        st.warning(md_text(not_saved))
    else:
        st.success(saved)


def _ask_section() -> None:
    st.subheader("Ask page")
    pipelines = list_pipelines()
    names = [p.name for p in pipelines]
    if not names:
        return
    st.session_state.setdefault("set_ask_pipeline", ui_preferences.default_pipeline(names))
    st.session_state.setdefault("set_ask_summary", ui_preferences.summary_default())
    with st.form("ask_defaults_form"):
        name = st.selectbox("Pipeline to start with", names, key="set_ask_pipeline",
                            format_func=pipeline_label,
                            help="The pipeline the Ask page offers first.")
        summary = st.toggle("Summarize the result in words", key="set_ask_summary",
                            help="Whether the Ask page starts with the answer in words on.")
        saved = st.form_submit_button("Save Ask defaults")
    if saved:
        _save_ask_defaults(name, summary)


def _save_ask_defaults(name: str, summary: bool) -> None:
    """Save the Ask page's defaults and show them there at once (its picker and summary box
    keep their values between pages, so they are set here too)."""
    st.session_state[ui_preferences.ASK_PIPELINE] = name
    st.session_state[ui_preferences.ASK_SUMMARY] = bool(summary)
    words = "with" if summary else "without"
    _report(ui_preferences.save({ui_preferences.ASK_PIPELINE: name,
                                 ui_preferences.ASK_SUMMARY: bool(summary)}),
            f"Saved: Ask starts with {pipeline_label(name)}, {words} the result in words.")


def _saved_for_whom() -> str:
    who = signin.display_name()
    return f"for {md_text(who)}" if who else "on this computer"


def _model_section() -> None:
    st.subheader("Model")
    settings, problem = _current()
    if problem:
        st.error(f"The model settings are invalid: {problem}")
    overrides = ui_state.llm_overrides()
    defaults = {
        "set_provider": overrides.get("provider") or (settings.provider if settings else "local"),
        "set_base_url": overrides.get("base_url") or (settings.base_url if settings else "") or "",
        "set_model": overrides.get("model") or (settings.model if settings else ""),
        "set_temperature": float(overrides.get("temperature", settings.temperature
                                               if settings else 0.0)),
    }
    for key, value in defaults.items():
        st.session_state.setdefault(key, value)
    typed = ui_state.session_endpoints_allowed()
    providers = list(PROVIDER_LABELS) if typed else ui_state.configured_providers()
    if st.session_state.get("set_provider") not in providers:
        st.session_state["set_provider"] = providers[0]
    with st.form("llm_form"):
        provider = st.radio("Provider", providers, format_func=PROVIDER_LABELS.get,
                            key="set_provider", horizontal=True)
        base_url, api_key = "", ""
        if typed:
            base_url = st.text_input("Base URL (OpenAI-compatible endpoint)",
                                     key="set_base_url",
                                     placeholder="e.g. http://127.0.0.1:8080/v1")
        model = st.text_input("Model", key="set_model",
                              placeholder="empty: the endpoint's served model")
        if typed:
            configured = mask_secret(settings.api_key) if settings else None
            api_key = st.text_input("API key", type="password", key="set_api_key",
                                    placeholder=f"configured ({configured})" if configured
                                    else "none configured",
                                    help="Kept in this browser session's memory only; never "
                                         "saved, so type it again after a reload. Left empty: "
                                         "the configured key, for the configured endpoint only.")
        else:
            st.caption("Endpoints and keys are set by the operator of this server "
                       "(STUDIO_SESSION_ENDPOINTS allows typing one).")
        temperature = st.slider("Temperature", 0.0, 2.0, step=0.05, key="set_temperature")
        applied = st.form_submit_button("Save model settings", type="primary")
    if applied:
        _apply(provider, base_url, model, api_key, temperature)
    notice = st.session_state.pop(NOTICE, None)
    if notice:
        getattr(st, notice[0])(notice[1])
    settings, problem = _current()
    if settings is not None:
        st.caption(f"In use: {settings.describe()} · temperature {settings.temperature} · "
                   f"API key {mask_secret(settings.api_key) or 'none'}")
    if st.button("Test connection", key="set_test"):
        _test_connection()


def _apply(provider: str, base_url: str, model: str, api_key: str, temperature: float) -> None:
    values = {"provider": provider, "base_url": base_url.strip() or None,
              "model": model.strip() or None, "temperature": float(temperature)}
    if api_key.strip():
        values["api_key"] = api_key.strip()
    elif ui_state.llm_overrides().get("api_key"):
        values["api_key"] = ui_state.llm_overrides()["api_key"]
    previous = ui_state.llm_overrides()
    ui_state.set_llm_overrides(values)
    try:
        settings = ui_state.effective_settings()
        if settings.provider == "openai" and not settings.base_url and not settings.api_key:
            raise SettingsError("an OpenAI-compatible endpoint needs a base URL or an API key")
    except SettingsError as exc:
        ui_state.set_llm_overrides(previous)
        st.session_state[NOTICE] = ("error", f"Not saved: {exc}")
        return
    not_saved = ui_preferences.save({"llm": {k: v for k, v in values.items() if k != "api_key"}})
    if not_saved:
        st.session_state[NOTICE] = ("warning", md_text(not_saved))
    else:
        key_note = (" The API key is not saved: it is kept for this browser session only."
                    if "api_key" in values else "")
        st.session_state[NOTICE] = ("success", f"Saved: {settings.describe()}.{key_note}")
    st.rerun()


def _test_connection() -> None:
    from agents.llm.client import LLMError

    settings, problem = _current()
    if settings is None:
        st.error(f"Fix the settings first: {problem}")
        return
    try:
        client = ui_services.llm_client(settings)
        with st.spinner("Contacting the model…"):
            result = client.ping()
    except LLMError as exc:
        st.error(f"Connection failed: {exc}")
        return
    except Exception as exc:
        st.error(f"Connection failed: {exc.__class__.__name__}: {exc}")
        return
    if result.get("ok"):
        st.success(f"Connected: model {result.get('model') or '(unnamed)'} answered in "
                   f"{result.get('latency_s', 0):.2f} s.")
    else:
        st.error(f"Connection failed: {result.get('error')}")


def _limits_section() -> None:
    st.subheader("Safe execution")
    limits = ui_state.exec_limits()
    seconds, rows = ui_state.timeout_range(), ui_state.rows_range()
    # The bounds are checked here, not by the inputs: an input with bounds keeps a value out of
    # range to itself (a red outline) and the form applies the old one without a word.
    with st.form("limits_form"):
        left, right = st.columns(2)
        timeout = left.number_input(f"Query time limit (seconds, {seconds[0]:g} to "
                                    f"{seconds[1]:g})", value=float(limits.timeout),
                                    step=0.5)
        max_rows = right.number_input(f"Row cap per query ({rows[0]:,} to "
                                      f"{rows[1]:,})", value=int(limits.max_rows),
                                      step=100)
        saved = st.form_submit_button("Save limits")
    if saved:
        wrong = []
        if not seconds[0] <= timeout <= seconds[1]:
            wrong.append(f"the time limit must be {seconds[0]:g} to "
                         f"{seconds[1]:g} seconds, not {timeout:g}")
        if not rows[0] <= max_rows <= rows[1]:
            wrong.append(f"the row cap must be {rows[0]:,} to {rows[1]:,} rows, "
                         f"not {int(max_rows):,}")
        if wrong:
            st.error(f"Limits not changed: {'; '.join(wrong)}. Queries still stop after "
                     f"{limits.timeout:g} s and return at most {limits.max_rows:,} rows.")
        else:
            ui_state.set_exec_limits(timeout, int(max_rows))
            _report(ui_preferences.save({"exec_limits": {"timeout": float(timeout),
                                                         "max_rows": int(max_rows)}}),
                    f"Saved: queries now stop after {timeout:g} s and return at most "
                    f"{int(max_rows):,} rows.")
    st.caption("Every query runs read-only: statements that would change a database are refused. "
               f"A result also stops at {MAX_RESULT_BYTES // (1024 * 1024)} MiB and cuts any "
               f"single value to {MAX_CELL_BYTES // 1024} KiB. Uploads are limited to "
               f"{ui_state.upload_limit_mb()} MB by the server (server.maxUploadSize).")


def _pipeline_section() -> None:
    st.subheader("Pipeline defaults")
    st.caption("Parameter values new runs start with on the Ask and Compare pages.")
    for pipeline in list_pipelines():
        if not pipeline.params:
            continue
        label = pipeline_label(pipeline)
        with st.expander(label):
            with st.form(f"defaults_{pipeline.name}"):
                values = ui_params.param_widgets(pipeline, ui_state.pipeline_defaults(pipeline),
                                                 "set_param")
                saved = st.form_submit_button(f"Save defaults for {label}")
            if saved:
                _save_pipeline_defaults(pipeline, values)


def _save_pipeline_defaults(pipeline, values: dict) -> None:
    try:
        ui_state.set_pipeline_defaults(pipeline, values)
    except ValueError as exc:
        st.error(f"Not saved: {md_text(exc)}")
        return
    for key in [k for k in st.session_state
                if str(k).startswith(f"ask_param_{pipeline.name}_")]:
        del st.session_state[key]  # the Ask page picks the new defaults up
    _report(ui_preferences.save_pipeline_defaults(pipeline.name, _changed(pipeline)),
            f"Saved: new runs of {pipeline_label(pipeline)} start with these values.")


def _changed(pipeline) -> dict | None:
    """The parameters this session set away from the pipeline's own defaults: only those are
    saved, so a default the studio improves later reaches the user (None: all at default)."""
    own = pipeline.resolve_params({})
    chosen = ui_state.pipeline_defaults(pipeline)
    return {k: v for k, v in chosen.items() if own.get(k) != v} or None


run_through_app()
st.title("Settings")
st.caption(f"Settings are saved {_saved_for_whom()} and come back after a reload. API keys are "
           "never saved: they stay in this browser session only.")
if ui_preferences.problem():
    st.warning(md_text(ui_preferences.problem()))
_ask_section()
st.divider()
_model_section()
st.divider()
_limits_section()
st.divider()
_pipeline_section()
