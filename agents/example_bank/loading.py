"""The example bank a run uses: imported dataset examples plus the database's accepted answers.

Few-shot examples are a help, never a reason for a run to fail: a run store that cannot be read
leaves the bank without its accepted answers, with a logged warning that says why. Anything else
that goes wrong is a bug and is raised, not hidden.
"""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path
from typing import Any, Iterable

from .accepted import AcceptedSource
from .bank import ExampleBank
from .example import Example

log = logging.getLogger(__name__)

# How reading the accepted answers may fail without anything being wrong with the code: the
# store file is locked, damaged, unreadable or gone (the run store raises sqlite3 errors; a store
# that cannot even be opened never reaches the bank, its caller passes None).
STORE_READ_ERRORS = (sqlite3.Error, OSError)


def load_imported(path: str | Path) -> list[Example]:
    """Examples of a Spider-format file, with its sibling ``tables.json`` when there is one
    (so schema mentions in the questions are masked like the queries' names).

    A missing, unreadable or malformed file raises :class:`~.example.ExampleBankError` with a
    message naming it.
    """
    path = Path(path)
    tables = path.parent / "tables.json"
    return ExampleBank.from_spider_json(path, tables_json=tables if tables.is_file() else None
                                        ).examples


def bank_for(db: Any, store: AcceptedSource | None = None,
             imported: Iterable[Example] = ()) -> ExampleBank:
    """The example bank a run on ``db`` uses: ``imported`` examples plus the answers accepted
    for this database in ``store``. A store that cannot be read (see
    :data:`STORE_READ_ERRORS`) leaves the bank without them and logs a warning."""
    bank = ExampleBank(imported)
    if store is not None:
        try:
            bank.load_accepted(store, db.name, schema=db.schema)
        except STORE_READ_ERRORS as exc:
            log.warning("The answers accepted for %s could not be read from the run store (%s); "
                        "the run goes on without them as few-shot examples.", db.name, exc)
    return bank
