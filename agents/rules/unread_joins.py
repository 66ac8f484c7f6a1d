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
condition equates its columns with those of one other table, or names columns, none of them
its own (``JOIN city AS T2 ON T1.city LIKE '%West%'`` pairs each row it keeps with every row of
``city``: the condition, a filter on the other tables, moves to the ``WHERE`` clause, and the
rows are no longer repeated -- nor dropped when the joined table is empty; not where a
``RIGHT`` or ``FULL`` join would keep rows that filter drops); a statement with a ``USING`` or
``NATURAL`` join is left alone (those match a column name with whichever earlier table has it,
so leaving one table out can pair other rows). The table must be named nowhere
else in the statement (qualified or, by a column name it has, unqualified; any ``*`` but
``COUNT(*)`` leaves the statement alone). The ``FROM`` table is taken out only when asked
(``from_table``), and reads of a joined table's column that its condition equates with
another table's are reads of that one only when asked (``through_keys``). SQL sqlglot cannot
read is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from sqlglot import exp

from agents.db.schema import Schema
from agents.db.sqltext import parse_statement, select_source_names, select_tables


@dataclass(frozen=True)
class WithoutUnreadJoins:
    sql: str            # the statement without the joins nothing reads
    tables: list[str]   # the tables whose joins were taken out, as the SQL names them
    by_key: list[str] = field(default_factory=list)  # ... of those, read only through a key


def unread_joins(sql: str | None, schema: Schema,
                 keep: Callable[[exp.Join, exp.Select], bool] | None = None, *,
                 from_table: bool = False, through_keys: bool = False
                 ) -> WithoutUnreadJoins | None:
    """``sql`` without its joins of tables nothing reads, or None when it has none (or cannot
    be read). ``schema`` says which columns each table has, for unqualified column names;
    ``keep(join, select)`` says which of those joins stay all the same. With ``from_table``
    the ``FROM`` table is one of them too, taken as joined to the first join's table (see
    :func:`_from_table_joined`); with ``through_keys`` a table read only through its join key
    is too (see :func:`_read_through_keys`)."""
    tree = parse_statement(sql)
    if not isinstance(tree, exp.Select) or any(not _counted(star)
                                               for star in tree.find_all(exp.Star)):
        return None
    if any(join.args.get("using") or join.method for join in tree.args.get("joins") or []):
        return None  # USING and NATURAL match names against whichever earlier table has them
    removed, by_key = _drop_unread(tree, schema, keep, through_keys, [], [])
    while from_table:  # the FROM table, as a join; then the table that took its place
        swapped = _from_table_joined(tree)
        if swapped is None:
            break
        moved = swapped.args["joins"][0]
        taken = _drop_unread(swapped, schema, keep, through_keys, list(removed), list(by_key))
        if any(join is moved for join in swapped.args.get("joins") or []):
            break
        tree, (removed, by_key) = swapped, taken
    if not removed:
        return None
    return WithoutUnreadJoins(sql=tree.sql(dialect="sqlite"), tables=removed, by_key=by_key)


def _drop_unread(tree: exp.Select, schema: Schema, keep, through_keys: bool,
                 removed: list[str], by_key: list[str]) -> tuple[list[str], list[str]]:
    """Takes the unread joins out of ``tree`` in place; ``removed`` and ``by_key`` with their
    tables added (``by_key``: those read only through a join key, now read on its other side)."""
    changed = True
    while changed:  # a join read only by the condition of a join taken out goes next
        changed = False
        for join in list(tree.args.get("joins") or []):
            undo = _read_through_keys(tree, join, schema) if through_keys else []
            if _unread(tree, join, schema) and not (keep and keep(join, tree)):
                for names, used in ((removed, True), (by_key, bool(undo))):
                    if used and join.this.name not in names:
                        names.append(join.this.name)
                condition = join.args.get("on")
                moved = condition.unnest() if _filters_only(join, schema) else None
                join.pop()
                if moved is not None:  # the filter stays, on the rows it was written for
                    tree.where(moved.copy(), append=True, copy=False)
                changed = True
            else:
                for new, old in undo:
                    new.replace(old)
    return removed, by_key


def _read_through_keys(select: exp.Select, join: exp.Join, schema: Schema) -> list[tuple]:
    """Where the join's condition says ``T2.x = T1.y``, reads of ``T2.x`` elsewhere become
    reads of ``T1.y`` (the same value in every joined row), in place; the replaced nodes,
    ``(new, old)``, to put back. Only between columns of one type affinity (``1 = '1'`` holds
    in SQLite, but ``'10' < 5`` is not ``10 < 5``), never inside a query that names a source
    of its own like either side, and a column the SELECT lists keeps its name (``T2.CountryCode
    AS Code``)."""
    table, on = join.this, join.args.get("on")
    pairs = _equalities(on.unnest()) if isinstance(table, exp.Table) and on else None
    if not pairs:
        return []
    alias = table.alias_or_name.casefold()
    tables = select_tables(select)
    partner = {}
    for pair in pairs:
        for mine, other in (pair, pair[::-1]):
            if mine.table.casefold() != alias or other.table.casefold() == alias:
                continue
            affinity = _affinity(schema, table.name, mine.name)
            if affinity is not None and affinity == _affinity(
                    schema, tables.get(other.table.casefold()), other.name):
                partner.setdefault(mine.name.casefold(), other)
    in_on = {id(column) for column in on.find_all(exp.Column)}
    undo = []
    for column in list(select.find_all(exp.Column)):
        if id(column) in in_on or column.table.casefold() != alias:
            continue
        other = partner.get(column.name.casefold())
        if other is None or _shadowed(column, select) or _shadowed(column, select, other.table):
            continue
        new = other.copy()
        if column.parent is select and column in select.expressions:  # keeps its header
            new = exp.alias_(new, column.this.copy())
        column.replace(new)
        undo.append((new, column))
    return undo


def _affinity(schema: Schema, table: str | None, column: str) -> str | None:
    """The column's type affinity, or None when the column is not known."""
    found = schema.table(table) if table else None
    known = found.column(column) if found is not None else None
    return known.affinity if known is not None else None


def _from_table_joined(select: exp.Select) -> exp.Select | None:
    """A copy of ``select`` with its ``FROM`` table and its first join's table in each other's
    place, or None. ``FROM a JOIN b ON a.x = b.y`` and ``FROM b JOIN a ON a.x = b.y`` are the
    same inner join, so a model's choice of which table to write first does not decide whether
    an unread one can be left out: ``FROM Students AS T1 JOIN Has_Pet AS T2 ON T1.student_id
    = T2.StuID JOIN Student AS T3 ...`` reads nothing of ``Students``. Only a plain table
    joined to a plain table by a plain inner join whose condition equates the two."""
    source, joins = select.args.get("from_"), select.args.get("joins") or []
    if source is None or not joins or not isinstance(source.this, exp.Table):
        return None
    first = joins[0]
    if not _plain_inner_join(first):
        return None
    on = first.args.get("on")
    if on is None or not _equates_with_one_other(on.unnest(),
                                                 source.this.alias_or_name.casefold(),
                                                 {first.this.alias_or_name.casefold()}):
        return None
    swapped = select.copy()
    new_source, new_first = swapped.args["from_"], swapped.args["joins"][0]
    table, joined = new_source.this, new_first.this
    new_source.set("this", joined.copy())
    new_first.set("this", table.copy())
    return swapped


def _shadowed(column: exp.Column, select: exp.Select, qualifier: str | None = None) -> bool:
    """Whether a query inside ``select`` around ``column`` names a source of its own as
    ``qualifier`` (by default the column's own; ``T2`` in a subquery ``FROM concert AS T2``):
    there the name is that source's."""
    qualifier = (qualifier if qualifier is not None else column.table).casefold()
    node = column.parent
    while node is not None and node is not select:
        if isinstance(node, exp.Select) and qualifier in select_source_names(node):
            return True
        node = node.parent
    return False


def tables_named(sql: str | None) -> set[str]:
    """The tables a statement names (casefolded); empty when it cannot be read."""
    tree = parse_statement(sql)
    return {t.name.casefold() for t in tree.find_all(exp.Table)} if tree is not None else set()


def _counted(star: exp.Star) -> bool:
    """``COUNT(*)`` reads no column; ``SELECT *`` reads every table's, ``T2.*`` all of T2's."""
    return isinstance(star.parent, exp.Count)


def _plain_inner_join(join: exp.Join) -> bool:
    """An inner join of a table (not a subquery) by an ``ON`` condition: no ``USING``,
    ``NATURAL``, outer side or other kind."""
    return (isinstance(join.this, exp.Table) and not join.args.get("using")
            and not join.method and not join.side
            and (join.kind or "INNER").upper() == "INNER")


def _unread(select: exp.Select, join: exp.Join, schema: Schema) -> bool:
    table = join.this
    if not _plain_inner_join(join):
        return False
    on = join.args.get("on")
    alias = table.alias_or_name.casefold()
    if on is None or not (_equates_with_one_other(on.unnest(), alias,
                                                  select_source_names(select))
                          or _filters_only(join, schema)):
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


def _filters_only(join: exp.Join, schema: Schema) -> bool:
    """The join's condition names columns, none of them the joined table's (qualified with its
    name, or a bare name it has): it filters the other tables' rows, and each row it keeps is
    paired with every row of the joined table. Not where a ``RIGHT`` or ``FULL`` join of the
    same SELECT keeps rows the condition, moved to ``WHERE``, would then drop."""
    on, known = join.args.get("on"), schema.table(join.this.name)
    select = join.parent
    if on is None or known is None or not isinstance(select, exp.Select):
        return False
    if any((other.side or "").upper() in ("RIGHT", "FULL")
           for other in select.args.get("joins") or []):
        return False
    alias = join.this.alias_or_name.casefold()
    own = {c.casefold() for c in known.column_names()}
    columns = list(on.find_all(exp.Column))
    return bool(columns) and all(
        c.table.casefold() != alias if c.table else c.name.casefold() not in own
        for c in columns)


def _equalities(on: exp.Expression) -> list[tuple[exp.Column, exp.Column]] | None:
    """The condition's ``a.x = b.y`` parts, when it is nothing but those ``AND``-ed (every
    column qualified), else None."""
    conditions = list(on.flatten()) if isinstance(on, exp.And) else [on]
    pairs = []
    for condition in conditions:
        if not isinstance(condition, exp.EQ):
            return None
        sides = (condition.this, condition.expression)
        if not all(isinstance(side, exp.Column) and side.table for side in sides):
            return None
        pairs.append(sides)
    return pairs


def _equates_with_one_other(on: exp.Expression, alias: str, sources: set[str]) -> bool:
    """The condition is ``a.x = b.y [AND ...]`` between this table and one other source."""
    pairs = _equalities(on)
    if pairs is None:
        return False
    others = set()
    for pair in pairs:
        names = {side.table.casefold() for side in pair}
        if alias not in names or len(names) != 2:
            return False
        others |= names - {alias}
    return len(others) == 1 and others <= sources
