"""Judgements of runs: verdict, error type, the step to blame, a corrected SQL and notes.

Annotations are never overwritten: each judgement is a new row, lists show the latest, and the
history stays for anyone who wants to see how a verdict changed. The blamed step is checked
against the run's own steps and stored both by name and by index.
"""

from __future__ import annotations

from agents.core.events import Run
from .access import Viewer, viewer_or_local
from .connection import StoreConnection
from .schema import iso_utc
from .taxonomy import ERROR_TYPES, VERDICTS


class AnnotationsPart(StoreConnection):
    """The annotation methods of :class:`~agents.store.Store` (``get_run`` comes from the run
    part)."""

    def annotate(self, run_id: str, verdict: str, error_type: str | None = None,
                 faulty_step: str | int | None = None, corrected_sql: str | None = None,
                 notes: str = "", author: str | None = None, *,
                 viewer: Viewer | None = None) -> int:
        """Record a judgement of a run; earlier ones are kept as history, the latest is shown.

        ``faulty_step`` is a step name or index of the run; it is stored as both. Anyone who may
        see the run may judge it; in team mode the author is the signed-in user, whatever
        ``author`` says.
        """
        viewer = viewer_or_local(viewer)
        if viewer.team:
            author = viewer.user
        if verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {', '.join(VERDICTS)}; got {verdict!r}")
        error_type = error_type or None
        if error_type is not None and error_type not in ERROR_TYPES:
            raise ValueError(f"unknown error type {error_type!r}; choose one of "
                             f"{', '.join(ERROR_TYPES)}")
        if verdict == "correct" and error_type is not None:
            raise ValueError("a run judged correct cannot have an error type")
        with self._write() as db:
            run = self.get_run(run_id, viewer=viewer)
            if run is None:
                raise ValueError(f"there is no stored run with id {run_id!r}")
            step_name, step_index = resolve_step(run, faulty_step)
            return db["annotations"].insert({
                "run_id": run_id, "verdict": verdict, "error_type": error_type,
                "faulty_step": step_name, "faulty_step_index": step_index,
                "corrected_sql": (corrected_sql or "").strip() or None, "notes": notes or "",
                "author": author, "created_at": iso_utc(None),
            }).last_pk

    def get_annotation(self, run_id: str, *, viewer: Viewer | None = None) -> dict | None:
        """The latest annotation of a run, or None."""
        history = self.annotation_history(run_id, viewer=viewer)
        return history[-1] if history else None

    def annotation_history(self, run_id: str, *, viewer: Viewer | None = None) -> list[dict]:
        """Every annotation of a run ``viewer`` may see, oldest first."""
        seen, params = viewer_or_local(viewer).visible("r")
        with self._lock:
            return list(self.db.query(
                "SELECT a.* FROM annotations AS a JOIN runs AS r ON r.run_id = a.run_id "
                f"WHERE a.run_id = ? AND {seen} ORDER BY a.id", [run_id, *params]))


def resolve_step(run: Run, step: str | int | None) -> tuple[str | None, int | None]:
    """Map a step name or index to (name, index), checking it exists in the run."""
    if step is None or step == "":
        return None, None
    names = [e.step for e in run.events]
    if isinstance(step, int) or (isinstance(step, str) and step.isdigit()):
        index = int(step)
        if not 0 <= index < len(names):
            raise ValueError(
                f"faulty step {index} does not exist; this run has steps 0-{len(names) - 1}"
                if names else "this run has no steps to blame")
        return names[index], index
    if step not in names:
        raise ValueError(f"faulty step {step!r} is not a step of this run; its steps are "
                         f"{', '.join(dict.fromkeys(names)) or 'none'}")
    index = len(names) - 1 - names[::-1].index(step)  # a repeated step: blame its last attempt
    return step, index


def blamed_step_label(annotation: dict | None, run: Run | None = None) -> str | None:
    """The step an annotation blames as a person reads it: its number and agent, e.g.
    ``step 2 · Decomposer`` (not the pipeline's internal step name), or None."""
    if not annotation or annotation.get("faulty_step_index") is None:
        return None
    index = int(annotation["faulty_step_index"])
    agent = (run.events[index].agent if run is not None and index < len(run.events)
             else annotation.get("faulty_step") or "")
    return f"step {index + 1} · {agent}" if agent else f"step {index + 1}"
