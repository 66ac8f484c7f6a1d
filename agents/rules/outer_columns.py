"""A subquery that selects a column of the outer query: SQL that runs and means nothing.

``SELECT name FROM museum WHERE museum_id NOT IN (SELECT museum_id FROM visitor)``, where
``visitor`` has no ``museum_id``, is not an error: SQL resolves the name in the outer query, so
the subquery returns the outer row's own ``museum_id`` once per visitor and the condition
compares each museum with itself (here: no museum is ever "not in"). In the benchmark traces a
small model wrote such subqueries when it took a column from the table beside the one that has
it; nothing failed, so nothing repaired them, and the answer came back empty or whole.

:func:`outer_column_in_subquery` finds a column in a subquery's SELECT list that belongs to an
outer query. A correlated reference in a subquery's WHERE (``WHERE v.museum_id =
m.museum_id``) is the usual, meaningful kind and is left alone. Names are resolved with
sqlglot's qualifier and scopes against the tables the query reads; SQL that cannot be read, or
names that cannot be resolved, are never reported.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import ScopeType, traverse_scope

from agents.rules.error_hints import resolve_name

SHOWN_CHARS = 90  # longest subquery text quoted in the description


def outer_column_in_subquery(sql: str | None, schema) -> str | None:
    """A one-line description of the first subquery of ``sql`` whose SELECT list holds a column
    of an outer query, or None. ``schema`` is an :class:`agents.db.schema.Schema` (the tables the
    query reads are looked up in it)."""
    if not sql or not sql.strip():
        return None
    try:
        tree = sqlglot.parse_one(sql, read="sqlite")
        mapping = _mapping(tree, schema) if tree is not None else {}
        if not mapping:
            return None
        qualified = qualify(tree.copy(), schema=mapping, dialect="sqlite",
                            validate_qualify_columns=False, quote_identifiers=False,
                            identify=False)
        scopes = list(traverse_scope(qualified))
        written = list(traverse_scope(tree))  # the same scopes, as the query writes them
        for index, scope in enumerate(scopes):
            outer = _outer_in_select_list(scope)
            if outer is not None:
                as_written = written[index] if len(written) == len(scopes) else None
                return _describe(scope, outer, as_written)
    except Exception:  # sqlglot refuses some SQL SQLite runs (or nests too deep to read):
        return None    # then the database is the judge, as for any SQL
    return None


def _outer_in_select_list(scope) -> exp.Column | None:
    """The first column of ``scope``'s SELECT list that belongs to an enclosing query, when
    ``scope`` is a subquery (or a branch of a compound one) whose rows are used: not the SELECT
    of an EXISTS, whose list means nothing. Only columns qualified with a table an enclosing
    scope reads count: a name sqlglot could not resolve (a double-quoted string, ``rowid``)
    is left to the database."""
    if not isinstance(scope.expression, exp.Select) or not _in_subquery(scope):
        return None
    if isinstance(scope.expression.parent, exp.Exists):
        return None
    listed = {id(column) for projection in scope.expression.expressions
              for column in projection.find_all(exp.Column)}
    for column in scope.external_columns:
        # external, so not bound in the scope itself: bound, if at all, in an enclosing one
        if id(column) in listed and column.table and resolve_name(scope, column.table):
            return column
    return None


def _in_subquery(scope) -> bool:
    """Whether ``scope`` is a subquery, or a branch of a compound query that is one."""
    while scope is not None:
        if scope.scope_type == ScopeType.SUBQUERY:
            return True
        if scope.scope_type != ScopeType.SET_OPERATION:
            return False
        scope = scope.parent
    return False


def _mapping(tree: exp.Expression, schema) -> dict[str, dict[str, str]]:
    """The schema's tables the parsed query reads, as sqlglot's schema mapping (table -> column
    -> type); names that are no table of the schema (CTEs, subquery aliases) are left out."""
    mapping = {}
    for node in tree.find_all(exp.Table):
        table = schema.table(node.name)
        if table is not None:
            mapping[table.name] = {c.name: (c.type or "TEXT") for c in table.columns}
    return mapping


def _describe(scope, column: exp.Column, as_written) -> str:
    """The subquery as written, the column and the outer table as written where they can be
    found there (sqlglot's qualifier lower-cases names), and the subquery's own tables."""
    tables = [source for source in scope.sources.values() if isinstance(source, exp.Table)]
    own = ", ".join(t.alias_or_name if not as_written else _written_name(as_written, t.name)
                    for t in tables) or "no table"
    shown_column, outer = column.name, column.table
    if as_written is not None:
        match = next((c for p in as_written.expression.expressions for c in p.find_all(exp.Column)
                      if c.name.casefold() == column.name.casefold()), None)
        if match is not None:
            shown_column = match.name
        outer = _outer_name(as_written, column.table)
    text = " ".join((as_written.expression if as_written else scope.expression)
                    .sql(dialect="sqlite").split())
    if len(text) > SHOWN_CHARS:
        text = text[:SHOWN_CHARS - 1] + "…"
    return (f"the subquery ({text}) selects {shown_column} of the outer query's {outer}, not "
            f"of its own tables ({own}), so it returns each outer row's own value")


def _written_name(scope, name: str) -> str:
    """``name`` (a table sqlglot lower-cased) as the query writes it in ``scope``."""
    for source in scope.sources.values():
        if isinstance(source, exp.Table) and source.name.casefold() == name.casefold():
            return source.name
    return name


def _outer_name(scope, name: str) -> str:
    """An enclosing scope's source ``name`` (alias or table) as the query writes it."""
    parent = scope.parent
    while parent is not None:
        for key in parent.sources:
            if key.casefold() == name.casefold():
                return key
        parent = parent.parent
    return name
