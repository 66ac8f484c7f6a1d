"""Makes every page run through ``app.py``, even when Streamlit starts a page on its own.

A server's first session starts in Streamlit's legacy folder-based multipage mode (the folder of
``app.py`` has a ``pages/`` directory). In that mode a first visit of e.g. ``/schema`` runs
``pages/schema.py`` alone: no page config, the raw file list as navigation. A page that finds
the mode still on runs ``app.py`` itself -- whose ``st.navigation`` switches the mode off and
runs this page properly -- and then ends its own, now redundant, run.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

APP = Path(__file__).resolve().parent.parent / "app.py"


def run_through_app() -> None:
    """Call first in every page script, before it draws anything."""
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory:
        runpy.run_path(str(APP), run_name="__main__")
        st.stop()
