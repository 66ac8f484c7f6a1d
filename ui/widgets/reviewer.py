"""Who is reviewing: the name stored with accepted answers and annotations.

In team mode it is the signed-in user, never typed. In local mode (one person, no accounts) it
is what the person types, kept for the browser session, defaulting to ``STUDIO_USER`` or the
login name of the machine running the studio.
"""

from __future__ import annotations

import getpass
import os

import streamlit as st

from ui import signin

KEY = "reviewer_name"


def default_name() -> str:
    try:
        return os.environ.get("STUDIO_USER") or getpass.getuser()
    except Exception:  # no login name (e.g. a container user without a passwd entry)
        return ""


def reviewer_name() -> str | None:
    """The session's reviewer name, or None when it is blank."""
    if signin.team_mode():
        return signin.viewer().user or None
    name = st.session_state.get(KEY)
    name = default_name() if name is None else name
    return " ".join(str(name).split())[:80] or None


def name_input() -> None:
    """The "Your name" box (inside a form or not); its value lasts for the session. In team
    mode a line saying who is signed in instead."""
    if signin.team_mode():
        st.caption(f"Recorded as {signin.md_text(signin.display_name() or '')} "
                   f"({signin.viewer().user}).")
        return
    st.session_state.setdefault(KEY, default_name())
    st.text_input("Your name", key=KEY, max_chars=80,
                  help="Stored with your accepted answers and annotations.")
