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
spelling, as "Frnace"). The phrases looked up are chosen by :mod:`agents.retrieval.question_phrases`.
"""

from __future__ import annotations

import bisect
import difflib
import time
from dataclasses import asdict, dataclass, field

from agents.retrieval.question_phrases import KINDS, Phrase, fold, question_phrases
from agents.db.identifiers import quote_identifier, sql_name
from agents.retrieval.value_index import GroundingLimits, ValueIndex, _ColumnValues, value_index

HOWS = ("exact", "case-insensitive", "prefix", "fuzzy")  # best first


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



# -- the lookup -----------------------------------------------------------------------------------
def ground_question(db, question: str, limits: GroundingLimits | None = None,
                    tables=None) -> Grounding:
    """Values stored in ``db`` that the question's phrases name, within ``limits``; only in
    ``tables`` (names) when given.

    ``db`` is a :class:`~agents.db.database.Database`; nothing is written to it.
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
