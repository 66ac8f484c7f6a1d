"""A sum counted more than once: ``SUM`` of a column joined to a table holding several rows
for each of its rows.

``SELECT SUM(i.total) FROM invoices i JOIN invoice_lines l ON l.invoice_id = i.id`` adds each
invoice's total once per line: the join repeats the invoice. A small model writes such joins
when a filter or a grouping sits on the other table. The check reads the query's joins with
sqlglot and the schema's foreign keys: a summed (or averaged) column of table T, joined on
T's key to a table U whose foreign key refers to it, where the data holds some T row with more
than one U row (one bounded query), and the query does not group by U's own key (one U row a
group). It reports; it does not rewrite.
"""

from __future__ import annotations

from sqlglot import exp

from agents.answer.sqlshape import column_table, group_columns, outer_select
from agents.db.identifiers import quote_identifier
from agents.db.sqltext import select_tables


_MAX_CHECKS = 4  # foreign keys looked at in the data, at most


def _fold(name: str | None) -> str:
    return (name or "").casefold()


def fanout_doubt(sql: str, db, *, timeout: float) -> str | None:
    """Why a sum in ``sql`` counts rows more than once, or None."""
    select = outer_select(sql)
    if select is None or not select.args.get("joins"):
        return None
    schema = db.schema
    aliases = select_tables(select)
    tables = {_fold(t) for t in aliases.values()}
    grouped = {(_fold(column_table(c, aliases, schema)), _fold(c.name))
               for c in group_columns(select)}
    checked = 0
    for agg in select.find_all(exp.Sum, exp.Avg):
        if agg.parent_select is not select:
            continue  # a subquery's own sum: its FROM is not the outer joins
        for column in agg.find_all(exp.Column):
            table = column_table(column, aliases, schema)
            if table is None:
                continue
            for fk in schema.foreign_keys:
                if _fold(fk.ref_table) != _fold(table) or _fold(fk.table) not in tables or \
                        _fold(fk.table) == _fold(table):
                    continue
                many = schema.table(fk.table)
                if many is None or any((_fold(many.name), _fold(k)) in grouped
                                       for k in many.primary_key):
                    continue
                checked += 1
                if checked > _MAX_CHECKS:
                    return None
                if _several(db, fk.table, fk.column, timeout):
                    fn = "SUM" if isinstance(agg, exp.Sum) else "AVG"
                    return (f"{fn}({column.name}) counts each {table} row once for every "
                            f"{many.name} row joined to it ({many.name} holds several rows for "
                            f"one {table} row)")
    return None


def _several(db, table: str, column: str, timeout: float) -> bool:
    col = quote_identifier(column)
    result = db.execute(f"SELECT 1 FROM {quote_identifier(table)} WHERE {col} IS NOT NULL "
                        f"GROUP BY {col} HAVING COUNT(*) > 1 LIMIT 1", timeout=timeout,
                        max_rows=1)
    return bool(result.ok and result.rows)
