"""Accepting an answer: one place that stores a run's question, SQL and result as approved.

The Ask page's answer pane and the Compare page both accept through :func:`accept_answer`, so an
answer accepted on either is the same record (``Store.accept``), listed in History with its run
and under Accepted answers, and offered to the example bank.
"""

from __future__ import annotations

from agents.core.events import Run

from ui import databases as ui_databases
from ui import services as ui_services
from ui.format import md_text
from ui.widgets.reviewer import reviewer_name

ACCEPTED = ("Accepted: the question, SQL and result are saved with the run (see History and its "
            "Accepted answers list).")


def accept_answer(run: Run, sql: str, preview: dict | None) -> tuple[str, str]:
    """Save ``run`` and accept ``sql`` (already run, its result ``preview``) as the answer to its
    question; returns a (level, message) pair for ``st.success`` or ``st.error``."""
    if not sql.strip():
        return "error", "There is no SQL to accept."
    if not preview or not preview.get("ok"):
        return "error", "Only SQL that runs can be accepted: fix it and run it first."
    try:
        store = ui_services.store()
        rule = ui_databases.sharing_rule()
        shared = rule(run.db_name)
        if store.run_info(run.run_id) is None:
            store.save_run(run, source="app", shared=rule(run.db_name, run))
        earlier = store.find_accepted(run.db_name, run.question, sql)
        store.accept(run.run_id, run.question, sql.strip(), run.db_name, result_preview=preview,
                     author=reviewer_name(), shared=shared)
    except Exception as exc:
        return "error", f"Could not save the accepted answer: {exc}"
    if earlier:  # the same pair is stored once: say whose and when, and that this run joins it
        from ui.timefmt import local_time

        who = f" by {earlier['author']}" if earlier.get("author") else ""
        return "success", (f"Accepted: this question and SQL were already an accepted answer "
                           f"(accepted{who} at {local_time(earlier['created_at'])}); this run "
                           f"is linked to it too.")
    return "success", ACCEPTED


def failure_text(result) -> str:
    """Why SQL the user typed did not run, in one line."""
    if result.error_class == "UnsafeSQL":
        return f"Refused: {result.error}"
    if result.error_class == "Timeout":
        return f"The query took too long: {result.error}"
    return f"The SQL failed ({result.error_class or 'error'}): {result.error}"


def accepted_note(run_id: str) -> str | None:
    """"Accepted by … at …" when this run already has an accepted answer on record."""
    from ui.timefmt import local_time

    try:
        info = ui_services.store().run_info(run_id)
    except Exception:  # the store being unreadable must not take the page down
        return None
    if not info or info.get("accepted") != "yes":
        return None
    who = f" by {info['accepted_by']}" if info.get("accepted_by") else ""
    return md_text(f"Accepted{who} at {local_time(info['accepted_at'])}")
