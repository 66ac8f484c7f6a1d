"""The per-database index of stored values that value grounding searches: the text columns worth
reading, their distinct values read once within a time and size budget, and kept per database
file so every question on it reuses them."""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field

from agents.retrieval.question_phrases import fold
from agents.db.identifiers import quote_identifier

BUDGET = "budget"  # why a column was not searched: the lookup's time ran out
# Identifier columns (id, singer_id, id_number, MakeId, StuID): keys, not words of a question.
_ID_NAME = re.compile(r"(?i:(^|_)id(_|\Z))|[a-z0-9](Id|ID)\Z")
_TEXT_TYPE = re.compile(r"CHAR|CLOB|TEXT", re.IGNORECASE)
_NOT_TEXT_TYPE = re.compile(r"INT|REAL|FLOA|DOUB", re.IGNORECASE)


@dataclass
class GroundingLimits:
    """Bounds of one lookup. With the defaults a lookup takes at most two seconds on any
    database, a few milliseconds once the database's index is built and its tables are small."""

    budget_seconds: float = 2.0     # the whole lookup, building the index included
    query_timeout: float = 0.4      # any query that builds the index
    max_columns: int = 1_000        # text columns indexed per database
    max_values: int = 100_000       # distinct values the database's index keeps in all
    cache_columns: int = 150        # columns past the caps kept for table-limited lookups
    scan_rows: int = 50_000         # leading rows of a table a column's index is drawn from
    values_per_column: int = 2_000  # distinct values kept per column
    max_value_chars: int = 80       # longer text is prose, not a value a question names
    max_phrases: int = 60
    max_matches: int = 10
    max_per_phrase: int = 3
    fuzzy_cutoff: float = 0.85

    def index_key(self) -> tuple:
        """The limits that shape a database's index (a lookup's budget does not)."""
        return (self.max_columns, self.max_values, self.cache_columns, self.scan_rows,
                self.values_per_column, self.max_value_chars)


@dataclass
class _ColumnValues:
    table: str
    column: str
    complete: bool                       # every row was scanned and no value was cut
    by_fold: dict[str, list[str]] = field(default_factory=dict)
    folds: list[str] = field(default_factory=list)   # sorted, for prefix search
    by_length: dict[int, list[str]] = field(default_factory=dict)  # for fuzzy search

    def add(self, value: str) -> None:
        self.by_fold.setdefault(fold(value), []).append(value)

    def seal(self) -> None:
        self.folds = sorted(self.by_fold)
        for key in self.folds:
            self.by_length.setdefault(len(key), []).append(key)


class ValueIndex:
    """Distinct short values of a database's text columns, filled as time budgets allow.

    Built lazily: each lookup indexes the columns still pending until its own deadline, so the
    first questions on a large database pay for part of it and later ones find it done. A
    column whose query fails or times out is reported and not tried again.
    """

    def __init__(self, schema, limits: GroundingLimits):
        self.limits = limits
        self.lock = threading.Lock()
        self.columns: list[_ColumnValues] = []
        self.failed: list[dict] = []
        self.unsearchable: set[str] = set()  # tables whose direct scan ran out of time
        self.all_columns = text_columns(schema, limits.scan_rows)
        self.pending: list[tuple[str, str, bool]] = self.all_columns[:limits.max_columns]
        self.capped = [{"table": t, "column": c, "reason": "column cap"}
                       for t, c, _ in self.all_columns[limits.max_columns:]]
        self.values = 0  # distinct values held by ``columns``
        # columns beyond the cap that table-limited lookups indexed, least recently used first
        self.extra: OrderedDict[tuple[str, str], _ColumnValues] = OrderedDict()

    def fill(self, db, deadline: float) -> None:
        """Index pending columns, one bounded query each, until ``deadline``."""
        while self.pending:
            left = deadline - time.perf_counter()
            if left <= 0.01:
                return
            table, column, small = self.pending[0]
            drawn = self._draw(db, table, column, small, left)
            if drawn == BUDGET:  # the deadline, not the column: it is drawn another time
                return
            self.pending.pop(0)
            if isinstance(drawn, _ColumnValues):
                self._take(drawn)

    def _take(self, drawn: "_ColumnValues") -> None:
        """A drawn column joins the database-wide index; once the index holds ``max_values``
        values, the columns still pending are capped (memory stays bounded on a database of
        many large text columns, whatever their number)."""
        self.columns.append(drawn)
        self.values += len(drawn.by_fold)
        if self.values >= self.limits.max_values and self.pending:
            self.capped = [{"table": t, "column": c, "reason": "value cap"}
                           for t, c, _ in self.pending] + self.capped
            self.pending = []

    def columns_of(self, db, tables, deadline: float) -> tuple[list[_ColumnValues], list[dict]]:
        """The indexed columns of ``tables``, indexing those still missing until ``deadline``;
        and the columns of theirs left unsearched, with the reason.

        ``tables`` names tables (any case), or maps each to the names of the columns to search
        (the columns a pipeline's prompts show of it)."""
        wanted = ({name.casefold(): {c.casefold() for c in columns}
                   for name, columns in tables.items()} if isinstance(tables, dict)
                  else {name.casefold(): None for name in tables})
        indexed = {(v.table, v.column): v for v in self.columns}
        failed = {(f["table"], f["column"]): f for f in self.failed}
        found: list[_ColumnValues] = []
        skipped: list[dict] = []
        for table, column, small in self.all_columns:
            key = (table, column)
            shown = wanted.get(table.casefold(), ())
            if shown is not None and column.casefold() not in shown:
                continue
            if key in indexed:
                found.append(indexed[key])
            elif key in self.extra:
                self.extra.move_to_end(key)
                found.append(self.extra[key])
            elif key in failed:
                skipped.append(failed[key])
            elif (left := deadline - time.perf_counter()) <= 0.01:
                skipped.append({"table": table, "column": column, "reason": BUDGET})
            else:
                drawn = self._draw(db, table, column, small, left)
                if not isinstance(drawn, _ColumnValues):
                    if drawn != BUDGET and (table, column, small) in self.pending:
                        self.pending.remove((table, column, small))  # failed for good
                    skipped.append({"table": table, "column": column, "reason": drawn})
                    continue
                found.append(drawn)
                # kept aside, even a column the database-wide index will take in its turn:
                # what that index holds within its value cap never depends on which tables
                # earlier questions were limited to
                self.extra[key] = drawn
                while len(self.extra) > self.limits.cache_columns:
                    self.extra.popitem(last=False)
        return found, skipped

    def _draw(self, db, table: str, column: str, small: bool,
              left: float) -> "_ColumnValues | str":
        """One column's distinct short values (one bounded query), or why there are none:
        ``"timeout"`` or ``"error"`` (recorded in :attr:`failed`, not tried again), or
        ``"budget"`` when the query ran out of the lookup's time before its own timeout (not
        recorded: the column is drawn again by a later lookup)."""
        limits = self.limits
        timeout = min(limits.query_timeout, left)
        name = quote_identifier(column)
        sql = (f"SELECT DISTINCT v FROM (SELECT {name} AS v FROM {quote_identifier(table)} "
               f"LIMIT {limits.scan_rows}) WHERE typeof(v) = 'text' AND length(v) BETWEEN "
               f"1 AND {limits.max_value_chars} LIMIT {limits.values_per_column + 1}")
        result = db.execute(sql, timeout=timeout, max_rows=limits.values_per_column)
        if not result.ok:
            timed_out = result.error_class == "Timeout"
            if timed_out and timeout < limits.query_timeout:
                return BUDGET
            reason = "timeout" if timed_out else "error"
            self.failed.append({"table": table, "column": column, "reason": reason})
            return reason
        values = _ColumnValues(table, column, complete=small and not result.truncated)
        for (value,) in result.rows:
            values.add(value)
        values.seal()
        return values

    def skipped(self) -> list[dict]:
        failed = {(f["table"], f["column"]) for f in self.failed}
        return self.failed + [{"table": t, "column": c, "reason": BUDGET}
                              for t, c, _ in self.pending] + [
            c for c in self.capped if (c["table"], c["column"]) not in failed]


def text_columns(schema, scan_rows: int = GroundingLimits.scan_rows
                 ) -> list[tuple[str, str, bool]]:
    """(table, column, whole table within ``scan_rows``) for each column worth indexing.

    TEXT-affinity columns, and untyped or NUMERIC ones whose example values are text; never
    identifier-named columns or foreign-key columns (their values are another table's keys).
    Views are left out: they show the values of their tables. So are tables known to be empty:
    they store no value, and coming first by size they would take the whole column cap of a
    database holding many of them. Smaller tables come first.
    """
    foreign = {(fk.table.casefold(), fk.column.casefold()) for fk in schema.foreign_keys}
    found = []
    for table in sorted((t for t in schema.tables if not t.is_view and not (
                            t.row_count == 0 and not t.row_count_estimated)),
                        key=lambda t: t.row_count if t.row_count >= 0 else float("inf")):
        small = 0 <= table.row_count <= scan_rows and not table.row_count_estimated
        for column in table.columns:
            if _ID_NAME.search(column.name) or \
                    (table.name.casefold(), column.name.casefold()) in foreign:
                continue
            if _TEXT_TYPE.search(column.type or "") or (
                    not _NOT_TEXT_TYPE.search(column.type or "")
                    and any(isinstance(v, str) for v in column.examples)):
                found.append((table.name, column.name, small))
    return found


_INDEXES: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
_INDEXES_LOCK = threading.Lock()


def value_index(db, limits: GroundingLimits | None = None) -> ValueIndex:
    """The index kept for ``db`` (rebuilt when limits that shape it change); runs no query."""
    limits = limits or GroundingLimits()
    with _INDEXES_LOCK:
        try:
            index = _INDEXES.get(db)
        except TypeError:  # a handle that cannot be weakly referenced gets no cache
            return ValueIndex(db.schema, limits)
        if index is None or index.limits.index_key() != limits.index_key():
            index = ValueIndex(db.schema, limits)
            _INDEXES[db] = index
        return index
