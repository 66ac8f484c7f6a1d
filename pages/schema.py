"""Schema: tables, columns, keys, row counts, example values, first rows and a relation diagram.

Names come from the database, so wherever they reach Markdown (captions, messages) they pass
through :func:`ui.format.md_text`; tables and the diagram show them as plain text already.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from ui import state as ui_state
from ui.bootstrap import run_through_app
from ui.widgets.db_panel import database_picker
from ui.widgets.diagram import schema_dot
from ui.format import human_size, md_text, preview_frame

MAX_DIAGRAM_TABLES = 40  # more boxes than this make an unreadable diagram and a slow page


def matching(schema, text: str) -> list:
    """Tables whose name, or one of whose columns' names, holds ``text`` (case ignored)."""
    wanted = text.strip().casefold()
    if not wanted:
        return list(schema.tables)
    return [t for t in schema.tables if wanted in t.name.casefold()
            or any(wanted in c.name.casefold() for c in t.columns)]


def linked_tables(schema, found: list, room: int) -> list[str]:
    """Up to ``room`` names of tables outside ``found`` that a foreign key links to one of
    ``found``, so a filtered diagram still draws the relations of what was found."""
    inside = {t.name.casefold() for t in found}
    linked: dict[str, str] = {}
    for fk in schema.foreign_keys:
        for near, far in ((fk.table, fk.ref_table), (fk.ref_table, fk.table)):
            table = schema.table(far)
            if (near.casefold() in inside and far.casefold() not in inside
                    and table is not None):
                linked.setdefault(table.name.casefold(), table.name)
    return list(linked.values())[:max(0, room)]


run_through_app()
st.title("Schema")
db_key, db = database_picker("schema")
if db is not None:
    schema = db.schema
    st.caption(f"**{md_text(db.name)}** · {human_size(db.size_bytes)} · "
               f"{len(schema.tables)} tables · "
               f"{len(schema.foreign_keys)} foreign keys")
    if not schema.tables:
        st.info("This database has no tables.")
    else:
        found = schema.tables
        if len(schema.tables) > MAX_DIAGRAM_TABLES:
            query = st.text_input("Find tables", key="schema_filter",
                                  placeholder="part of a table or column name")
            found = matching(schema, query)
            st.caption(f"{len(found):,} of {len(schema.tables):,} tables match.")
        if not found:
            st.info("No table or column name holds that text.")
            st.stop()
        st.subheader("Relations")
        if not schema.foreign_keys:
            st.caption("No foreign keys are declared, so there is no relation diagram.")
        elif len(found) > MAX_DIAGRAM_TABLES:
            st.caption(f"The diagram shows at most {MAX_DIAGRAM_TABLES} tables: narrow the "
                       f"search above to draw their relations.")
        else:
            linked = (linked_tables(schema, found, MAX_DIAGRAM_TABLES - len(found))
                      if len(found) < len(schema.tables) else [])
            if linked:
                st.caption(f"Also drawn: the {len(linked)} table(s) a foreign key links to "
                           f"them.")
            shown = schema.subset({name: "keep_all" for name in
                                   [t.name for t in found] + linked})
            # the chart's own size, shrunk to the page when wider: stretched to the page, a
            # few unlinked boxes stacked in one column grew to thousands of pixels
            st.graphviz_chart(schema_dot(shown), width="content")
        st.subheader("Tables")
        fk_of = {(fk.table.lower(), fk.column.lower()): f"→ {fk.ref_table}.{fk.ref_column}"
                 for fk in schema.foreign_keys}
        names = [t.name for t in found]
        chosen = st.selectbox("Table", names, key="schema_table")
        table = schema.table(chosen)
        st.caption(f"{table.row_count_label} rows · {len(table.columns)} columns · primary key: "
                   f"{md_text(', '.join(table.primary_key)) or 'none'}")
        # a static table, so long example values and descriptions wrap instead of being cut;
        # examples are kept apart by " · " (a value may hold a comma), and the description
        # column shows only when some column has one
        described = any(c.description for c in table.columns)
        st.table(pd.DataFrame([{
            "column": c.name,
            "type": c.type or "",
            "key": " ".join(filter(None, ["PK" if c.primary_key else "",
                                          fk_of.get((table.name.lower(), c.name.lower()), "")])),
            "not null": "yes" if c.not_null else "",
            "examples": " · ".join(map(str, c.examples or [])),
            **({"description": c.description or ""} if described else {}),
        } for c in table.columns]), hide_index=True)
        st.markdown("**First rows**")
        preview = db.table_preview(table.name, limit=20,
                                    timeout=ui_state.exec_limits().timeout)
        if preview.ok:
            st.dataframe(preview_frame(preview.preview(rows=20)), hide_index=True,
                         width="stretch")
            if preview.cells_cut or preview.truncated_reason == "bytes":
                st.caption(md_text(preview.limit_note()))
        else:
            st.error(md_text(f"Could not read {table.name}: {preview.error}"))
        with st.expander("All tables at a glance"):
            st.dataframe(pd.DataFrame([{"table": t.name,
                                        "rows": t.row_count if t.row_count >= 0 else None,
                                        "columns": ", ".join(c.name for c in t.columns)}
                                       for t in found]), hide_index=True,
                         width="stretch")
