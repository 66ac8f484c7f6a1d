"""Who is reviewing: the name stored with accepted answers and annotations.

The studio has no accounts, so the name is what the person types (kept for the browser session),
defaulting to ``STUDIO_USER`` or the login name of the machine running the studio.
"""

from __future__ import annotations

import getpass
import os

import streamlit as st

KEY = "reviewer_name"


def default_name() -> str:
    try:
        return os.environ.get("STUDIO_USER") or getpass.getuser()
    except Exception:  # no login name (e.g. a container user without a passwd entry)
        return ""


def reviewer_name() -> str | None:
    """The session's reviewer name, or None when it is blank."""
    name = st.session_state.get(KEY)
    name = default_name() if name is None else name
    return " ".join(str(name).split())[:80] or None


def name_input() -> None:
    """The "Your name" box (inside a form or not); its value lasts for the session."""
    st.session_state.setdefault(KEY, default_name())
    st.text_input("Your name", key=KEY, max_chars=80,
                  help="Stored with your accepted answers and annotations.")
