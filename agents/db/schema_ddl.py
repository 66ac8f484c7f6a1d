"""A schema as ``CREATE TABLE`` text, in each layout the agents' prompts use.

One renderer serves every prompt that shows DDL, so how a name is quoted or a key is written is
decided once. The prompts still differ, and must keep differing exactly as they do (benchmark
results depend on the bytes a model reads), so what varies is an explicit :class:`DDLLayout`:
where the primary key goes, whether ``NOT NULL`` is written, and how example values are shown:
a ``-- e.g. ...`` comment per column (values say how literals are spelled), or one
``/* value examples: ... */`` comment after each statement, and which columns and values get them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from agents.db.identifiers import sql_name, sql_string

if TYPE_CHECKING:  # the schema model renders through this module; types only
    from agents.db.schema import Schema, Table


@dataclass(frozen=True)
class DDLLayout:
    """How ``CREATE TABLE`` text is laid out; the defaults give :meth:`Schema.render_ddl`'s form.

    ``examples`` places example values: ``"none"``; ``"column"``, a ``-- e.g. 'a', 3`` comment
    after each column's line (Python-style values, runs of blanks collapsed); ``"table"``, a
    ``/* value examples: col: 'a', 'b'; ... */`` comment after each statement (SQL literals).
    The other ``*examples*`` and ``max_*`` fields choose which columns and values are shown.
    """

    inline_primary_key: bool = False  # a one-column key written on its column, not at the end
    primary_key_last: bool = False    # the PRIMARY KEY (...) line after the FOREIGN KEY lines
    not_null: bool = True             # write NOT NULL where a column has it
    reference_gap: str = " "          # between REFERENCES <table> and (<column>)
    statement_gap: str = "\n\n"       # between two statements
    examples: Literal["none", "column", "table"] = "none"
    key_examples: bool = True         # False: primary- and foreign-key columns get none (ids)
    text_examples_only: bool = False  # only string values
    max_value_chars: int | None = None  # longer strings are left out (free text, not a literal)
    max_examples: int | None = None   # at most this many values per column

    def __post_init__(self) -> None:
        if self.examples not in ("none", "column", "table"):
            raise ValueError(f"unknown placement of examples: {self.examples!r}")


PLAIN = DDLLayout()


def render_create_tables(schema: "Schema", layout: DDLLayout = PLAIN) -> str:
    """``CREATE TABLE`` statements, with primary and foreign keys, for all of ``schema``'s tables.

    A view is written as a table of its columns: that is all a query needs to know of it.
    Per-table comments are left out when a statement itself holds a blank line (a name with
    line breaks): a reader could then not tell which statement a comment belongs to.
    """
    keys = _key_columns(schema)
    references: dict[str, list] = {}
    for fk in schema.foreign_keys:
        references.setdefault(fk.table, []).append(fk)
    statements = [_statement(table, layout, keys, references.get(table.name, []))
                  for table in schema.tables]
    if layout.examples == "table" and not any("\n\n" in s for s in statements):
        statements = [statement + _table_comment(table, layout, keys)
                      for statement, table in zip(statements, schema.tables)]
    return layout.statement_gap.join(statements)


def _key_columns(schema: "Schema") -> dict[str, set[str]]:
    """Per table, the casefolded names of its primary- and foreign-key columns (what
    :meth:`Schema.key_columns` gives for one table), for all tables in one pass."""
    by_name = {t.name.casefold(): t.name for t in schema.tables}
    keys = {t.name: {c.casefold() for c in t.primary_key} for t in schema.tables}
    for fk in schema.foreign_keys:
        for table, column in ((fk.table, fk.column), (fk.ref_table, fk.ref_column)):
            name = by_name.get(table.casefold())
            if name is not None:
                keys[name].add(column.casefold())
    return keys


def _statement(table: "Table", layout: DDLLayout, keys: dict[str, set[str]],
               foreign_keys: list) -> str:
    inline_key = layout.inline_primary_key and len(table.primary_key) == 1
    lines: list[tuple[str, str]] = []  # (clause, comment)
    for column in table.columns:
        clause = sql_name(column.name) + (f" {column.type}" if column.type else "")
        if inline_key and column.primary_key:
            clause += " PRIMARY KEY"
        if layout.not_null and column.not_null:
            clause += " NOT NULL"
        comment = ""
        if layout.examples == "column":
            comment = _column_comment(_shown_examples(table, column, layout, keys))
        lines.append((clause, comment))
    key = [] if inline_key or not table.primary_key else [(
        "PRIMARY KEY (" + ", ".join(sql_name(c) for c in table.primary_key) + ")", "")]
    references = [(f"FOREIGN KEY ({sql_name(fk.column)}) REFERENCES {sql_name(fk.ref_table)}"
                   f"{layout.reference_gap}({sql_name(fk.ref_column)})", "")
                  for fk in foreign_keys]
    lines += references + key if layout.primary_key_last else key + references
    body = [f"  {clause}{',' if i < len(lines) - 1 else ''}" + (f" -- {comment}" if comment else "")
            for i, (clause, comment) in enumerate(lines)]
    return f"CREATE TABLE {sql_name(table.name)} (\n" + "\n".join(body) + "\n);"


def _shown_examples(table: "Table", column, layout: DDLLayout, keys: dict[str, set[str]]) -> list:
    if not layout.key_examples and column.name.casefold() in keys[table.name]:
        return []  # ids: their values say nothing
    values = list(column.examples or [])
    if layout.text_examples_only:
        values = [v for v in values if isinstance(v, str)]
    if layout.max_value_chars is not None:
        values = [v for v in values if not isinstance(v, str) or len(v) <= layout.max_value_chars]
    return values if layout.max_examples is None else values[:layout.max_examples]


def _column_comment(values: list) -> str:
    if not values:
        return ""
    shown = [repr(v) if isinstance(v, str) else str(v) for v in values]
    return "e.g. " + ", ".join(" ".join(s.split()) for s in shown)


def _table_comment(table: "Table", layout: DDLLayout, keys: dict[str, set[str]]) -> str:
    parts = []
    for column in table.columns:
        values = _shown_examples(table, column, layout, keys)
        if values:
            parts.append(f"{column.name}: " + ", ".join(_literal(v) for v in values))
    return "\n/* value examples: " + "; ".join(parts) + " */" if parts else ""


def _literal(value: Any) -> str:
    return sql_string(value) if isinstance(value, str) else repr(value)
