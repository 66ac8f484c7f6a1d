"""The tables around a name error, for a repair prompt (R³'s ``fix_prompt="tables"``,
MAC-SQL's ``refiner_prompt="tables"``).

SQLite's message and its hint name the table the failing alias stands for and the tables that
have the missing column. On a 1.5B model that was not enough when the right table was already in
the query under another alias: the writer (R³) or the Refiner (MAC-SQL) kept the wrong alias and
returned the SQL that had just failed. This block says it in the query's own terms -- every
table the SQL uses with the names it gives it and all its columns, which alias to write for the
missing name or which table to join, and the keys that join these tables. It only reads the
schema and the query; it never guesses what the question meant.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from agents.rules.error_hints import (NO_SUCH_COLUMN, NO_SUCH_TABLE, missing_name, name_error_match,
    query_tables)

MAX_OTHER_TABLES = 3
MAX_KEYS = 8


def name_error_context(error: str | None, sql: str, schema) -> str:
    """The block for a name error in ``sql``, or "" for any other error."""
    if not error or schema is None or not getattr(schema, "tables", None):
        return ""
    match = name_error_match(error)
    if match is None:
        return ""
    missing = _unquote(missing_name(match))
    qualifier = _unquote(match.groupdict().get("qualifier"))
    used = _used_tables(query_tables(sql, schema))
    lines: list[str] = []
    if used:
        lines.append("The tables this SQL uses, with all their columns:")
        lines += [f"- {table}{''.join(f' AS {n}' for n in names)}: "
                  f"{', '.join(schema.column_names(table))}" for table, names in used.items()]
    owners = [t.name for t in schema.tables if t.column(missing) is not None]
    in_join = match.re is NO_SUCH_COLUMN and _in_join_condition(sql, qualifier, missing)
    if in_join:
        lines.append(f"{qualifier + '.' if qualifier else ''}{missing} is written in a join "
                     "condition: join the tables on columns they have (the keys below).")
    for table in owners:
        if table not in used:
            continue
        column = schema.table(table).column(missing).name
        names = used[table] or [table]
        where = f"which this SQL names {' and '.join(names)}"
        if in_join:
            lines.append(f"{column} is a column of {table}, {where}.")
        else:
            lines.append(f"{column} is a column of {table}, {where}: write "
                         f"{' or '.join(f'{n}.{column}' for n in names)}.")
    for table in [t for t in owners if t not in used][:MAX_OTHER_TABLES]:
        column = schema.table(table).column(missing).name
        lines.append(f"{column} is a column of {table}, which this SQL does not use: join it if "
                     f"the question needs it. {table} has the columns: "
                     f"{', '.join(schema.column_names(table))}")
    if not owners and match.re is NO_SUCH_TABLE and schema.table(missing) is None:
        lines.append(f"There is no table {missing}: the tables are "
                     f"{', '.join(schema.table_names())}.")
    keys = _keys(schema, list(used) + [t for t in owners if t not in used][:MAX_OTHER_TABLES])
    if keys:
        lines.append("Keys that join these tables: " + "; ".join(keys) + ".")
    if lines:
        lines.append("Use only the columns listed for each table.")
    return "\n".join(lines) + "\n" if lines else ""


def _unquote(name: str | None) -> str | None:
    return name.strip("`\"'[]") if name else name


def _used_tables(aliases: dict[str, str]) -> dict[str, list[str]]:
    """Table -> the names the query gives it (its aliases), in the query's order."""
    used: dict[str, list[str]] = {}
    for name, table in aliases.items():
        names = used.setdefault(table, [])
        if name.casefold() != table.casefold():
            names.append(name)
    return used


def _in_join_condition(sql: str, qualifier: str | None, column: str) -> bool:
    """Whether ``qualifier.column`` is written only in JOIN ... ON conditions of ``sql``."""
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
    except Exception:
        return False
    places = [c for c in tree.find_all(exp.Column)
              if c.name.casefold() == column.casefold()
              and (c.table or "").casefold() == (qualifier or "").casefold()]
    return bool(places) and all(isinstance(c.find_ancestor(exp.Join, exp.Select), exp.Join)
                                for c in places)


def _keys(schema, tables: list[str]) -> list[str]:
    """``a.x = b.y`` for each foreign key with an end in ``tables`` (the tables first)."""
    wanted = {t.casefold() for t in tables}
    both, one = [], []
    for fk in schema.foreign_keys:
        ends = {fk.table.casefold(), fk.ref_table.casefold()} & wanted
        if not ends:
            continue
        text = f"{fk.table}.{fk.column} = {fk.ref_table}.{fk.ref_column}"
        target = both if len(ends) == 2 or fk.table.casefold() == fk.ref_table.casefold() else one
        if text not in both + one:
            target.append(text)
    return (both + one)[:MAX_KEYS]
