"""The answer so far, above the steps while a run goes on.

Candidate selection writes its quick candidate first and marks the first one that runs as the
draft answer (``draft`` in its output): its SQL and table are shown at once, "being checked".
When the vote (or the selection agent) decides, the same place says whether the draft was
confirmed or replaced and why, and a replaced draft's table gives way to the chosen one's. The
engine says all of this in its events (:mod:`agents.pipelines.selection`); this only draws it.
"""

from __future__ import annotations

import streamlit as st

from agents.core.events import StepEvent
from agents.db.sqltext import format_sql
from agents.runs.draft import is_draft, verdict

from ui.format import md_text
from ui.widgets.result import result_view

def _chosen_preview(event: StepEvent) -> tuple[str | None, dict | None]:
    """The SQL and the first rows of the answer a vote or a selection settled on."""
    parsed = event.parsed or {}
    if event.kind == "candidate_vote":
        group = (parsed.get("groups") or [{}])[0]
    else:
        group = next((o for o in parsed.get("options") or []
                      if o.get("label") == parsed.get("choice")), {})
    if not group.get("sql"):
        return None, None
    return group["sql"], {"ok": True, "columns": group.get("columns") or [],
                          "rows": group.get("rows") or [], "row_count": group.get("row_count"),
                          "truncated": (group.get("row_count") or 0) > len(group.get("rows")
                                                                         or [])}


class DraftPane:
    """One run's answer slot: call :meth:`update` with each finished step's event."""

    def __init__(self, slot):
        self.slot = slot
        self.draft: StepEvent | None = None

    def update(self, event: StepEvent) -> None:
        if is_draft(event) and self.draft is None:
            self.draft = event
            with self.slot.container(border=True):
                st.markdown("**Draft answer** · :orange[being checked by the other "
                            "candidates]")
                st.code(format_sql(event.sql or ""), language="sql", wrap_lines=True)
                result_view(event.execution, key=f"draft_{event.index}", chart=False)
            return
        outcome, note = verdict(event)
        if not outcome or self.draft is None:
            return
        with self.slot.container(border=True):
            if outcome == "confirmed":
                st.markdown(f"**Answer** · :green[{md_text(note)}]")
                st.code(format_sql(self.draft.sql or ""), language="sql", wrap_lines=True)
                result_view(self.draft.execution, key=f"confirmed_{event.index}", chart=False)
            else:
                st.markdown(f"**Answer** · :orange[{md_text(note)}]")
                sql, preview = _chosen_preview(event)
                if sql:
                    st.code(format_sql(sql), language="sql", wrap_lines=True)
                    result_view(preview, key=f"replaced_{event.index}", chart=False)
