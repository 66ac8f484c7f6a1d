"""The foreign-key diagram of a schema as Graphviz DOT text (rendered in the browser, offline)."""

from __future__ import annotations

from html import escape

MAX_COLUMNS_SHOWN = 14


def dot_id(name: str) -> str:
    """A DOT identifier for any table name: always quoted, quotes and backslashes escaped."""
    return '"' + str(name).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _html(text: object) -> str:
    return escape(str(text), quote=True)


def _table_label(table, fk_columns: set[str]) -> str:
    rows = [f'<TR><TD BGCOLOR="#dbe7f5"><B>{_html(table.name)}</B> '
            f'<FONT POINT-SIZE="9">({table.row_count:,} rows)</FONT></TD></TR>']
    pk = {c.lower() for c in table.primary_key}
    for column in table.columns[:MAX_COLUMNS_SHOWN]:
        tags = " ".join(t for t, on in (("PK", column.name.lower() in pk or column.primary_key),
                                        ("FK", column.name.lower() in fk_columns)) if on)
        tag = f'<FONT COLOR="#b05a00" POINT-SIZE="8">{tags}</FONT>&#160;' if tags else ""
        rows.append(f'<TR><TD ALIGN="LEFT">{tag}{_html(column.name)} '
                    f'<FONT COLOR="#777777">{_html(column.type or "")}</FONT></TD></TR>')
    hidden = len(table.columns) - MAX_COLUMNS_SHOWN
    if hidden > 0:
        rows.append(f'<TR><TD ALIGN="LEFT"><I>… {hidden} more</I></TD></TR>')
    return '<<TABLE BORDER="0" CELLBORDER="1" CELLSPACING="0" CELLPADDING="3">' + \
        "".join(rows) + "</TABLE>>"


def schema_dot(schema) -> str:
    """Tables as boxes listing their columns; one arrow per foreign key, child to parent."""
    fk_columns: dict[str, set[str]] = {}
    for fk in schema.foreign_keys:
        fk_columns.setdefault(fk.table.lower(), set()).add(fk.column.lower())
    lines = ["digraph schema {", "  rankdir=LR;", '  graph [fontname="Helvetica"];',
             '  node [shape=plaintext, fontname="Helvetica", fontsize=10];',
             '  edge [fontname="Helvetica", fontsize=9, color="#5b7fa6"];']
    for table in schema.tables:
        label = _table_label(table, fk_columns.get(table.name.lower(), set()))
        lines.append(f"  {dot_id(table.name)} [label={label}];")
    known = {t.name.lower(): t.name for t in schema.tables}
    for fk in schema.foreign_keys:
        child, parent = known.get(fk.table.lower()), known.get(fk.ref_table.lower())
        if child is None or parent is None:
            continue
        label = dot_id(f"{fk.column} -> {fk.ref_column}")
        lines.append(f"  {dot_id(child)} -> {dot_id(parent)} [label={label}];")
    lines.append("}")
    return "\n".join(lines)
