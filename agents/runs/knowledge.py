"""A database's knowledge as a run receives it: the enabled notes, within a length budget.

The notes themselves are kept by the store (:mod:`agents.store.knowledge`); this module decides
what one run is given (:func:`notes_for`) and turns an accepted answer into a note a user can
keep (:func:`note_from_accepted`).
"""

from __future__ import annotations

from agents.runs.run_context import MAX_NOTES_CHARS, KnowledgeNote, fit_notes, one_line


def notes_for(store, db_name: str, budget: int = MAX_NOTES_CHARS
              ) -> tuple[list[KnowledgeNote], int]:
    """The enabled notes of ``db_name`` that fit in ``budget`` characters, and how many enabled
    notes were left out for want of room. Given a :class:`~agents.store.StoreView`, only the
    notes its user may see (their own and the team's shared ones), each with its author."""
    rows = store.list_notes(db_name, enabled_only=True) if db_name else []
    return fit_notes([KnowledgeNote(r["id"], r["title"] or "", r["text"], r.get("owner") or "")
                      for r in rows], budget)


def note_from_accepted(row: dict) -> tuple[str, str]:
    """(title, text) of a note made from an accepted answer: the question and the SQL that
    answers it, so later questions can reuse the definition it embodies."""
    return one_line(row["question"]), f"answered by the SQL {one_line(row['sql'])}"
