"""Turn SQLite's terse name errors into a hint that names what does exist.

"no such column: T1.Horsepower" tells a person, or a model, that something is wrong but not
what is right. A repair agent that only sees the error tends to guess the same wrong name again;
one that is told "T1 is car_names, whose columns are MakeId, Model, Make; Horsepower is a column
of cars_data" can fix the query. The hint is built from the database's own schema and the
failing query's table aliases; it never guesses what the question meant.

Only name errors get a hint (no such table, no such column, ambiguous column); every other error
is left as SQLite wrote it. :func:`explain_error` returns None when it has nothing to add.
"""

from __future__ import annotations

import difflib
import re

import sqlglot
from sqlglot import exp

MAX_COLUMNS_LISTED = 40
MAX_TABLES_LISTED = 60
CLOSE_MATCH_CUTOFF = 0.6

_NO_COLUMN = re.compile(r"no such column:\s*(?:(?P<qualifier>[^\s.]+)\.)?(?P<column>\S+)", re.I)
_NO_TABLE = re.compile(r"no such table:\s*(?:main\.)?(?P<table>\S+)", re.I)
_AMBIGUOUS = re.compile(r"ambiguous column name:\s*(?P<column>\S+)", re.I)


def explain_error(error: str | None, sql: str, schema) -> str | None:
    """A short hint for a name error in ``sql`` against ``schema``, or None.

    ``schema`` is a :class:`agents.schema.Schema`. The hint lists the real names the failing
    name could have meant: the columns of the table an alias stands for, the tables that do have
    the column, and the closest spellings.
    """
    if not error or schema is None or not getattr(schema, "tables", None):
        return None
    match = _NO_COLUMN.search(error)
    if match:
        return _no_such_column(_strip_quotes(match.group("qualifier")),
                               _strip_quotes(match.group("column")), sql, schema)
    match = _NO_TABLE.search(error)
    if match:
        return _no_such_table(_strip_quotes(match.group("table")), schema)
    match = _AMBIGUOUS.search(error)
    if match:
        return _ambiguous(_strip_quotes(match.group("column")), sql, schema)
    return None


def query_tables(sql: str, schema) -> dict[str, str]:
    """Alias (or bare table name), as the query writes it, -> the schema's table name.

    Names that are not tables of the schema (CTEs, subquery aliases) are left out; a query
    sqlglot cannot parse gives an empty map.
    """
    try:
        trees = sqlglot.parse(sql, read="sqlite")
    except Exception:  # a query that does not parse still gets the table-level hints
        return {}
    found: dict[str, str] = {}
    for tree in trees:
        if tree is None:
            continue
        for table in tree.find_all(exp.Table):
            real = schema.table(table.name) if table.name else None
            if real is None:
                continue
            for name in (table.name, table.alias):
                if name and not any(k.casefold() == name.casefold() for k in found):
                    found[name] = real.name
    return found


def _lookup(aliases: dict[str, str], name: str) -> str | None:
    wanted = name.casefold()
    return next((t for a, t in aliases.items() if a.casefold() == wanted), None)


def _no_such_column(qualifier: str | None, column: str, sql: str, schema) -> str | None:
    aliases = query_tables(sql, schema)
    lines: list[str] = []
    owners = _tables_with_column(schema, column)
    search_everywhere = qualifier is None
    if qualifier:
        table_name = _lookup(aliases, qualifier)
        table = schema.table(table_name or qualifier)
        if table is None:
            lines.append(f"{qualifier} is not a table or alias of this query"
                         + (f"; its tables are {_alias_list(aliases)}." if aliases else "."))
        else:
            stands = f"{qualifier} is table {table.name}" if qualifier.casefold() != \
                table.name.casefold() else f"Table {table.name}"
            lines.append(f"{stands}, whose columns are: {_names(table.column_names())}.")
            close = _close(column, table.column_names())
            if close:
                lines.append(f"Closest columns of {table.name}: {', '.join(close)}.")
            search_everywhere = not close
    else:
        in_query = sorted(set(aliases.values()), key=str.casefold)
        for name in in_query:
            table = schema.table(name)
            lines.append(f"Table {table.name} has columns: {_names(table.column_names())}.")
    if owners:
        lines.append(f"Column {column} is in table{'s' if len(owners) > 1 else ''} "
                     f"{', '.join(owners)}.")
    elif search_everywhere:
        everywhere = [f"{t.name}.{c}" for t in schema.tables for c in t.column_names()]
        close = _close(column, everywhere, key=lambda n: n.split(".", 1)[1])
        if close:
            lines.append(f"No table has a column {column}; closest: {', '.join(close)}.")
        else:
            lines.append(f"No table has a column {column}.")
    return " ".join(lines) or None


def _no_such_table(name: str, schema) -> str:
    tables = schema.table_names()
    lines = [f"There is no table {name}."]
    close = _close(name, tables)
    if close:
        lines.append(f"Closest tables: {', '.join(close)}.")
    owners = _tables_with_column(schema, name)
    if owners:
        lines.append(f"{name} is a column of {', '.join(owners)}.")
    lines.append(f"The tables are: {_names(tables, MAX_TABLES_LISTED)}.")
    return " ".join(lines)


def _ambiguous(column: str, sql: str, schema) -> str | None:
    in_query = set(query_tables(sql, schema).values())
    owners = [t for t in _tables_with_column(schema, column) if t in in_query]
    if len(owners) < 2:
        return None
    return (f"Column {column} is in several tables of the query ({', '.join(owners)}); "
            f"prefix it with the table name or its alias.")


def _tables_with_column(schema, column: str) -> list[str]:
    return [t.name for t in schema.tables if t.column(column) is not None]


def _close(name: str, candidates: list[str], key=lambda n: n) -> list[str]:
    """Up to three candidates spelled most like ``name`` (case- and underscore-insensitive)."""
    def norm(text: str) -> str:
        return text.casefold().replace("_", "").replace(" ", "")

    wanted = norm(name)
    scored = []
    for candidate in candidates:
        ratio = difflib.SequenceMatcher(None, wanted, norm(key(candidate))).ratio()
        if ratio >= CLOSE_MATCH_CUTOFF:
            scored.append((-ratio, candidate))
    return [c for _, c in sorted(scored)[:3]]


def _names(names: list[str], limit: int = MAX_COLUMNS_LISTED) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", ... ({len(names) - limit} more)" if len(names) > limit else "")


def _alias_list(aliases: dict[str, str]) -> str:
    """'car_names AS T1, cars_data': each table once, with the aliases the query gives it."""
    parts = []
    for table in sorted(set(aliases.values()), key=str.casefold):
        named = [a for a, t in aliases.items() if t == table and a.casefold() != table.casefold()]
        parts.append(table + "".join(f" AS {a}" for a in named))
    return ", ".join(parts)


def _strip_quotes(name: str | None) -> str | None:
    if name is None:
        return None
    return name.strip().strip("`\"'[]")
