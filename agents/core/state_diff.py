"""What a person changed when they edited a step's state before re-running from it.

Resuming with an edited state (:func:`agents.core.engine.resume_run`) replaces the step's ``data``
with the edit and marks the step ``edited``; the step's output still shows what the model
produced. A reviewer needs both sides: what the model left and what the next step actually saw.
The unedited state is in the run the resume started from (``parent_run_id``), or further up
when that run was itself resumed from an edit, so :func:`original_states` walks up the chain;
:func:`state_changes` then lists the keys that differ and :func:`change_lines` shows each as a
unified diff (SQL formatted first, so layout alone never counts as a change).
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Callable

from agents.core.events import Run
from agents.db.sqltext import format_sql, same_sql

MAX_ANCESTORS = 50  # a chain of resumes this long is already absurd; a loop must not hang


@dataclass(frozen=True)
class StateChange:
    """One top-level key of a step's state that an edit added, removed or changed."""

    key: str
    before: Any
    after: Any

    @property
    def kind(self) -> str:
        if self.before is None and self.after is not None:
            return "added"
        if self.after is None and self.before is not None:
            return "removed"
        return "changed"

    @property
    def is_sql(self) -> bool:
        """Whether both sides are SQL text (shown formatted, side by side)."""
        return "sql" in self.key.lower() and all(
            isinstance(v, (str, type(None))) for v in (self.before, self.after))


def state_changes(before: dict | None, after: dict | None) -> list[StateChange]:
    """The keys whose values differ between the model's state and the edited one, in the
    order the state lists them."""
    before, after = before or {}, after or {}
    changes = []
    for key in dict.fromkeys([*before, *after]):
        old, new = before.get(key), after.get(key)
        if old == new:
            continue
        if isinstance(old, str) and isinstance(new, str) and "sql" in key.lower() \
                and same_sql(old, new):
            continue
        changes.append(StateChange(str(key), old, new))
    return changes


def value_text(change: StateChange, value: Any) -> str:
    """A state value as readable text: SQL formatted, anything else as indented JSON."""
    if value is None:
        return ""
    if change.is_sql:
        return format_sql(value)
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


def change_lines(change: StateChange) -> list[str]:
    """A unified diff of one change: ``-`` the model's lines, ``+`` the edited ones."""
    before = value_text(change, change.before).splitlines()
    after = value_text(change, change.after).splitlines()
    diff = difflib.unified_diff(before, after, fromfile=f"{change.key} (model)",
                                tofile=f"{change.key} (edited)", lineterm="", n=3)
    return list(diff)


def original_state(run: Run, index: int, load: Callable[[str], Run | None]) -> dict | None:
    """The state step ``index`` of ``run`` had before anyone edited it, read from the run(s)
    it was resumed from with ``load(run_id)``; None when that run is no longer stored."""
    current, seen = run, {run.run_id}
    for _ in range(MAX_ANCESTORS):
        parent_id = current.parent_run_id
        if not parent_id or parent_id in seen:
            return None
        seen.add(parent_id)
        parent = load(parent_id)
        if parent is None or index >= len(parent.events):
            return None
        event = parent.events[index]
        if not event.edited:
            return event.data
        current = parent
    return None


def original_states(run: Run, load: Callable[[str], Run | None]) -> dict[int, dict | None]:
    """For every edited step of ``run``: its index -> the model's own state (None: unknown)."""
    return {e.index: original_state(run, e.index, load) for e in run.events if e.edited}
