"""Find the words of a question that are values stored in the database.

A question says "singers from France" or "orders that were cancelled"; the query must say
``country = 'France'`` or ``status = 'Cancelled'``, spelled as the database stores it. A small
model sees a few example values per column at best, so it guesses the column and the spelling.
This module looks the question's phrases up in the data and returns what it found (table,
column, stored value, the phrase it matched and how), which a writer prompt can show.

The lookup is bounded, because it runs before every question on databases of any size:

- Each text column gets an in-memory index of its distinct short values, drawn once per
  database with one ``SELECT DISTINCT ... LIMIT`` over the column's leading rows and kept for
  later questions. Only TEXT-like columns are indexed: numbers and dates are not names, and
  identifier and foreign-key columns hold keys, not words a question uses. Smaller tables
  come first, and the index stops at 1,000 columns or 100,000 distinct values, whichever comes
  first: a bound on memory, not on the schema's width (a cap of 150 columns had left a third of
  the text columns of Spider's 19 dev databases merged into one out of it, among them the
  tables with the most rows, which questions name most: country and people's names). With
  the second cache below, a database's values in memory are at most 100,000 plus 150 columns
  of at most 2,000.
- The rest of a table larger than the scanned rows is searched directly as well: one scan per
  table with ``COLLATE NOCASE IN (...)`` tests for all phrases and all its text columns (exact
  and case-insensitive only; a ``LIKE`` or fuzzy search there would cost a scan per phrase).
  A table too large to scan within the budget is reported and not scanned again.
- Every query goes through :meth:`Database.execute` (read-only, a short timeout, a row cap),
  and the whole lookup, index building included, has a time budget; what the budget or a
  timeout cut short is reported in :attr:`Grounding.skipped`, never silently dropped.
- Empty tables are not indexed (they store no value), so on a database with many of them the
  column cap is spent on tables that hold data.
- A lookup may be limited to some tables, or some of their columns (``tables=``): a pipeline
  whose schema was cut to fit the model's context grounds the question in what its writers
  see. Those columns are searched even where the database-wide cap left them out: the lookup
  indexes them itself, within its budget, and keeps them in a second, bounded cache (least
  recently used first out). A match the writers cannot see would only invite a query naming
  a table or column missing from their prompt.
- A column whose query fails or times out is reported and not tried again; one whose query was
  cut short by the lookup's own deadline is reported as ``budget`` and drawn by a later lookup.

Matches come in four kinds, best first: ``exact``, ``case-insensitive`` (extra spaces are
ignored too, as in a stored 'Paris ' with a trailing space), ``prefix`` (the phrase
is the first word or words of the value, as "John" of "John Smith") and ``fuzzy`` (a close
spelling, as "Frnace"). The phrases looked up are chosen by :mod:`agents.question_phrases`.
"""

from __future__ import annotations

import bisect
import difflib
import re
import threading
import time
import weakref
from collections import OrderedDict
from dataclasses import asdict, dataclass, field

from .question_phrases import KINDS, Phrase, fold, question_phrases
from .schema import quote_identifier, sql_name

HOWS = ("exact", "case-insensitive", "prefix", "fuzzy")  # best first
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
class ValueMatch:
    """``table.column`` stores ``value``; the question said ``phrase``; ``how`` they match."""

    table: str
    column: str
    value: str
    phrase: str
    how: str

    def condition(self) -> str:
        """The match as SQL: ``singer.country = 'France'``."""
        literal = "'" + self.value.replace("'", "''") + "'"
        return f"{sql_name(self.table)}.{sql_name(self.column)} = {literal}"

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "ValueMatch":
        return cls(**{k: data[k] for k in ("table", "column", "value", "phrase", "how")})


@dataclass
class Grounding:
    """What one lookup found, what it left out, and what it cost."""

    question: str
    matches: list[ValueMatch] = field(default_factory=list)
    phrases: list[str] = field(default_factory=list)
    skipped: list[dict] = field(default_factory=list)  # {table, column, reason} | {step, reason}
    columns_searched: int = 0
    dropped: int = 0          # matches found beyond the cap
    seconds: float = 0.0

    def prompt_section(self) -> str:
        return render_matches(self.matches)

    def to_dict(self) -> dict:
        return {"question": self.question, "matches": [m.to_dict() for m in self.matches],
                "phrases": list(self.phrases), "skipped": [dict(s) for s in self.skipped],
                "columns_searched": self.columns_searched, "dropped": self.dropped,
                "seconds": round(self.seconds, 4)}

    @classmethod
    def from_dict(cls, data: dict) -> "Grounding":
        return cls(**{**data, "matches": [ValueMatch.from_dict(m) for m in data["matches"]]})


def render_matches(matches: list[ValueMatch],
                   title: str = "Values in the database that match the question:") -> str:
    """A short prompt section listing the matches; empty text when there are none."""
    if not matches:
        return ""
    lines = [title]
    for m in matches:
        said = "" if m.how == "exact" else f"  (the question says \"{m.phrase}\"; {m.how})"
        lines.append(f"- {m.condition()}{said}")
    return "\n".join(lines)


# -- the per-database index of stored values ------------------------------------------------------
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


# -- the lookup -----------------------------------------------------------------------------------
def ground_question(db, question: str, limits: GroundingLimits | None = None,
                    tables=None) -> Grounding:
    """Values stored in ``db`` that the question's phrases name, within ``limits``; only in
    ``tables`` (names) when given.

    ``db`` is a :class:`~agents.database.Database`; nothing is written to it.
    """
    limits = limits or GroundingLimits()
    started = time.perf_counter()
    deadline = started + limits.budget_seconds
    grounding = Grounding(question=question)
    phrases = question_phrases(question, db.schema, limits.max_phrases)
    grounding.phrases = [p.text for p in phrases]
    if phrases:
        index = value_index(db, limits)
        with index.lock:
            if tables is None:
                index.fill(db, deadline)
                columns = list(index.columns)
                grounding.skipped.extend(index.skipped())
            else:
                columns, skipped = index.columns_of(db, tables, deadline)
                grounding.skipped.extend(skipped)
            found = [m for values in columns for m in _indexed_matches(values, phrases, limits)]
            partial: dict[str, list[_ColumnValues]] = {}
            for values in columns:
                if not values.complete:
                    partial.setdefault(values.table, []).append(values)
            for table, table_columns in partial.items():
                found.extend(_direct_matches(db, index, table, table_columns, phrases,
                                             deadline, limits, grounding))
        found.extend(_fuzzy_matches(columns, phrases, found, deadline, limits, grounding))
        grounding.columns_searched = len(columns)
        grounding.matches, grounding.dropped = _best(found, limits)
    grounding.seconds = time.perf_counter() - started
    return grounding


# A candidate match with what ranks it: (how, phrase kind, longer phrase first).
_Found = tuple[ValueMatch, Phrase]


def _indexed_matches(values: _ColumnValues, phrases: list[Phrase],
                     limits: GroundingLimits) -> list[_Found]:
    found = []
    for phrase in phrases:
        key = phrase.fold
        stored = values.by_fold.get(key)
        if stored:
            value = phrase.text if phrase.text in stored else stored[0]
            how = "exact" if value == phrase.text else "case-insensitive"
            found.append((ValueMatch(values.table, values.column, value, phrase.text, how),
                          phrase))
            continue
        if phrase.kind == "number" or len(key) < 3:
            continue
        at = bisect.bisect_left(values.folds, key + " ")
        for other in values.folds[at:at + limits.max_per_phrase]:
            if not other.startswith(key + " "):
                break
            found.append((ValueMatch(values.table, values.column, values.by_fold[other][0],
                                     phrase.text, "prefix"), phrase))
    return found


def _direct_matches(db, index: ValueIndex, table: str, columns: list[_ColumnValues],
                    phrases: list[Phrase], deadline: float, limits: GroundingLimits,
                    grounding: Grounding) -> list[_Found]:
    """Exact and case-insensitive matches in the rows of ``table`` the index did not cover.

    One scan serves every such column of the table: each output column is the stored value
    where that column matched, NULL elsewhere. A table whose scan does not finish within the
    budget is not scanned again for this database (the next questions would pay the same).
    """
    def skip(reason: str) -> list[_Found]:
        grounding.skipped.extend({"table": table, "column": c.column,
                                  "reason": f"{reason} (rows beyond the index not searched)"}
                                 for c in columns)
        return []

    left = deadline - time.perf_counter()
    if table in index.unsearchable:
        return skip("too large to search in time")
    if left <= 0.05:
        return skip("budget")
    wanted = {p.fold: p for p in phrases}
    literals = ", ".join("'" + p.text.replace("'", "''") + "'" for p in wanted.values())
    tests = [f"{quote_identifier(c.column)} COLLATE NOCASE IN ({literals})" for c in columns]
    picks = ", ".join(f"CASE WHEN {test} THEN {quote_identifier(c.column)} END"
                      for test, c in zip(tests, columns))
    cap = limits.max_matches * 10
    sql = (f"SELECT DISTINCT {picks} FROM {quote_identifier(table)} "
           f"WHERE {' OR '.join(tests)} LIMIT {cap}")
    result = db.execute(sql, timeout=left, max_rows=cap)
    if not result.ok:
        if result.error_class == "Timeout":
            index.unsearchable.add(table)
            return skip("timeout")
        return skip("error")
    found = []
    for row in result.rows:
        for values, value in zip(columns, row):
            phrase = wanted.get(fold(str(value))) if value is not None else None
            if phrase is not None:
                how = "exact" if value == phrase.text else "case-insensitive"
                found.append((ValueMatch(table, values.column, str(value), phrase.text, how),
                              phrase))
    return found


def _fuzzy_matches(columns: list[_ColumnValues], phrases: list[Phrase], found: list[_Found],
                   deadline: float, limits: GroundingLimits,
                   grounding: Grounding) -> list[_Found]:
    """Close spellings for the names, quoted strings and single words (five letters up) that
    nothing else matched; only stored values of a similar length are compared."""
    matched = {id(phrase) for _, phrase in found}
    open_phrases = [p for p in phrases if id(p) not in matched and len(p.fold) >= 4 and (
        p.kind in ("quoted", "name") or (p.kind == "words" and " " not in p.fold
                                         and len(p.fold) >= 5))]
    # ratio = 2 * matches / (len(a) + len(b)) bounds how far the lengths may differ
    slack = (1 - limits.fuzzy_cutoff) / limits.fuzzy_cutoff
    fuzzy = []
    for values in columns if open_phrases else []:
        if time.perf_counter() > deadline:
            grounding.skipped.append({"step": "fuzzy", "reason": "budget"})
            break
        for phrase in open_phrases:
            size = len(phrase.fold)
            nearby = [key for n in range(int(size * (1 - slack)), int(size * (1 + slack)) + 1)
                      for key in values.by_length.get(n, ())]
            close = difflib.get_close_matches(phrase.fold, nearby, n=1,
                                              cutoff=limits.fuzzy_cutoff)
            if close:
                fuzzy.append((ValueMatch(values.table, values.column,
                                         values.by_fold[close[0]][0], phrase.text, "fuzzy"),
                              phrase))
    return fuzzy


def _best(found: list[_Found], limits: GroundingLimits) -> tuple[list[ValueMatch], int]:
    """The best matches, each stored value once, capped; and how many the cap dropped.

    A phrase inside a longer phrase that already matched as well or better is dropped ("York"
    once "New York" matched), and each phrase keeps at most ``max_per_phrase`` matches.
    """
    ranked = sorted(found, key=lambda f: (HOWS.index(f[0].how), KINDS.index(f[1].kind),
                                          f[1].span[0] - f[1].span[1]))
    kept: list[_Found] = []
    seen: set[tuple[str, str, str]] = set()
    per_phrase: dict[str, int] = {}
    for match, phrase in ranked:
        key = (match.table, match.column, match.value)
        if key in seen or per_phrase.get(phrase.fold, 0) >= limits.max_per_phrase or any(
                _inside(phrase.span, other.span) and HOWS.index(m.how) <= HOWS.index(match.how)
                for m, other in kept):
            continue
        seen.add(key)
        per_phrase[phrase.fold] = per_phrase.get(phrase.fold, 0) + 1
        kept.append((match, phrase))
    return [m for m, _ in kept[:limits.max_matches]], max(0, len(kept) - limits.max_matches)


def _inside(span: tuple[int, int], other: tuple[int, int]) -> bool:
    """True when ``span`` lies within ``other`` and is shorter."""
    return other[0] <= span[0] and span[1] <= other[1] and (span[1] - span[0]) < \
        (other[1] - other[0])
