"""A run's draft answer, as the page, the CLI and the evaluation read it from the events.

Candidate selection marks the first candidate that runs as its draft answer (``draft`` in the
output of that candidate or its repair), shown before the run ends; the vote or the selection
agent later says whether it was confirmed or replaced (``draft_outcome``, ``draft_note``).
Other pipelines have no draft: every function here then answers None.
"""

from __future__ import annotations

from agents.core.events import Run, StepEvent

DRAFT_KINDS = ("candidate", "sql_repair")
VERDICT_KINDS = ("candidate_vote", "selection")


def is_draft(event: StepEvent) -> bool:
    return event.kind in DRAFT_KINDS and bool((event.parsed or {}).get("draft"))


def draft_event(events: list[StepEvent]) -> StepEvent | None:
    return next((e for e in events if is_draft(e)), None)


def verdict(event: StepEvent) -> tuple[str | None, str | None]:
    """``(outcome, note)`` of the draft answer, from a vote or a selection event."""
    if event.kind not in VERDICT_KINDS:
        return None, None
    parsed = event.parsed or {}
    return parsed.get("draft_outcome"), parsed.get("draft_note")


def final_note(events: list[StepEvent]) -> tuple[str | None, str | None]:
    """What became of a finished run's draft answer (the last verdict), if it had one."""
    for event in reversed(events):
        outcome, note = verdict(event)
        if outcome:
            return outcome, note
    return None, None


def draft_seconds(run: Run) -> float | None:
    """Seconds from the start of the run to the end of the step that produced the draft."""
    event = draft_event(run.events)
    if event is None or not event.started_at or not run.started_at:
        return None
    return max(0.0, event.started_at + event.seconds - run.started_at)
