"""SQL as text: the comparison that decides R³'s consensus, and the diff the UI shows per round.

The paper ends the negotiation when the SQL-Writer returns "the same SQL query as in the previous
round". A small model often re-types the same query with other spacing, keyword case or a trailing
semicolon, so "the same" is judged on a normalized form, not on the raw characters.
"""

from __future__ import annotations

import difflib
import re

import sqlglot
import sqlparse

_SPACES = re.compile(r"\s+")


def normalize_sql(sql: str) -> str:
    """A canonical form: same query, same string (spacing, keyword case, final ';' ignored).

    String literals keep their case, because ``'Dutch'`` and ``'dutch'`` are different queries.
    """
    text = (sql or "").strip().rstrip(";").strip()
    if not text:
        return ""
    try:
        canonical = sqlglot.transpile(text, read="sqlite", write="sqlite")
    except Exception:  # not parseable: compare on collapsed whitespace
        return _SPACES.sub(" ", text)
    return "; ".join(canonical) if canonical else _SPACES.sub(" ", text)


def same_sql(a: str | None, b: str | None) -> bool:
    return normalize_sql(a or "") == normalize_sql(b or "")


def format_sql(sql: str) -> str:
    """One clause per line, keywords upper case: the layout both sides of a diff share."""
    return sqlparse.format((sql or "").strip(), reindent=True, keyword_case="upper").strip()


def sql_diff(before: str | None, after: str | None) -> str:
    """A unified diff of the formatted SQL before and after a revision ("" when unchanged)."""
    lines = difflib.unified_diff(format_sql(before or "").splitlines(),
                                 format_sql(after or "").splitlines(),
                                 fromfile="before", tofile="after", lineterm="")
    return "\n".join(lines)
