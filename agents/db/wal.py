"""WAL-mode databases: part of their data may live in a ``-wal`` file beside them.

Opening a WAL-mode file the ordinary read-only way (``mode=ro``) makes SQLite create ``-wal`` and
``-shm`` files beside it, and leave them there: never acceptable for the user's database. And
the main file alone may be missing recent changes, or everything (a database copied while in
use can have all its tables still in the ``-wal``). So:

- a WAL-mode file with no ``-wal`` beside it (or an empty one) holds all its data and is read
  with ``immutable=1``, which creates nothing;
- a WAL-mode file with a ``-wal`` (beside it on disk, or in the same ``.zip`` upload) is merged by
  SQLite itself: both are copied into a private temporary folder, opened there, copied into
  memory with the backup API, and the folder is removed before anything else happens;
- an uploaded WAL-mode file without its ``-wal`` is opened as it is, with a notice saying that
  changes still in a ``-wal`` are not included and how to include them.
"""

from __future__ import annotations

import io
import os
import sqlite3
import tempfile
import zipfile
import zlib

WAL_SUFFIX = "-wal"
ZIP_MAGIC = b"PK\x03\x04"
_IGNORED = ("-shm",)                    # SQLite rebuilds the shared-memory index
_JUNK_PREFIXES = ("__MACOSX/",)         # what archivers add beside the files
MAX_ZIP_MEMBERS = 16


class WalError(ValueError):
    """The files cannot be read as one database; the message says why, for the user."""


def is_wal_mode(head: bytes) -> bool:
    """Whether a database header (its first 100 bytes) marks a WAL-mode database."""
    return len(head) >= 20 and 2 in (head[18], head[19])


def as_rollback_mode(data: bytes) -> bytes:
    """``data`` with the header marking a rollback-journal database (an in-memory copy cannot
    use WAL); the caller's bytes are not changed."""
    return bytes(data[:18]) + b"\x01\x01" + bytes(data[20:])


def wal_beside(path: str) -> str | None:
    """The ``-wal`` file beside ``path`` when it exists and holds anything."""
    wal = path + WAL_SUFFIX
    try:
        return wal if os.path.getsize(wal) > 0 else None
    except OSError:
        return None


def merge(data: bytes, wal: bytes) -> bytes:
    """The database as SQLite reads it with its ``-wal`` applied, as the bytes of one file."""
    with tempfile.TemporaryDirectory(prefix="studio-wal-") as folder:
        path = os.path.join(folder, "db")
        with open(path, "wb") as handle:
            handle.write(data)
        with open(path + WAL_SUFFIX, "wb") as handle:
            handle.write(wal)
        source = sqlite3.connect(path)  # our private copy: SQLite may index and replay the -wal
        target = sqlite3.connect(":memory:")
        try:
            source.backup(target)
            return target.serialize()
        except sqlite3.Error as exc:
            raise WalError(f"the database and its -wal file cannot be read together ({exc})"
                           ) from None
        finally:
            source.close()
            target.close()


def is_zip(data: bytes) -> bool:
    return bytes(data[:4]) == ZIP_MAGIC


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int) -> bytes:
    """A member's bytes, never more than ``max_bytes`` (declared sizes can lie)."""
    with archive.open(info) as handle:
        content = handle.read(max_bytes + 1)
    if len(content) > max_bytes:
        raise WalError(f"{info.filename} is too large once unpacked (the limit is "
                       f"{max_bytes / (1024 * 1024):.1f} MiB)")
    return content


def read_zip(data: bytes, max_bytes: int) -> tuple[str, bytes, bytes | None]:
    """(database file name, its bytes, its ``-wal`` bytes or None) from a zip upload."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if not m.is_dir()
                   and not m.filename.startswith(_JUNK_PREFIXES)
                   and not os.path.basename(m.filename).startswith(".")]
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise WalError(f"not a readable zip file ({exc})") from None
    if len(members) > MAX_ZIP_MEMBERS:
        raise WalError(f"the zip holds {len(members)} files; it should hold one database and, "
                       "optionally, its -wal file")
    wals = [m for m in members if m.filename.endswith(WAL_SUFFIX)]
    databases = [m for m in members if m not in wals and not m.filename.endswith(_IGNORED)]
    if len(databases) != 1:
        raise WalError(f"the zip should hold one database file (and optionally its -wal), "
                       f"not {len(databases)}")
    database = databases[0]
    if any(m.filename != database.filename + WAL_SUFFIX for m in wals):
        raise WalError(f"the -wal file in the zip must be named "
                       f"{database.filename + WAL_SUFFIX}")
    if sum(m.file_size for m in [database, *wals]) > max_bytes:
        raise WalError(f"the files are too large once unpacked (the limit is "
                       f"{max_bytes / (1024 * 1024):.1f} MiB)")
    try:
        content = _read_member(archive, database, max_bytes)
        wal = _read_member(archive, wals[0], max_bytes - len(content)) if wals else None
    except (zipfile.BadZipFile, zlib.error, RuntimeError, OSError, EOFError,
            NotImplementedError) as exc:
        raise WalError(f"the zip cannot be unpacked ({exc})") from None
    return os.path.basename(database.filename), content, wal
