"""One few-shot example, and the error raised when an example or a dataset cannot be used."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from .qtypes import EASY


class ExampleBankError(ValueError):
    """A dataset or example could not be used; the message says what to fix."""


@dataclass
class Example:
    question: str
    sql: str
    db_id: str | None = None
    qtype: str = EASY
    source: str = "user"  # "accepted" (from the store) | "dataset" | "user" (added directly)
    skeleton: str = ""
    score: float = 0.0
    author: str = ""  # who accepted it, in team mode (the trace says; the prompt does not)

    def to_dict(self) -> dict:
        return asdict(self)
