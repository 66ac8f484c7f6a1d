"""SQL as text, in one place: layout, "the same SQL", equal results and plain-text tables.

Every view (the pages, the CLI, the trace of a run) and every agent that compares two queries
uses these functions, so "unchanged" means one thing everywhere and a query shown to the user is
laid out the same way on every screen.

- :func:`format_sql` lays SQL out one clause per line and upper-cases *keywords only*. sqlparse's
  own ``keyword_case`` would also upper-case identifiers it happens to know as keywords in some
  dialect (``FROM events`` became ``FROM EVENTS``), and formatted SQL is what the user accepts.
- :func:`same_sql` compares queries on a canonical form (spacing, keyword case, a final ``;``
  ignored); string literals keep their case, since ``'France'`` and ``'france'`` differ.
- :func:`results_equal` is the evaluation metric's equality (:func:`agents.evaluation.metric.
  result_eq`, rows as multisets, columns in any order), applied to two result previews.
- :func:`text_table` draws rows for a terminal with ``tabulate``.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterable, Sequence

import sqlglot
from sqlglot import exp
import sqlparse
from sqlparse import tokens as T
from tabulate import tabulate

from agents.evaluation.metric import result_eq

_SPACES = re.compile(r"\s+")

# Words upper-cased when sqlparse reads them as keywords. Only the query vocabulary of SQLite:
# words that are also common column names (first, last, row, key, year, name, ...) stay as
# written, because upper-casing an identifier changes what the reader thinks it is.
_KEYWORDS = frozenset("""
    select distinct all from where group by having order limit offset union intersect except
    with recursive as on using join inner left right full outer cross natural and or not in is
    null like glob between case when then else end exists cast collate escape asc desc values
    over partition filter window rows range preceding following unbounded nulls
""".split())


def format_sql(sql: str | None) -> str:
    """One clause per line, keywords upper case, identifiers and literals exactly as written."""
    text = (sql or "").strip()
    if not text:
        return ""
    try:
        laid_out = sqlparse.format(text, reindent=True)
        statement = sqlparse.parse(laid_out)
    except Exception:  # formatting is cosmetic; never lose the user's SQL over it
        return text
    parts = []
    for token in (t for s in statement for t in s.flatten()):
        value = token.value
        if token.ttype in T.Keyword and " ".join(value.lower().split()) in _KEYWORDS | {
                "group by", "order by", "partition by", "left join", "inner join",
                "left outer join", "cross join", "natural join", "right join", "full join",
                "union all", "outer join", "full outer join", "right outer join"}:
            value = value.upper()
        parts.append(value)
    return "".join(parts).strip()


def normalize_sql(sql: str | None) -> str:
    """A canonical form: the same query gives the same string, whatever its layout."""
    text = (sql or "").strip().rstrip(";").strip()
    if not text:
        return ""
    try:
        canonical = sqlglot.transpile(text, read="sqlite", write="sqlite")
    except Exception:  # not parseable: compare on collapsed whitespace
        return _SPACES.sub(" ", text)
    return "; ".join(canonical) if canonical else _SPACES.sub(" ", text)


def same_sql(a: str | None, b: str | None) -> bool:
    """Whether two texts are the same query (layout, keyword case and a final ';' aside)."""
    return normalize_sql(a) == normalize_sql(b)


def sql_diff(before: str | None, after: str | None) -> str:
    """A unified diff of the formatted SQL before and after a revision ("" when unchanged)."""
    lines = difflib.unified_diff(format_sql(before).splitlines(), format_sql(after).splitlines(),
                                 fromfile="before", tofile="after", lineterm="")
    return "\n".join(lines)


def results_equal(a: dict | None, b: dict | None, *, order_matters: bool = False,
                  float_digits: int | None = 6) -> bool:
    """Whether two result previews (``ExecResult.preview()``) are the same result.

    Both must have run, with equal row counts, and a result cut at the row cap only equals
    another cut result (the rows beyond the cap are unknown). Then the metric's own comparison
    of the rows: column order free, row order too unless ``order_matters`` (the evaluation's
    rule when the queries sort their output).
    Floats are first rounded to ``float_digits`` decimals, so ``AVG(x)`` and ``SUM(x)/COUNT(x)``
    agree despite float noise; ``float_digits=None`` compares exactly, as the metric does.
    """
    if not (a and b and a.get("ok") and b.get("ok")):
        return False
    if a.get("row_count") != b.get("row_count"):
        return False
    if bool(a.get("truncated")) != bool(b.get("truncated")):
        return False
    rows_a, rows_b = _rows(a, float_digits), _rows(b, float_digits)
    if not rows_a and not rows_b:
        return len(a.get("columns") or []) == len(b.get("columns") or [])
    return result_eq(rows_a, rows_b, order_matters)


def _rows(preview: dict, float_digits: int | None) -> list[tuple]:
    return [tuple(_normal(v, float_digits) for v in row) for row in preview.get("rows") or []]


def _normal(value: Any, float_digits: int | None) -> Any:
    """Equal-looking values compare equal: True == 1, 2 == 2.0, floats rounded when asked."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and float_digits is not None:
        rounded = round(value, float_digits)
        return int(rounded) if rounded.is_integer() else rounded
    return value


def text_cell(value: Any, width: int = 60) -> str:
    """One value on one line, ``NULL`` for None, cut to ``width`` characters."""
    text = "NULL" if value is None else " ".join(str(value).split())
    return text if len(text) <= width else text[: width - 3] + "..."


def text_table(columns: Sequence[Any], rows: Iterable[Sequence[Any]], *, width: int = 60,
               fmt: str = "simple") -> str:
    """Rows as an aligned plain-text table (``tabulate``), every cell on one line."""
    cells = [[text_cell(v, width) for v in row] for row in rows]
    return tabulate(cells, headers=[text_cell(c, width) for c in columns], tablefmt=fmt,
                    disable_numparse=True)


def result_text(preview: dict, max_rows: int, *, width: int = 60) -> str:
    """A result preview as a text table with a line saying how many rows there are."""
    rows = preview.get("rows") or []
    shown = rows[:max_rows]
    table = text_table(preview.get("columns") or [], shown, width=width)
    total = preview.get("row_count", len(rows))
    if len(shown) < total or preview.get("truncated"):
        more = "+" if preview.get("truncated") else ""
        tail = f"(truncated: showing {len(shown)} of {total}{more} rows)"
    else:
        tail = f"({total} row{'s' if total != 1 else ''})"
    return f"{table}\n{tail}"


def parse_statement(sql: str | None) -> exp.Expression | None:
    """The one statement ``sql`` holds, parsed as SQLite; None for none, several, or SQL sqlglot
    cannot read (which is then the database's to judge)."""
    if not sql or not sql.strip():
        return None
    try:
        trees = [t for t in sqlglot.parse(sql, read="sqlite") if t is not None]
    except Exception:  # sqlglot's errors are of several kinds; none is ours to raise
        return None
    return trees[0] if len(trees) == 1 else None


def select_sources(select: exp.Select) -> list[exp.Expression]:
    """This SELECT's own FROM and joined sources (tables, subqueries), not those of the queries
    around or inside it."""
    found = select.args.get("from_") or select.args.get("from")  # the key's name by version
    sources = [found.this] if found is not None else []
    return sources + [join.this for join in select.args.get("joins") or []]


def select_tables(select: exp.Select) -> dict[str, str]:
    """Alias (or name), casefolded, -> table name, for the tables among this SELECT's own
    sources (its subqueries left out)."""
    return {source.alias_or_name.casefold(): source.name for source in select_sources(select)
            if isinstance(source, exp.Table)}


def select_source_names(select: exp.Select) -> set[str]:
    """The names (aliases, or table names) a column of this SELECT may be qualified with: its
    own FROM and joins, not those of the queries around or inside it."""
    names = set()
    for source in select_sources(select):
        if source.alias_or_name:
            names.add(source.alias_or_name.casefold())
        if isinstance(source, exp.Table):
            names.add(source.name.casefold())
    return names
