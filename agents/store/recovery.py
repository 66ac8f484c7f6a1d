"""Opening the store for the app, which must start whatever state the file is in.

:class:`~agents.store.Store` itself refuses a file it cannot use and says why
(:class:`~agents.store.connection.StoreError` and its ``kind``). The app goes one step further,
so that a damaged store never takes every page down and is never silently replaced:

- a damaged file (not a database, corrupt) is moved aside, next to where it was, under a name
  that says when, and a fresh store starts; the notice names the kept file;
- a store that cannot be written (a read-only folder or file, a full disk) is opened read-only:
  History and the lists still show everything, every save says why it cannot be made;
- an empty file (0 bytes and no journal: a failed copy, a full disk) is moved aside the same
  way, and the notice says the runs it held are gone and how to restore a copy;
- one from a newer studio, or one another process holds, is left exactly as it is, and the
  error stands.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from .connection import DAMAGED, EMPTY, UNWRITABLE, StoreError
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


EMPTY_GRACE_SECONDS = 5.0  # a store another process is creating is empty for a moment


def _open(path: Path) -> Store:
    """The store at ``path``; one that is empty is given a few seconds, in case another
    process (a second server, an evaluation) is just creating it."""
    deadline = time.monotonic() + EMPTY_GRACE_SECONDS
    while True:
        try:
            return Store(path)
        except StoreError as exc:
            try:
                young = time.time() - path.stat().st_mtime < EMPTY_GRACE_SECONDS
            except OSError:
                young = False
            if exc.kind != EMPTY or not young or time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def open_for_app(path: Path | str) -> tuple[Store, str | None]:
    """The store at ``path`` and, when it had to be moved aside or opened read-only, the notice
    every page shows (what is wrong, what was done, what to do). Raises :class:`StoreError`
    when neither helps."""
    path = Path(path)
    try:
        return _open(path), None
    except StoreError as exc:
        if exc.kind in (DAMAGED, EMPTY) and path.is_file():
            try:
                aside = _move_aside(path)
            except OSError:
                raise exc from None
            store = Store(path)
            if exc.kind == EMPTY:
                return store, (f"The run store `{path}` was empty (0 bytes), so the runs, notes "
                               f"and answers it held are not in it. It was moved to `{aside}` "
                               "and a fresh store started. To get them back, stop the studio, "
                               f"copy a backup over `{path}` and start it again.")
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
