"""A query that failed on "no such column" rewritten where one clear change makes it run.

The commonest SQL a 1.5B model leaves broken at the end of a run is a column written with the
wrong alias: ``SELECT T2.Course FROM teacher AS T1 JOIN course_arrange AS T2 ...`` where
``Course`` is a column of ``course``. The hint of :mod:`agents.error_hints` says so in words, and
repair agents were still seen returning the failing SQL unchanged, several times in a row. What
they do copy reliably is SQL, so this module writes the repair the hint describes as a query.
In the query scope where the name is written (sqlglot's scopes, as for the hint):

- one column of the table the name may mean is the name spelt otherwise (``GovernmentForm`` for
  ``government_form``): that spelling;
- exactly one table of the scope has the column: that table's alias (``T1.LifeExpectancy`` where
  ``T1`` is ``country``);
- no table of the scope has it, and exactly one foreign key joins a table that has it to the
  table the wrong alias stands for (or, failing that, to one other table of the scope): that
  table joined on the key under a new alias, and the column taken from there;
- the name is in a join condition ``a.x = b.y`` and exactly one foreign key links the two
  tables: the condition written on that key.

Anything less clear (several tables or keys, an alias bound differently in several parts of the
query, SQL sqlglot cannot parse) gives no rewrite: it never guesses between readings of the
question. Whether the rewrite answers the question is for the repair agent to judge;
:func:`runnable_rewrite` offers one only when SQLite runs it, and says what it changed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from .error_hints import (NO_SUCH_COLUMN, ParsedQuery, explain_error, resolve_name, resolves,
                          same_name, strip_quotes)

MAX_REWRITES = 3      # one query may name several columns with the wrong alias: fix them in turn
REWRITE_SECONDS = 2.0  # a rewrite is checked by running it, within at most this much time
_ALIAS_NUMBERED = re.compile(r"^t(\d+)$", re.I)


@dataclass(frozen=True)
class Rewrite:
    """The rewritten SQL and one sentence per change, in the words a repair prompt shows."""

    sql: str
    changes: tuple[str, ...]

    def sentence(self) -> str:
        """The rewrite as a repair prompt's hint ends with it."""
        return f"A version that runs, with {'; '.join(self.changes)}: {self.sql}"


def rewrite_name_error(error: str | None, sql: str, schema) -> Rewrite | None:
    """``sql`` with the column of "no such column: [alias.]column" taken from the table that has
    it, or None when that is not one clear change (see the module docstring)."""
    match = NO_SUCH_COLUMN.search(error or "")
    if not match or schema is None:
        return None
    qualifier = strip_quotes(match.group("qualifier"))
    column = strip_quotes(match.group("column"))
    query = ParsedQuery(sql)
    if query.tree is None or not query.scopes:
        return None
    failing = [s for s in query.places(qualifier, column)
               if not resolves(s, qualifier, column, schema)]
    if len({id(s) for s in failing}) != 1:
        return None
    scope = failing[0]
    nodes = [c for c in scope.columns
             if same_name(c.name, column) and same_name(c.table or None, qualifier)]
    if not nodes:
        return None
    tables = _scope_tables(scope, schema)
    joins = {id(j): j for j in (c.find_ancestor(exp.Join, exp.Select) for c in nodes)
             if isinstance(j, exp.Join)}
    if joins:
        return _join_condition(list(joins.values()), scope, tables, schema, query) \
            if len(joins) == len(nodes) == 1 else None
    written = f"{qualifier}.{column}" if qualifier else column
    respelt = _respelt(scope, qualifier, column, tables, schema)
    if respelt is not None:
        alias, real, table = respelt
        change = f"{written} written {_ref(alias, real)} (the column of {table} is spelt so)"
    else:
        owners = [(name, table) for name, table in tables
                  if schema.table(table).column(column) is not None]
        if len(owners) > 1:
            return None
        if owners:
            alias, table = owners[0]
            real = schema.table(table).column(column).name
            change = (f"{written} written {alias}.{real} ({table}, which the query names "
                      f"{alias}, has the column)")
        else:
            joined = _join_for(scope, qualifier, column, tables, schema)
            if joined is None:
                return None
            alias, table, condition = joined
            real = schema.table(table).column(column).name
            change = (f"{written} written {alias}.{real} and {table} joined as {alias} on "
                      f"{condition.sql(dialect='sqlite')} ({table} has the column)")
    for node in nodes:
        node.set("table", exp.to_identifier(alias) if alias else None)
        node.set("this", exp.to_identifier(real))
    return Rewrite(sql=query.tree.sql(dialect="sqlite"), changes=(change,))


def _ref(alias: str | None, column: str) -> str:
    return f"{alias}.{column}" if alias else column


def _normal(name: str) -> str:
    """A column name as far as spelling goes: case, underscores and blanks do not count."""
    return re.sub(r"[_\s]", "", name).casefold()


def _respelt(scope: Scope, qualifier: str | None, column: str, tables: list[tuple[str, str]],
             schema) -> tuple[str | None, str, str] | None:
    """(alias, column, table) when exactly one column of the tables ``qualifier`` may mean
    (that table, or every table of the scope for a bare name) is ``column`` spelt otherwise
    (``government_form`` for ``GovernmentForm``); None otherwise."""
    if qualifier:
        source = resolve_name(scope, qualifier)
        if not isinstance(source, exp.Table) or schema.table(source.name) is None:
            return None
        places = [(qualifier, schema.table(source.name).name)]
    else:
        places = tables
    found = [(alias if qualifier else None, name, table) for alias, table in places
             for name in schema.table(table).column_names() if _normal(name) == _normal(column)]
    return found[0] if len(found) == 1 else None


def _join_condition(joins: list[exp.Join], scope: Scope, tables: list[tuple[str, str]],
                    schema, query: ParsedQuery) -> Rewrite | None:
    """A JOIN whose ON condition (one equality of two columns) names a column a table lacks,
    rewritten to the one foreign key between the two tables."""
    join = joins[0]
    condition = join.args.get("on")
    if not isinstance(condition, exp.EQ) or not all(
            isinstance(side, exp.Column) and side.table for side in (condition.this,
                                                                     condition.expression)):
        return None
    ends = []
    for side in (condition.this, condition.expression):
        source = resolve_name(scope, side.table)
        if not isinstance(source, exp.Table) or schema.table(source.name) is None:
            return None
        ends.append((side.table, schema.table(source.name).name))
    (left, left_table), (right, right_table) = ends
    keys = {(fk.column, fk.ref_column) if same_name(fk.table, left_table) else
            (fk.ref_column, fk.column) for fk in schema.foreign_keys
            if {fk.table.casefold(), fk.ref_table.casefold()} ==
            {left_table.casefold(), right_table.casefold()} and
            left_table.casefold() != right_table.casefold()}
    if len(keys) != 1:
        return None
    left_col, right_col = keys.pop()
    new = exp.EQ(this=exp.column(left_col, table=left, quoted=None),
                 expression=exp.column(right_col, table=right, quoted=None))
    change = (f"the join on {condition.sql(dialect='sqlite')} written on "
              f"{new.sql(dialect='sqlite')} (the key between {left_table} and {right_table})")
    join.set("on", new)
    return Rewrite(sql=query.tree.sql(dialect="sqlite"), changes=(change,))


def runnable_rewrite(db, error: str | None, sql: str, schema, *,
                     timeout: float = REWRITE_SECONDS) -> Rewrite | None:
    """A rewrite of ``sql`` (one or more columns moved to the table that has them) that SQLite
    runs on ``db`` within ``timeout`` seconds, or None. Read-only, like every query."""
    changes: list[str] = []
    for _ in range(MAX_REWRITES):
        rewrite = rewrite_name_error(error, sql, schema)
        if rewrite is None:
            return None
        changes.extend(rewrite.changes)
        result = db.execute(rewrite.sql, timeout=timeout, max_rows=1)
        if result.ok:
            return Rewrite(sql=rewrite.sql, changes=tuple(changes))
        error, sql = result.error, rewrite.sql
    return None


def _scope_tables(scope: Scope, schema) -> list[tuple[str, str]]:
    """(name the scope uses, schema table) for each table source of ``scope`` itself."""
    found = []
    for name, source in scope.sources.items():
        if isinstance(source, exp.Table) and schema.table(source.name) is not None:
            found.append((name, schema.table(source.name).name))
    return found


def _join_for(scope: Scope, qualifier: str, column: str, tables: list[tuple[str, str]],
              schema) -> tuple[str, str, exp.Expression] | None:
    """Join a table that has ``column`` to the select of ``scope`` along the one foreign key
    that links it to the table ``qualifier`` stands for (or, if none does, to one other table
    of the scope); returns (new alias, table, join condition), or None."""
    select = scope.expression
    if not isinstance(select, exp.Select) or not tables:
        return None
    owners = {t.name.casefold(): t.name for t in schema.tables if t.column(column) is not None}
    source = resolve_name(scope, qualifier)
    wrong = schema.table(source.name).name if isinstance(source, exp.Table) and \
        schema.table(source.name) is not None else None
    links: list[tuple[str, str, str, str]] = []  # (name in scope, its column, owner, owner col)
    for fk in schema.foreign_keys:
        for near, near_col, far, far_col in ((fk.table, fk.column, fk.ref_table, fk.ref_column),
                                             (fk.ref_table, fk.ref_column, fk.table, fk.column)):
            if far.casefold() not in owners:
                continue
            for name, table in tables:
                if same_name(table, near):
                    links.append((name, near_col, owners[far.casefold()], far_col))
    preferred = [link for link in links if wrong is not None and any(
        same_name(name, link[0]) and same_name(table, wrong) for name, table in tables)]
    chosen = preferred or links
    if len(set(chosen)) != 1:
        return None
    near_name, near_col, owner, owner_col = chosen[0]
    alias = _new_alias(scope, owner, [name for name, _ in tables])
    condition = exp.EQ(this=exp.column(near_col, table=near_name, quoted=None),
                       expression=exp.column(owner_col, table=alias, quoted=None))
    table = exp.Table(this=exp.to_identifier(owner))
    if alias != owner:
        table.set("alias", exp.TableAlias(this=exp.to_identifier(alias)))
    select.join(table, on=condition, copy=False)
    return alias, owner, condition


def _new_alias(scope: Scope, table: str, names: list[str]) -> str:
    """``T<n+1>`` when the scope numbers its aliases ``T1``, ``T2`` ...; else the table's own
    name, or that name with a number when the scope already uses it."""
    numbers = [int(m.group(1)) for m in map(_ALIAS_NUMBERED.match, names) if m]
    taken = {n.casefold() for n in names} | {n.casefold() for n in scope.sources}
    if numbers:
        prefix = next(n[0] for n in names if _ALIAS_NUMBERED.match(n))
        n = max(numbers) + 1
        while f"t{n}" in taken:
            n += 1
        return f"{prefix}{n}"
    if table.casefold() not in taken:
        return table
    n = 2
    while f"{table}_{n}".casefold() in taken:
        n += 1
    return f"{table}_{n}"


def hint_with_rewrite(db, error: str | None, sql: str, schema, *,
                      timeout: float = REWRITE_SECONDS) -> str | None:
    """:func:`~agents.error_hints.explain_error`'s hint for ``sql``'s failure, followed, for a
    column written with the wrong alias, by a version of the query that runs (checked on ``db``
    within ``timeout`` seconds, at most :data:`REWRITE_SECONDS`). None when there is nothing to
    add. A hint is a courtesy: a failure while building the rewrite only drops the rewrite."""
    hint = explain_error(error, sql, schema)
    try:
        rewrite = runnable_rewrite(db, error, sql, schema, timeout=min(timeout, REWRITE_SECONDS))
    except Exception:
        rewrite = None
    if rewrite is None:
        return hint
    return f"{hint} {rewrite.sentence()}" if hint else rewrite.sentence()
