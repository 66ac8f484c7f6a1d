"""Text-to-SQL Agent Studio: the Streamlit entry point.

    streamlit run app.py

It only sets up the page and the navigation; each page is a script in ``pages/`` and the shared
UI code lives in the ``ui`` package. The engine in ``agents/`` never imports streamlit.
"""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import streamlit as st

ROOT = Path(__file__).resolve().parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from agents.store import StoreError  # noqa: E402  (after the path is set)

# Widget values Streamlit would forget when another page is shown; re-assigning them on every run
# turns them into plain session values, so a question typed on Ask survives a visit to Schema.
PERSISTENT_PREFIXES = ("ask_question", "ask_evidence", "ask_pipeline", "ask_param_",
                       "ask_expand_steps", "ask_summary",
                       "cmp_question", "cmp_evidence", "cmp_pipelines", "hist_")


def _keep_widget_values() -> None:
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and key.startswith(PERSISTENT_PREFIXES):
            st.session_state[key] = st.session_state[key]


def _pages(first: str = "") -> list:
    """The pages in menu order (each page script starts with ``run_through_app()``, see
    ``ui/bootstrap.py``). ``first`` names the page shown when the address names none of them:
    the one a signed-out visitor's address named, so signing in lands there; else Ask. (A
    switch to it would cut short the run that stores the sign-in cookie.)"""
    names = [("ask", "Ask"), ("schema", "Schema"), ("history", "History & annotation"),
             ("compare", "Compare"), ("knowledge", "Knowledge")]
    who = signin.viewer()
    if (ROOT / "pages" / "benchmark.py").is_file() and (not who.team or who.is_admin):
        # evaluations take the server's model for minutes: in team mode an admin's call
        names.append(("benchmark", "Benchmark"))
    names.append(("settings", "Settings"))
    if first not in dict(names):
        first = "ask"
    return [st.Page(f"pages/{name}.py", title=title, url_path=name, default=name == first)
            for name, title in names]


st.set_page_config(page_title="Text-to-SQL Agent Studio", layout="wide")
from ui import signin  # noqa: E402

_WANTED_PAGE = "_studio_wanted_page"


def _requested_page() -> str:
    """The page the browser's address names ("history"). Streamlit keeps it as the run's
    intended page; ``st.context.url`` is no help, it drops any known page's path."""
    try:
        from streamlit.runtime.scriptrunner import get_script_run_ctx

        return str(get_script_run_ctx().pages_manager.intended_page_name or "")
    except Exception:  # an internal of Streamlit's; without it, signing in lands on Ask
        return ""


def _sign_in_page() -> None:
    st.navigation([st.Page(signin.page, title="Sign in", url_path="signin")],
                  position="hidden").run()
    st.stop()


if signin.team_mode() and not signin.signed_in() and _requested_page():
    # the page the address named, shown once signed in (a link or a reload keeps its page);
    # read now: a run the sign-in cookie's reading restarts no longer knows it
    st.session_state[_WANTED_PAGE] = _requested_page()
if not signin.ready():  # team mode: nothing but the sign-in page until the session signs in
    _sign_in_page()
from ui import preferences as ui_preferences  # noqa: E402

ui_preferences.apply_saved()  # before any page draws: a reload shows the user's settings again
_keep_widget_values()
navigation = st.navigation(_pages(st.session_state.pop(_WANTED_PAGE, "")))
with st.sidebar:
    signin.sidebar()
    st.caption("Text-to-SQL Agent Studio — LLM agents turn questions about a SQLite database "
               "into SQL, step by step.")
    from ui import state as ui_state

    try:
        settings = ui_state.effective_settings()
        st.caption(f"Model: {settings.describe()}")
    except Exception as exc:  # shown in full on the Settings page
        settings = None
        st.caption(f"Model settings invalid: {exc}")
from ui import services as ui_services  # noqa: E402

if settings is not None and settings.provider == "local":
    # Start the embedded model with the app (once per server process, behind a spinner), so
    # the first question does not wait for it. A failure is reported where a run needs it.
    try:
        ui_services.llm_client(settings)
    except Exception:
        pass
try:
    notice = ui_services.store_notice()
except (StoreError, sqlite3.DatabaseError):
    notice = None  # the page that needs the store says why below
if notice:
    st.warning(notice)
try:
    navigation.run()
except (StoreError, sqlite3.DatabaseError) as exc:  # the studio's own store, damaged or locked
    st.error(str(exc) if isinstance(exc, StoreError) else
             f"The studio's store of runs and notes cannot be used: {exc}")
