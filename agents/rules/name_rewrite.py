"""A query that failed on "no such column" rewritten where one clear change makes it run.

The commonest SQL a 1.5B model leaves broken at the end of a run is a column written with the
wrong alias: ``SELECT T2.Course FROM teacher AS T1 JOIN course_arrange AS T2 ...`` where
``Course`` is a column of ``course``. The hint of :mod:`agents.rules.error_hints` says so in words, and
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
question. Nor does a change that would leave a column compared with itself (``ON T2.owner_id =
T2.owner_id`` runs, but the same for every row whatever the other table holds). Whether the
rewrite answers the question is for the repair agent to judge; :func:`runnable_rewrite` offers
one only when SQLite runs it, and says what it changed.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from sqlglot import exp
from sqlglot.optimizer.scope import Scope

from agents.rules.error_hints import (NO_SUCH_COLUMN, ParsedQuery, name_hint, resolve_name,
    resolves, same_name, strip_quotes)
from agents.db.identifiers import is_plain_name
from agents.rules.registry import RULES, hint_at_execution

EVERY_RULE = tuple(r.name for r in RULES)
REWRITE_LEAD = "A version that runs, with"  # how the hint introduces the rewritten query
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
        return f"{REWRITE_LEAD} {'; '.join(self.changes)}: {self.sql}"


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
    in_join = [c for c in nodes if isinstance(c.find_ancestor(exp.Join, exp.Select), exp.Join)]
    if in_join:
        if len(in_join) != len(nodes):
            return None
        if len(nodes) == 1:
            rewritten = _join_condition(in_join[0].find_ancestor(exp.Join), scope, schema, query)
            if rewritten is not None:
                return rewritten
    written = f"{qualifier}.{column}" if qualifier else column
    owners = _owners(scope, column, schema)
    respelt = None if owners else _respelt(scope, qualifier, column, tables, schema)
    if respelt is not None:
        alias, real, table = respelt
        change = f"{written} written {_ref(alias, real)} (the column of {table} is spelt so)"
    elif len(owners) > 1:
        return None
    elif owners:
        alias, table, real = owners[0]
        change = (f"{written} written {alias}.{real} ({table}, which the query names "
                  f"{alias}, has the column)")
    else:
        joined = None if in_join else _join_for(scope, qualifier, column, tables, schema, query,
                                                nodes)
        if joined is None:
            return None
        alias, table, condition = joined
        real = schema.table(table).column(column).name
        on = condition.sql(dialect="sqlite")
        if qualifier and same_name(alias, qualifier):  # the query named a table it never joined
            change = f"{table} joined on {on} (the query writes {written} without joining it)"
        else:
            change = (f"{written} written {alias}.{real} and {table} joined as {alias} on {on} "
                      f"({table} has the column)")
    for node in nodes:
        node.set("table", _identifier(alias) if alias else None)
        node.set("this", _identifier(real))
    if any(_compares_with_itself(node) for node in nodes):
        return None
    return Rewrite(sql=query.tree.sql(dialect="sqlite"), changes=(change,))


def _compares_with_itself(column: exp.Column) -> bool:
    """Whether ``column`` now stands on both sides of a comparison (``T2.id = T2.id``, also
    inside parentheses, COLLATE, CAST, lower/upper/trim, or as IS, LIKE, GLOB, IN, BETWEEN):
    moving it to the alias that has it made a join condition or filter the same for every row,
    whatever the other table holds, which runs but can never be what the query meant."""
    node = column
    while isinstance(node.parent, _WRAPPERS) and node.parent.this is node:
        node = node.parent
    parent = node.parent
    if not isinstance(parent, _COMPARISONS):
        return False
    operands = [parent.this, parent.args.get("expression"), parent.args.get("low"),
                parent.args.get("high"), *parent.args.get("expressions", [])]
    return any(_same_column(column, _unwrapped(other)) for other in operands
               if other is not None and other is not node)


_COMPARISONS = (exp.EQ, exp.NEQ, exp.GT, exp.GTE, exp.LT, exp.LTE, exp.Is, exp.NullSafeEQ,
                exp.NullSafeNEQ, exp.Like, exp.ILike, exp.Glob, exp.In, exp.Between)
_WRAPPERS = (exp.Paren, exp.Collate, exp.Cast, exp.Lower, exp.Upper, exp.Trim)


def _unwrapped(node: exp.Expression) -> exp.Expression:
    while isinstance(node, _WRAPPERS):
        node = node.this
    return node


def _same_column(a: exp.Column, b: exp.Expression) -> bool:
    return isinstance(b, exp.Column) and same_name(a.name, b.name) and same_name(
        a.table or None, b.table or None)


def _identifier(name: str) -> exp.Identifier:
    """``name`` as sqlglot writes it: quoted unless a plain word that is not a keyword (sqlglot
    leaves SQLite's keywords bare, and ``T1.order`` does not parse)."""
    return exp.to_identifier(name, quoted=not is_plain_name(name))


def _owners(scope: Scope, column: str, schema) -> list[tuple[str, str, str]]:
    """(name in the scope, what it is, the column as spelt there) for each source of ``scope``
    that has ``column``: a table, or a subquery or WITH query by its selected names."""
    found = []
    for name, source in scope.sources.items():
        if isinstance(source, Scope):
            selected = [c for c in source.expression.named_selects if same_name(c, column)]
            if selected:
                kind = "the WITH query" if source.is_cte else "the subquery"
                found.append((name, f"{kind} {name}", selected[0]))
        elif isinstance(source, exp.Table) and schema.table(source.name) is not None:
            real = schema.table(source.name).column(column)
            if real is not None:
                found.append((name, schema.table(source.name).name, real.name))
    return found


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


def _join_condition(join: exp.Join, scope: Scope, schema, query: ParsedQuery) -> Rewrite | None:
    """A JOIN whose ON condition (one equality of two columns) names a column a table lacks,
    rewritten to the one foreign key between the two tables; None if there is not one."""
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
    new = exp.EQ(this=_column(left_col, left), expression=_column(right_col, right))
    change = (f"the join on {condition.sql(dialect='sqlite')} written on "
              f"{new.sql(dialect='sqlite')} (the key between {left_table} and {right_table})")
    join.set("on", new)
    return Rewrite(sql=query.tree.sql(dialect="sqlite"), changes=(change,))


def runnable_rewrite(db, error: str | None, sql: str, schema, *,
                     timeout: float = REWRITE_SECONDS) -> Rewrite | None:
    """A rewrite of ``sql`` (one or more changes in turn) that SQLite runs on ``db``, or None.
    All the checks together take at most ``timeout`` seconds. Read-only, like every query."""
    changes: list[str] = []
    deadline = time.monotonic() + timeout
    for _ in range(MAX_REWRITES):
        rewrite = rewrite_name_error(error, sql, schema)
        left = deadline - time.monotonic()
        if rewrite is None or left <= 0:
            return None
        changes.extend(rewrite.changes)
        result = db.execute(rewrite.sql, timeout=left, max_rows=1)
        if result.ok:
            return Rewrite(sql=rewrite.sql, changes=tuple(changes))
        error, sql = result.error, rewrite.sql
    return None


def rewrite_or_none(db, error: str | None, sql: str, schema, *,
                    timeout: float = REWRITE_SECONDS) -> Rewrite | None:
    """:func:`runnable_rewrite` within at most ``timeout`` seconds (never more than
    ``REWRITE_SECONDS``), or None where building one fails: a rewrite is a courtesy, and failing
    to build one keeps the SQL as written."""
    try:
        return runnable_rewrite(db, error, sql, schema, timeout=min(timeout, REWRITE_SECONDS))
    except Exception:
        return None


def hinted_rewrite(db, error: str | None, sql: str, schema, hint: str | None, *,
                   timeout: float = REWRITE_SECONDS) -> Rewrite | None:
    """The rewrite ``hint`` holds (:func:`name_error_hint`'s last sentence), or None: built
    again from the same error, SQL and schema and recognised by its sentence in ``hint``, never
    read back out of the hint's words (its changes are prose that may hold any character)."""
    if not hint or REWRITE_LEAD not in hint:
        return None
    rewrite = rewrite_or_none(db, error, sql, schema, timeout=timeout)
    return rewrite if rewrite is not None and rewrite.sentence() in hint else None


def take_rewrite(rewrite: Rewrite | None, result, run):
    """``(sql, result, written)`` for SQL that ran with ``result``: as it is when ``rewrite`` is
    None, or ``rewrite`` run with ``run`` (the caller's limits, its recording) and ``written``
    saying what it replaced (``written_sql``, ``written_error``, ``rewrite``: the changes). A
    rewrite that ran in its one-row trial but fails under those limits is not taken, and the SQL
    as written is run again with ``run``, so a recording ``run`` records what goes on."""
    if rewrite is None:
        return result.sql, result, None
    rerun = run(rewrite.sql)
    if not rerun.ok:
        return result.sql, run(result.sql), None
    return rewrite.sql, rerun, {"written_sql": result.sql, "written_error": result.error,
                                "rewrite": "; ".join(rewrite.changes)}


def _scope_tables(scope: Scope, schema) -> list[tuple[str, str]]:
    """(name the scope uses, schema table) for each table source of ``scope`` itself."""
    found = []
    for name, source in scope.sources.items():
        if isinstance(source, exp.Table) and schema.table(source.name) is not None:
            found.append((name, schema.table(source.name).name))
    return found


def _join_for(scope: Scope, qualifier: str | None, column: str, tables: list[tuple[str, str]],
              schema, query: ParsedQuery,
              nodes: list[exp.Column]) -> tuple[str, str, exp.Expression] | None:
    """Join a table that has ``column`` to the select of ``scope`` along the one foreign key
    that links it to the table ``qualifier`` stands for (or, if none does, to one other table
    of the scope); returns (new alias, table, join condition), or None. Refused when a bare
    column written in the scope (or a subquery in it) is a column of the joined table too:
    the join would change what that name means."""
    select = scope.expression
    if not isinstance(select, exp.Select) or not tables:
        return None
    owners = {t.name.casefold(): t.name for t in schema.tables if t.column(column) is not None}
    links: list[tuple[str, str, str, str]] = []  # (name in scope, its column, owner, owner col)
    for fk in schema.foreign_keys:
        for near, near_col, far, far_col in ((fk.table, fk.column, fk.ref_table, fk.ref_column),
                                             (fk.ref_table, fk.ref_column, fk.table, fk.column)):
            if far.casefold() not in owners:
                continue
            for name, table in tables:
                if same_name(table, near):
                    links.append((name, near_col, owners[far.casefold()], far_col))
    preferred = [link for link in links if qualifier and same_name(link[0], qualifier)]
    chosen = preferred or links
    if len(set(chosen)) != 1:
        return None
    near_name, near_col, owner, owner_col = chosen[0]
    bare = {c.name.casefold() for c in select.find_all(exp.Column)
            if not c.table and not any(c is n for n in nodes)}
    if any(c.casefold() in bare for c in schema.table(owner).column_names()):
        return None
    alias = _new_alias(query, owner, [name for name, _ in tables])
    condition = exp.EQ(this=_column(near_col, near_name), expression=_column(owner_col, alias))
    table = exp.Table(this=_identifier(owner))
    if alias != owner:
        table.set("alias", exp.TableAlias(this=_identifier(alias)))
    select.join(table, on=condition, copy=False)
    return alias, owner, condition


def _column(name: str, table: str) -> exp.Column:
    return exp.Column(this=_identifier(name), table=_identifier(table))


def _new_alias(query: ParsedQuery, table: str, names: list[str]) -> str:
    """``T<n+1>`` when the scope numbers its aliases ``T1``, ``T2`` ...; else the table's own
    name, or that name with a number. Never a name bound anywhere in the query: a new alias
    must not hide an outer one a correlated subquery refers to."""
    numbers = [int(m.group(1)) for m in map(_ALIAS_NUMBERED.match, names) if m]
    taken = {n.casefold() for n in names}
    for node in query.tree.find_all(exp.Table, exp.TableAlias):
        taken |= {n.casefold() for n in (node.name, node.alias if isinstance(node, exp.Table)
                                         else "") if n}
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


def name_error_hint(db, error: str | None, sql: str, schema, *,
                    timeout: float = REWRITE_SECONDS) -> str | None:
    """The name-error hint's action at the execution hint: :func:`~agents.rules.error_hints.
    name_hint` for ``sql``'s failure, followed, where one clear change makes the query run, by
    that query (checked on ``db`` within ``timeout`` seconds, at most :data:`REWRITE_SECONDS`).
    A hint is a courtesy: a failure while building it drops it, never the error it explains."""
    try:
        hint = name_hint(error, sql, schema)
    except Exception:
        hint = None
    rewrite = rewrite_or_none(db, error, sql, schema, timeout=timeout)
    if rewrite is None:
        return hint
    return f"{hint} {rewrite.sentence()}" if hint else rewrite.sentence()


def hint_with_rewrite(db, error: str | None, sql: str, schema, *,
                      timeout: float = REWRITE_SECONDS) -> str | None:
    """Every execution-hint rule's sentence for ``sql``'s failure (a SQLite function, a name
    and the version that runs), or None: what a person's SQL or CSMA's agents are told."""
    return hint_at_execution(EVERY_RULE, {}, db, error, sql, schema, timeout=timeout)


def execute_with_hint(db, sql: str, *, timeout: float, max_rows: int):
    """Run a person's SQL on ``db`` (read-only, like every query) and, when it fails on a name,
    attach the same hint an agent's repair step gets: "no such table: Trak" then says which
    tables exist and which name is closest, and a column written with the wrong alias comes
    with a version of the query that runs (:mod:`agents.rules.name_rewrite`)."""
    result = db.execute(sql, timeout=timeout, max_rows=max_rows)
    if not result.ok and result.hint is None:
        try:
            result.hint = hint_with_rewrite(db, result.error, sql, db.schema, timeout=timeout)
        except Exception:  # a hint is a courtesy: never let it hide the error itself
            result.hint = None
    return result
