"""Bring a part of the page into view: the running step while a run goes on, the answer once
it has ended.

Streamlit has no call for it; a zero-height component runs a line of script in the page that
holds it (same origin), which finds the element and scrolls it into view. A browser that
blocks it just does not scroll.
"""

from __future__ import annotations

import json

import streamlit.components.v1 as components

_SCRIPT = """<script>
const doc = window.parent.document;
const found = %s;
if (found) { found.scrollIntoView({behavior: "smooth", block: "%s"}); }
</script><!-- %s -->"""


def to_anchor(anchor: str, marker: str = "") -> None:
    """Scroll the element with id ``anchor`` (a header's ``anchor=``) to the top of the view."""
    components.html(_SCRIPT % (f"doc.getElementById({json.dumps(anchor)})", "start", marker),
                    height=0)


def to_last_step(slot, marker: str) -> None:
    """Scroll the last step block on the page into view (into ``slot``, an ``st.empty``, so
    one script at a time lives on the page); ``marker`` makes each call a new script."""
    found = ('Array.from(doc.querySelectorAll(\'[data-testid="stExpander"]\')).pop()')
    with slot:
        components.html(_SCRIPT % (found, "nearest", marker), height=0)
