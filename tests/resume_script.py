"""The resumed-record tests' question, its right and wrong SQL, the writer's reply for a SQL,
and a step event built by hand."""

from __future__ import annotations

QUESTION = "What are the names of singers from France?"
GOLD = "SELECT name FROM singer WHERE country = 'France'"
WRONG = "SELECT nme FROM singer WHERE country = 'France'"


def reply(sql: str) -> str:
    return f"The question asks for names.\n```sql\n{sql};\n```"


def event(step, kind, parsed, inputs=None):
    from agents.core.events import StepEvent
    return StepEvent(index=0, step=step, agent=step, title=step, status="ok", kind=kind,
                     parsed=parsed, inputs=inputs or {})
