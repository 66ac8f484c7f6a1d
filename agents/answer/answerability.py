"""Can this database answer the question at all?

"What is the meaning of life" asked of a music store got ``SELECT 'The meaning of life' AS
answer``, and "how many dinosaurs are there" ended on ``no such table: dinosaur``: a writer
asked for SQL writes SQL. Where nothing in the database relates to the question, the honest
answer is a plain statement ("This database has no data about dinosaurs: its tables are about
...") with no SQL and no error styling. Two checks say so:

- :func:`unrelated_question`, before any agent runs: the question has words that could name a
  subject, and none of them names a table or column of the schema (compared as stems and
  close spellings, :mod:`agents.answer.words`) or is found inside a stored text value. A question that names nothing at all ("how many are there") is not refused: it
  may be about the one table there is; nor is one with a capitalised word, quoted text or a
  number, which may be a value the question reaches through a synonym ("nations founded
  after 1950" of a ``country`` table with ``IndepYear``).
- :func:`unanswerable_sql`, after the run: its SQL reads no table at all (a constant), or
  fails on a table whose name is like none of the database's.

Both err towards answering: a refused question that could be answered costs the user more
than an answer that reports its own doubt.
"""

from __future__ import annotations

import difflib
import re
import time
from dataclasses import dataclass

from sqlglot import exp

from agents.db.identifiers import quote_identifier
from agents.db.sqltext import parse_statement
from agents.answer.words import STOP, content_stems, name_stems, question_words, stem

_QUOTED = re.compile(r"\"[^\"]+\"|'[^']+'|\d")
_NO_SUCH_TABLE = re.compile(r"no such table:\s*(?:\w+\.)?([\w\"'`\[\]]+)", re.I)
_FUZZY = 0.8


@dataclass(frozen=True)
class Unanswerable:
    """Why the database cannot answer: the question's words it holds nothing about."""

    words: tuple[str, ...]
    tables: tuple[str, ...]
    reason: str = "question"  # question (before the run) | constant | missing table

    def statement(self) -> str:
        """The plain sentence the user reads instead of an answer."""
        about = ", ".join(self.words[:3]) if self.words else "this"
        shown = ", ".join(self.tables[:8]) + (" and others" if len(self.tables) > 8 else "")
        return (f"This database has no data about {about}: its tables are about {shown}."
                if shown else f"This database has no data about {about}: it holds no tables.")

    def to_dict(self) -> dict:
        return {"words": list(self.words), "tables": list(self.tables), "reason": self.reason,
                "statement": self.statement()}


def schema_stems(schema) -> set[str]:
    """Every stem of every table and column name of ``schema``."""
    stems: set[str] = set()
    for table in schema.tables:
        stems |= name_stems(table.name)
        for column in table.columns:
            stems |= name_stems(column.name)
    return stems


def _relates(word: str, stems: set[str]) -> bool:
    if word in stems:
        return True
    for s in stems:
        if len(word) >= 4 and len(s) >= 4 and (s.startswith(word) or word.startswith(s)):
            return True
    return bool(difflib.get_close_matches(word, stems, n=1, cutoff=_FUZZY))


def stored_anywhere(words, db, *, budget: float = 1.5) -> bool:
    """Whether a text column of ``db`` holds one of ``words`` inside a value ("striker" in a
    ``position`` column): one bounded ``LIKE`` query per table, all within ``budget``
    seconds; a table not searched in time counts as holding nothing."""
    words = [w for w in words if w.isalpha()][:6]
    if not words:
        return False
    deadline = time.monotonic() + budget
    for table in db.schema.tables:
        texts = [c.name for c in table.columns if c.affinity in ("TEXT", "BLOB")][:12]
        left = deadline - time.monotonic()
        if not texts or left <= 0:
            continue
        tests = " OR ".join(f"{quote_identifier(c)} LIKE '%{w}%'" for c in texts
                            for w in words)
        found = db.execute(f"SELECT 1 FROM {quote_identifier(table.name)} WHERE {tests} "
                           "LIMIT 1", timeout=min(0.5, left), max_rows=1)
        if found.ok and found.rows:
            return True
    return False


def unrelated_question(question: str, schema, db=None) -> Unanswerable | None:
    """:class:`Unanswerable` when ``question`` names something and nothing of ``schema``."""
    words = content_stems(question)
    if not words or schema is None or not schema.tables:
        return None
    stems = schema_stems(schema)
    if any(_relates(w, stems) for w in words):
        return None
    written = [w for w in question_words(question)[1:] if w[:1].isupper()]
    if written or _QUOTED.search(question):
        return None  # a name or a number may be a stored value a synonym leads to
    if db is not None and stored_anywhere(words, db):
        return None
    shown = [w for w in _as_written(question, words)]
    return Unanswerable(words=tuple(shown), tables=tuple(t.name for t in schema.tables))


def _as_written(question: str, stems: list[str]) -> list[str]:
    """The question's own spelling of each content stem, in order."""
    seen, out = set(), []
    for word in question_words(question):
        low = word.casefold().strip("'")
        s = stem(low)
        if s in stems and s not in seen and low not in STOP:
            seen.add(s)
            out.append(low)
    return out


def unanswerable_sql(question: str, sql: str | None, result: dict | None,
                     schema) -> Unanswerable | None:
    """:class:`Unanswerable` when the final SQL shows the database holds nothing for the
    question: it reads no table, or fails on a table like none of the schema's."""
    if not sql or schema is None:
        return None
    tables = tuple(t.name for t in schema.tables)
    error = (result or {}).get("error") or ""
    missing = _NO_SUCH_TABLE.search(error) if result and not result.get("ok") else None
    if missing:
        name = missing.group(1).strip("\"'`[]")
        stems = schema_stems(schema)
        parts = name_stems(name)
        if not any(_relates(p, stems) for p in parts if len(p) >= 3):
            return Unanswerable(words=(name,), tables=tables, reason="missing table")
        return None
    if result and result.get("ok") and not _reads_a_table(sql):
        words = _as_written(question, content_stems(question))
        return Unanswerable(words=tuple(words), tables=tables, reason="constant")
    return None


def _reads_a_table(sql: str) -> bool:
    """Whether ``sql`` reads any table (a constant ``SELECT 'x'`` reads none)."""
    tree = parse_statement(sql)
    if not isinstance(tree, (exp.Select, exp.SetOperation)):
        return True  # not one query sqlglot understood: nothing to conclude
    return any(True for _ in tree.find_all(exp.Table))
