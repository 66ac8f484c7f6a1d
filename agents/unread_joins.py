"""Joins that nothing reads: a table joined only to be matched in its own join condition.

``SELECT T1.hometown FROM teacher AS T1 JOIN course_arrange AS T2 ON T1.teacher_id =
T2.teacher_id GROUP BY T1.hometown`` reads no column of ``course_arrange`` outside its ``ON``:
the join only repeats each teacher once per course and drops teachers without one. Sometimes a
question means exactly that ("teachers who teach a course"); often a small model adds such a
join because the table was in front of it. In CSMA's benchmark traces an agent that owns a table
joined it into its own SQL this way, and the agreement check then took the different result for
a disagreement with SQL that was right. :func:`unread_joins` finds such joins and gives the SQL
without them, so a check can tell "differs only by a join that reads nothing" from "answers
otherwise".

Only joins of the outermost SELECT are taken out (in a subquery, or a branch of ``EXCEPT``, a
join that drops rows there changes what the outer query keeps or excludes; a statement that is
a set operation is left alone), and only plain inner joins of a table (not a subquery) whose
condition equates its columns with those of one other table. The table must be named nowhere
else in the statement (qualified or, by a column name it has, unqualified; any ``*`` but
``COUNT(*)`` leaves the statement alone). The ``FROM`` table is never taken out. SQL sqlglot
cannot read is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import sqlglot
from sqlglot import exp

from .schema import Schema
from .sqltext import select_source_names


@dataclass(frozen=True)
class WithoutUnreadJoins:
    sql: str            # the statement without the joins nothing reads
    tables: list[str]   # the tables whose joins were taken out, as the SQL names them


def unread_joins(sql: str | None, schema: Schema,
                 keep: Callable[[exp.Join, exp.Select], bool] | None = None
                 ) -> WithoutUnreadJoins | None:
    """``sql`` without its joins of tables nothing reads, or None when it has none (or cannot
    be read). ``schema`` says which columns each table has, for unqualified column names;
    ``keep(join, select)`` says which of those joins stay all the same."""
    tree = _parse(sql)
    if not isinstance(tree, exp.Select) or any(not _counted(star)
                                               for star in tree.find_all(exp.Star)):
        return None
    removed: list[str] = []
    changed = True
    while changed:  # a join read only by the condition of a join taken out goes next
        changed = False
        for join in list(tree.args.get("joins") or []):
            if _unread(tree, join, schema) and not (keep and keep(join, tree)):
                if join.this.name not in removed:
                    removed.append(join.this.name)
                join.pop()
                changed = True
    if not removed:
        return None
    return WithoutUnreadJoins(sql=tree.sql(dialect="sqlite"), tables=removed)


def tables_named(sql: str | None) -> set[str]:
    """The tables a statement names (casefolded); empty when it cannot be read."""
    tree = _parse(sql)
    return {t.name.casefold() for t in tree.find_all(exp.Table)} if tree is not None else set()


def _parse(sql: str | None) -> exp.Expression | None:
    if not sql or not sql.strip():
        return None
    try:
        trees = [t for t in sqlglot.parse(sql, read="sqlite") if t is not None]
    except Exception:  # SQL sqlglot cannot read is the database's to judge
        return None
    return trees[0] if len(trees) == 1 else None


def _counted(star: exp.Star) -> bool:
    """``COUNT(*)`` reads no column; ``SELECT *`` reads every table's, ``T2.*`` all of T2's."""
    return isinstance(star.parent, exp.Count)


def _unread(select: exp.Select, join: exp.Join, schema: Schema) -> bool:
    table = join.this
    if not isinstance(table, exp.Table) or join.args.get("using") or join.method:
        return False
    if join.side or (join.kind or "INNER").upper() != "INNER":
        return False
    on = join.args.get("on")
    alias = table.alias_or_name.casefold()
    if on is None or not _equates_with_one_other(on.unnest(), alias,
                                                      select_source_names(select)):
        return False
    in_on = {id(column) for column in on.find_all(exp.Column)}
    known = schema.table(table.name)
    if known is None:
        return False
    own_columns = {c.casefold() for c in known.column_names()}
    for column in select.find_all(exp.Column):
        if id(column) in in_on:
            continue
        qualifier = column.table.casefold()
        if qualifier == alias or (not qualifier and column.name.casefold() in own_columns):
            return False
    return True


def _equates_with_one_other(on: exp.Expression, alias: str, sources: set[str]) -> bool:
    """The condition is ``a.x = b.y [AND ...]`` between this table and one other source."""
    conditions = list(on.flatten()) if isinstance(on, exp.And) else [on]
    others = set()
    for condition in conditions:
        if not isinstance(condition, exp.EQ):
            return False
        sides = [condition.this, condition.expression]
        if not all(isinstance(s, exp.Column) and s.table for s in sides):
            return False
        names = {s.table.casefold() for s in sides}
        if alias not in names or len(names) != 2:
            return False
        others |= names - {alias}
    return len(others) == 1 and others <= sources
