"""Opening the store for the app, which must start whatever state the file is in.

:class:`~agents.store.Store` itself refuses a file it cannot use and says why
(:class:`~agents.store.connection.StoreError` and its ``kind``). The app goes one step further,
so that a damaged store never takes every page down and is never silently replaced:

- a damaged file (not a database, corrupt) is moved aside, next to where it was, under a name
  that says when, and a fresh store starts; the notice names the kept file;
- a store that cannot be written (a read-only folder or file, a full disk) is opened read-only:
  History and the lists still show everything, every save says why it cannot be made;
- an empty file or one from a newer studio is left exactly as it is, and the error stands.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .connection import DAMAGED, UNWRITABLE, StoreError
from . import Store


def _move_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    number = 1
    while aside.exists():
        number += 1
        aside = path.with_name(f"{path.name}.damaged-{stamp}-{number}")
    os.replace(path, aside)
    for suffix in ("-wal", "-shm"):  # its journal goes with it, so nothing mixes with the new
        side = Path(f"{path}{suffix}")
        if side.exists():
            os.replace(side, Path(f"{aside}{suffix}"))
    return aside


def open_for_app(path: Path | str) -> tuple[Store, str | None]:
    """The store at ``path`` and, when it had to be moved aside or opened read-only, the notice
    every page shows (what is wrong, what was done, what to do). Raises :class:`StoreError`
    when neither helps."""
    path = Path(path)
    try:
        return Store(path), None
    except StoreError as exc:
        if exc.kind == DAMAGED and path.is_file():
            try:
                aside = _move_aside(path)
            except OSError:
                raise exc from None
            store = Store(path)
            return store, (f"The run store `{path}` could not be read "
                           f"({exc.__cause__ or exc.kind}), so it was moved to `{aside}` and a "
                           "fresh store started. Its runs may be recoverable: "
                           f"`sqlite3 {aside} .recover`.")
        if exc.kind == UNWRITABLE and path.is_file():
            try:
                store = Store(path, read_only=str(exc))
            except StoreError:
                raise exc from None
            return store, (f"Read-only: {exc} Runs, notes and answers are shown but nothing "
                           "new is saved until then.")
        raise
