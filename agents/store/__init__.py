"""The persistent run store: every run with its full trace, annotations and accepted answers.

The History page, the example bank and the evaluation harness all read and write here, so a run
saved from the app, the CLI or an evaluation can later be replayed (rebuilt with
:meth:`Run.from_dict`, no model call), annotated with an error type from the papers' error
analyses, or exported. The file lives in ``studio_home()/studio.db`` and is opened in WAL mode
with a busy timeout and ``BEGIN IMMEDIATE`` writes, so several browser sessions or processes can
write at once without losing anything. One :class:`Store` may be shared between threads.

One concept per module: :mod:`.taxonomy` (verdicts, error types), :mod:`.schema` (tables and
migrations), :mod:`.connection` (the open file and its transactions), :mod:`.runs`,
:mod:`.annotations`, :mod:`.accepted`, :mod:`.export`, and the analyst's workspace: :mod:`.knowledge`
(notes per database), :mod:`.threads` (follow-up conversations), :mod:`.databases` (saved
databases) and :mod:`.preferences` (each user's settings). :mod:`.access` says who sees and
changes what in team mode; :class:`Store` joins the parts into the one object callers use, and
:class:`StoreView` is that object as one user sees it.
"""

from __future__ import annotations

from .access import ADMIN, ANALYST, LOCAL, ROLES, NotAllowed, StoreView, Viewer
from .accepted import AcceptedPart
from .annotations import AnnotationsPart, blamed_step_label, resolve_step
from .connection import BUSY_TIMEOUT_S, StoreConnection, StoreError, default_path
from .databases import DATABASE_KINDS, DatabasesPart
from .export import EXPORT_COLUMNS, ExportPart
from .knowledge import MAX_NOTE_CHARS, KnowledgePart
from .preferences import LOCAL_USER, PreferencesPart
from .runs import FILTER_COLUMNS, RunsPart
from .schema import ACCEPTED_COLUMNS, ANNOTATION_COLUMNS, RUN_COLUMNS, SCHEMA_VERSION
from .taxonomy import ERROR_TYPES, SOURCES, UNANNOTATED, VERDICTS, ErrorType
from .threads import ThreadsPart


class Store(RunsPart, AnnotationsPart, AcceptedPart, ExportPart, KnowledgePart, ThreadsPart,
            DatabasesPart, PreferencesPart):
    """Runs, annotations, accepted answers, knowledge notes, conversation threads, saved
    databases and each user's preferences in one SQLite file (see the package docstring)."""


__all__ = [
    "ADMIN", "ANALYST", "LOCAL", "ROLES", "NotAllowed", "StoreView", "Viewer",
    "ACCEPTED_COLUMNS", "ANNOTATION_COLUMNS", "BUSY_TIMEOUT_S", "DATABASE_KINDS", "ERROR_TYPES",
    "EXPORT_COLUMNS", "FILTER_COLUMNS", "LOCAL_USER", "MAX_NOTE_CHARS",
    "RUN_COLUMNS", "SCHEMA_VERSION", "SOURCES", "UNANNOTATED", "VERDICTS", "ErrorType", "Store",
    "StoreConnection", "StoreError", "blamed_step_label", "default_path", "resolve_step",
]
