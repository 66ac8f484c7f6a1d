"""Makes every page run through ``app.py``, even when Streamlit starts a page on its own.

A server's first session starts in Streamlit's legacy folder-based multipage mode (the folder of
``app.py`` has a ``pages/`` directory). In that mode a first visit of e.g. ``/schema`` runs
``pages/schema.py`` alone: no page config, the raw file list as navigation. A page that finds
the mode still on runs ``app.py`` itself -- whose ``st.navigation`` switches the mode off and
runs this page properly -- and then ends its own, now redundant, run. The same happens to a
page started for a session that has not signed in, in team mode: app.py shows it the sign-in
page and nothing else.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

APP = Path(__file__).resolve().parent.parent / "app.py"


def run_through_app() -> None:
    """Call first in every page script, before it draws anything."""
    from streamlit.runtime.pages_manager import PagesManager

    from ui import signin

    # In team mode a page never draws for a session that has not signed in, however it was
    # started: app.py then shows the sign-in page instead.
    if PagesManager.uses_pages_directory or (signin.team_mode() and not signin.signed_in()):
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
