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
                       "ask_expand_steps",
                       "cmp_question", "cmp_evidence", "cmp_pipelines", "hist_")


def _keep_widget_values() -> None:
    for key in list(st.session_state.keys()):
        if isinstance(key, str) and key.startswith(PERSISTENT_PREFIXES):
            st.session_state[key] = st.session_state[key]


def _pages() -> list:
    """The pages in menu order (each page script starts with ``run_through_app()``, see
    ``ui/bootstrap.py``)."""
    pages = [
        st.Page("pages/ask.py", title="Ask", url_path="ask", default=True),
        st.Page("pages/schema.py", title="Schema", url_path="schema"),
        st.Page("pages/history.py", title="History & annotation", url_path="history"),
        st.Page("pages/compare.py", title="Compare", url_path="compare"),
        st.Page("pages/knowledge.py", title="Knowledge", url_path="knowledge"),
    ]
    who = signin.viewer()
    if (ROOT / "pages" / "benchmark.py").is_file() and (not who.team or who.is_admin):
        # evaluations take the server's model for minutes: in team mode an admin's call
        pages.append(st.Page("pages/benchmark.py", title="Benchmark", url_path="benchmark"))
    pages.append(st.Page("pages/settings.py", title="Settings", url_path="settings"))
    return pages


st.set_page_config(page_title="Text-to-SQL Agent Studio", layout="wide")
from ui import signin  # noqa: E402

def _sign_in_page() -> None:
    st.navigation([st.Page(signin.page, title="Sign in", url_path="signin")],
                  position="hidden").run()
    st.stop()


if not signin.ready():  # team mode: nothing but the sign-in page until the session signs in
    _sign_in_page()
_keep_widget_values()
navigation = st.navigation(_pages())
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
