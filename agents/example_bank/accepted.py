"""What the bank needs from the run store: the accepted (question, SQL) pairs of a database.

The bank reads the store through this one-method interface only, so tests (and other stores)
can hand it any object with ``list_accepted``.
"""

from __future__ import annotations

from typing import Any, Iterable, Iterator, Protocol


class AcceptedSource(Protocol):
    """Each record may be a mapping or an object with ``question`` and ``sql`` attributes."""

    def list_accepted(self, db_name: str | None = None) -> Iterable[Any]: ...


def accepted_pairs(store: AcceptedSource,
                   db_name: str | None = None) -> Iterator[tuple[str, str, str | None, str]]:
    """``(question, sql, db_name, owner)`` of each usable accepted record (of ``db_name``, or
    all); a :class:`~agents.store.StoreView` lists only those its user may see."""
    for record in store.list_accepted(db_name) or []:
        question = _field(record, "question")
        sql = _field(record, "sql")
        if not question or not sql:
            continue
        yield (str(question), str(sql), _field(record, "db_name") or db_name,
               str(_field(record, "owner") or ""))


def _field(record: Any, name: str) -> Any:
    if isinstance(record, dict):
        return record.get(name)
    return getattr(record, name, None)
