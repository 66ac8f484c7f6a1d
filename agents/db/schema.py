"""What a database contains, and the textual forms the agents see it in.

:mod:`agents.db.introspection` reads tables, views, columns, keys, row counts and a few example
values per column with bounded work, so a table of ten million rows costs about what a small one
does (:func:`agents.db.introspection.introspect` reads one from a local connection).
:class:`Schema` renders that as the MAC-SQL description (``# Table: t`` / ``[`` /
``(col, description. Value examples: [...].)``), as foreign-key lines and as ``CREATE TABLE``
text (laid out by :mod:`agents.db.schema_ddl`), for all tables or for a selection that keeps only
part of the schema.

Names are never trusted to be plain: every identifier that is not a simple word is quoted
(backticks in the MAC-SQL text, double quotes in DDL and in every query this module runs).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from agents.db.identifiers import backtick_name, macsql_name, readable_name, sql_string
from agents.db.schema_ddl import render_create_tables

BLOB_EXAMPLE = "<blob>"        # what a binary example value is shown as


@dataclass
class Column:
    name: str
    type: str = ""
    primary_key: bool = False
    not_null: bool = False
    examples: list = field(default_factory=list)
    description: str = ""

    @property
    def affinity(self) -> str:
        """SQLite's type affinity of the declared type (its rules, in their order: section 3.1
        of "Datatypes In SQLite"): how SQLite converts and compares the column's values."""
        declared = (self.type or "").upper()
        if "INT" in declared:
            return "INTEGER"
        if any(word in declared for word in ("CHAR", "CLOB", "TEXT")):
            return "TEXT"
        if not declared or "BLOB" in declared:
            return "BLOB"
        if any(word in declared for word in ("REAL", "FLOA", "DOUB")):
            return "REAL"
        return "NUMERIC"


@dataclass
class ForeignKey:
    """``table.column`` refers to ``ref_table.ref_column`` (one entry per column pair)."""

    table: str
    column: str
    ref_table: str
    ref_column: str


@dataclass
class Table:
    name: str
    columns: list[Column] = field(default_factory=list)
    row_count: int = -1  # -1 when unknown (never counted); 0 only for a table counted empty
    primary_key: list[str] = field(default_factory=list)
    is_view: bool = False
    row_count_estimated: bool = False  # True when counting took too long and this is max(rowid)

    def column(self, name: str) -> Column | None:
        """The column called ``name``, compared case-insensitively as SQLite does."""
        wanted = name.casefold()
        return next((c for c in self.columns if c.name.casefold() == wanted), None)

    def column_names(self) -> list[str]:
        return [c.name for c in self.columns]

    @property
    def row_count_label(self) -> str:
        """Row count for display: '1,234', '≈10,000,000' (estimated) or 'unknown'."""
        if self.row_count < 0:
            return "unknown"
        return ("≈" if self.row_count_estimated else "") + f"{self.row_count:,}"


def _format_example(value: Any) -> str:
    if isinstance(value, str):
        if value == BLOB_EXAMPLE:
            return value
        return sql_string(value)
    return repr(value)


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text if text.endswith(".") else text + "."


def _selection_decision(value: Any) -> str | list:
    """'keep_all', 'drop_all' or a list of column names, from a model's loosely typed value."""
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("keep_all", "drop_all"):
            return word
        return [value]
    if isinstance(value, (list, tuple)):
        return [v for v in value if isinstance(v, str)]
    return "drop_all"


@dataclass
class Schema:
    db_name: str
    tables: list[Table] = field(default_factory=list)
    foreign_keys: list[ForeignKey] = field(default_factory=list)

    # -- lookup ----------------------------------------------------------------------------------
    def table(self, name: str) -> Table | None:
        """The table (or view) called ``name``, compared case-insensitively."""
        wanted = name.casefold()
        return next((t for t in self.tables if t.name.casefold() == wanted), None)

    def table_names(self) -> list[str]:
        return [t.name for t in self.tables]

    def column_names(self, table: str) -> list[str]:
        found = self.table(table)
        return found.column_names() if found else []

    def key_columns(self, table: str) -> list[str]:
        """Primary-key and foreign-key columns of ``table``: what a join needs."""
        found = self.table(table)
        if found is None:
            return []
        keys = {c.casefold() for c in found.primary_key}
        for fk in self.foreign_keys:
            if fk.table.casefold() == found.name.casefold():
                keys.add(fk.column.casefold())
            if fk.ref_table.casefold() == found.name.casefold():
                keys.add(fk.ref_column.casefold())
        return [c for c in found.column_names() if c.casefold() in keys]

    # -- selection -------------------------------------------------------------------------------
    def subset(self, selection: dict | None) -> "Schema":
        """The part of the schema a selection keeps, as a new schema.

        ``selection`` maps table -> ``"keep_all"`` | ``"drop_all"`` | [column, ...]. Tables not
        named are left out; names that do not exist are ignored (they never reach a prompt);
        matching is case-insensitive. A table kept with a column list also keeps its primary-
        and foreign-key columns, as MAC-SQL does, so joins stay possible. ``None`` keeps all.
        """
        if selection is None:
            return Schema.from_dict(self.to_dict())
        decisions: dict[str, str | list] = {}
        for name, value in (selection or {}).items():
            table = self.table(str(name))
            if table is not None:
                decisions[table.name] = _selection_decision(value)
        kept_tables: list[Table] = []
        for table in self.tables:
            decision = decisions.get(table.name, "drop_all")
            if decision == "drop_all":
                continue
            if decision == "keep_all":
                wanted = {c.casefold() for c in table.column_names()}
            else:
                wanted = {c.casefold() for c in decision}
                wanted |= {c.casefold() for c in self.key_columns(table.name)}
            columns = [dataclasses.replace(c, examples=list(c.examples))
                       for c in table.columns if c.name.casefold() in wanted]
            if columns:
                kept_tables.append(dataclasses.replace(
                    table, columns=columns, primary_key=list(table.primary_key)))
        kept = {t.name for t in kept_tables}
        fks = [dataclasses.replace(fk) for fk in self.foreign_keys
               if fk.table in kept and fk.ref_table in kept]
        return Schema(db_name=self.db_name, tables=kept_tables, foreign_keys=fks)

    def with_first(self, names: list[str]) -> "Schema":
        """The same schema with the tables called ``names`` before the others, each group in
        this schema's order (the Schema Retriever writes the part of the schema questions
        about one application share first, :mod:`agents.retrieval.whole_part`)."""
        ahead = {n.casefold() for n in names}
        if not ahead:
            return self
        tables = ([t for t in self.tables if t.name.casefold() in ahead]
                  + [t for t in self.tables if t.name.casefold() not in ahead])
        return Schema(db_name=self.db_name, tables=tables, foreign_keys=list(self.foreign_keys))

    def _chosen(self, selection: dict | None) -> "Schema":
        return self if selection is None else self.subset(selection)

    # -- rendering -------------------------------------------------------------------------------
    def render_macsql(self, selection: dict | None = None) -> str:
        """The MAC-SQL schema description (paper, appendix A), one block per table."""
        blocks = []
        for table in self._chosen(selection).tables:
            lines = []
            for column in table.columns:
                text = _sentence(column.description or readable_name(column.name))
                if column.primary_key:
                    text += " Primary Key."
                if column.examples:
                    values = ", ".join(_format_example(v) for v in column.examples)
                    text += f" Value examples: [{values}]."
                lines.append(f"  ({macsql_name(column.name)}, {text})")
            blocks.append(f"# Table: {macsql_name(table.name)}\n[\n" + ",\n".join(lines) + "\n]")
        return "\n".join(blocks)

    def render_foreign_keys(self, selection: dict | None = None) -> str:
        """Foreign keys between the chosen tables, one ``a.`x` = b.`y``` line each."""
        lines: list[str] = []
        for fk in self._chosen(selection).foreign_keys:
            line = (f"{macsql_name(fk.table)}.{backtick_name(fk.column)} = "
                    f"{macsql_name(fk.ref_table)}.{backtick_name(fk.ref_column)}")
            if line not in lines:
                lines.append(line)
        return "\n".join(lines)

    def render_ddl(self, selection: dict | None = None) -> str:
        """``CREATE TABLE`` statements (with primary and foreign keys) for the chosen tables.

        A view is written as a table of its columns: that is all a query needs to know of it.
        Other layouts of the same text: :mod:`agents.db.schema_ddl`.
        """
        return render_create_tables(self._chosen(selection))

    # -- serialization ---------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "Schema":
        def build(kind, values: dict):
            names = {f.name for f in dataclasses.fields(kind)}
            return kind(**{k: v for k, v in values.items() if k in names})

        tables = []
        for t in data.get("tables", []):
            table = build(Table, {**t, "columns": [build(Column, c) for c in t.get("columns", [])]})
            table.primary_key = list(table.primary_key)
            tables.append(table)
        return cls(db_name=data.get("db_name", ""), tables=tables,
                   foreign_keys=[build(ForeignKey, fk) for fk in data.get("foreign_keys", [])])
