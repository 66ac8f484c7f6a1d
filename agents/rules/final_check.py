"""The Final check: two things a small model gets wrong in SQL that runs, mended where a run
would end.

**Joins nothing reads** (``drop_unread_joins``). ``SELECT T1.name FROM battle AS T1 JOIN ship
AS T2 ON T1.id = T2.lost_in_battle WHERE T1.bulgarian_commander = 'Kaloyan'`` reads no column
of ``ship`` outside its ``ON``: the join only keeps the battles that lost a ship, once per ship,
and the question ("the battles between commander Kaloyan and ...") asked for neither. A 1.5B
model adds such joins because the table was in its schema, and the papers' loops do not remove
them: a query that runs and returns rows passes MAC-SQL's Refiner, DEA-SQL's execution check,
R³'s reviewers and CSMA's checks alike. Where the question names the joined table ("teachers
who teach a course", "students who have pets", "visitors who visited a museum twice"), the
join is the filter it asks for and stays. A question names a table when one of its words is
one of the table name's words (``pets`` and ``Has_Pet``) or, for words of four letters or
more, one holds the other (``languages`` and ``countrylanguage``, ``visited`` and ``visit``): a
word written into a longer one keeps a join rather than drop it. A word that names another
table of the query as well does not single out the joined one ("how is the math *course*
described" is about ``Courses``, not the ``Student_Enrolment_Courses`` joined to it). The join
stays too where the question names something only that table holds outside the join's
condition and the query counts ("the number of employees hired by each shop" counts the rows
of ``hiring``, whose ``Employee_ID`` no other table of the query has), and where the query
groups and counts and, without the join, every group would hold one row: the count counted the
joined rows ("the teacher with the most lessons", grouped by teacher, counts
``course_arrange``). The joins are found by :func:`agents.rules.unread_joins.unread_joins` (plain
inner joins of the outermost SELECT, read only in their own equality condition, or joined on a
condition that names none of their columns, ``JOIN city AS T2 ON T1.city LIKE '%West%'``, which
stays as a filter in the ``WHERE`` clause).

Two more of its options widen what "nothing reads" covers. ``drop_unread_from_table``: the
table written first is one of them (``FROM Students AS T1 JOIN Has_Pet AS T2 ON
T1.student_id = T2.StuID JOIN Student AS T3 ...`` reads nothing of ``Students``, a table of
another part of the database with a similar name; which table a model writes first does not
change an inner join). ``read_through_join_keys``: a column read where the join makes it equal
to another table's column is read from that one (``SELECT T2.Code FROM countrylanguage AS T1
JOIN country AS T2 ON T2.Code = T1.CountryCode WHERE ...`` reads ``T1.CountryCode AS Code``;
with the option above, a join on ``city`` between owners and professionals, filtered on the
owners' city, is the professionals' own city), so a table the SQL reads only through its key
is left out too; only between columns of one type affinity, as SQLite compares them.
``drop_unrelated_part_joins``: a joined table of a part of the schema that no foreign key links
to the query's other tables (:func:`agents.rules.unrelated_parts.joins_unrelated_part`; a database of
several applications side by side) is left out even where the question names it: "the total
surface area of the *continents* Asia and Europe" named the cars schema's ``continents``, which
the answer joined to the world's ``country`` on a continent name spelt otherwise there, so the
sum was over nothing; a question's word cannot vouch for a table of another application.

**A value in the wrong case** (``match_stored_case``). ``WHERE Airline = 'Jetblue Airways'``
finds nothing when the column holds 'JetBlue Airways': SQLite compares text exactly, and a
writer that copies the question's spelling (R³'s, DEA-SQL's and CSMA's agents are shown no
stored values) misses it. A string literal compared by ``=`` or ``IN`` with a column of a table
of its query, where the column holds no such value but exactly one value equal to it but for
case, becomes that value (:mod:`agents.rules.stored_case`). Each lookup is one read-only query
under the run's limits, and all of one check's lookups stop after a time budget; spaces are
left as written.

So a pipeline with either option on goes, where it would end, to one more step when its final
SQL runs and one of them applies: the step ends on the mended SQL when that runs, or keeps the
SQL as it was. The trace shows both queries, the tables left out and the values changed. Not
in any of the papers: with both off, the run ends where the paper's algorithm ends.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import ClassVar

from agents.core.engine import END, STUDIO, ParamSpec, Step, StepContext
from agents.outputs.base import Output, register
from agents.outputs.common import indent
from agents.db.sqltext import format_sql
from agents.rules.question_joins import counts_one_per_group, unnamed_unread_joins
from agents.rules.stored_case import stored_case
from agents.rules.registry import FINAL_ANSWER, RULES as REGISTERED, acting_at, action, rule

JOINS = "drop_unread_joins"
FROM_TABLE = "drop_unread_from_table"
KEYS = "read_through_join_keys"
PARTS = "drop_unrelated_part_joins"
CASE = "match_stored_case"
STEP = "final_check"
RULES = (JOINS, FROM_TABLE, KEYS, PARTS, CASE)


def param_specs() -> list[ParamSpec]:
    return [ParamSpec(JOINS, True, origin=STUDIO,
                      help="Final check: drop joins of tables the final SQL reads nothing of "
                           "and the question does not name"),
            ParamSpec(FROM_TABLE, True, origin=STUDIO, under=JOINS,
                      help="also drop the FROM table (the one written first) when nothing else "
                           "reads it"),
            ParamSpec(KEYS, True, origin=STUDIO, under=JOINS,
                      help="a column read only through a join's equality counts as the other "
                           "table's, so its table drops too"),
            ParamSpec(PARTS, True, origin=STUDIO, under=JOINS,
                      help="also drop an unread table of a schema part no foreign key links to "
                           "the query's, even if named"),
            ParamSpec(CASE, True, origin=STUDIO,
                      help="Final check: a compared string the column holds only in another "
                           "case is written as stored")]


# -- the rules' actions, called at the final-answer hook (registry.acting_at) ---------------

@dataclass(frozen=True)
class Mended:
    sql: str
    tables: list[str]               # joins left out
    by_key: list[str]               # ... of those, read only through a join key
    values: list[tuple[str, str]]   # (as written, as stored)
    apart: list[str] = field(default_factory=list)  # tables left out: the question named them,
    #                                                  but they lie in an unrelated part
    notes: list[tuple[str, str]] = field(default_factory=list)  # (rule, what it says): a lint's

    def then(self, change: "Mended") -> "Mended":
        """This change followed by ``change`` (made on this one's SQL)."""
        return Mended(sql=change.sql, tables=self.tables + change.tables,
                      by_key=self.by_key + change.by_key, values=self.values + change.values,
                      apart=self.apart + change.apart, notes=self.notes + change.notes)


@dataclass(frozen=True)
class Seen:
    """What a final-answer rule may look at besides the SQL."""
    schema: object
    question: str
    db: object
    params: dict
    timeout: float


def leave_out_unread_joins(sql: str, seen: Seen) -> Mended | None:
    """``drop_unread_joins``: the SQL without the joins nothing reads and the question does
    not ask for (with the options nested under it), unless the count needs them."""
    params, named_apart = seen.params, []
    without = unnamed_unread_joins(sql, seen.schema, seen.question,
                                   from_table=bool(params.get(FROM_TABLE)),
                                   through_keys=bool(params.get(KEYS)),
                                   whole=seen.db.schema if params.get(PARTS) else None,
                                   named_apart=named_apart)
    if without is None or counts_one_per_group(without.sql, seen.db, timeout=seen.timeout):
        return None
    return Mended(sql=without.sql, tables=without.tables, by_key=without.by_key, values=[],
                  apart=[t for t in named_apart if t in without.tables])


def write_values_as_stored(sql: str, seen: Seen) -> Mended | None:
    """``match_stored_case``: the SQL with each compared string in the case its column
    stores it."""
    cased = stored_case(sql, seen.db, seen.schema, timeout=seen.timeout)
    return None if cased is None else Mended(sql=cased.sql, tables=[], by_key=[],
                                             values=cased.values)


ALL_RULES = tuple(r.name for r in REGISTERED)


def mend(sql: str | None, schema, question: str, db, params: dict, *,
         timeout: float, rules=ALL_RULES) -> Mended | None:
    """What the final-answer rules among ``rules`` that ``params`` turns on make of ``sql``,
    one after the other in the registry's order (joins first, then values), or None when
    they change nothing. The SQL is not run here."""
    seen = Seen(schema=schema, question=question, db=db, params=params, timeout=timeout)
    total = Mended(sql=sql, tables=[], by_key=[], values=[])
    for acting in acting_at(FINAL_ANSWER, rules, params):
        change = action(acting)(total.sql, seen)
        if change is not None:
            total = total.then(change)
    return total if total.tables or total.values or total.notes else None


def ending_for(sql: str | None, schema, question: str, db, params: dict, *, timeout: float,
               max_rows: int):
    """``(mended, result)`` where the final SQL runs and its mended version runs too, else
    None: what the Final check ends on, for a replay on recorded runs."""
    mended = mend(sql, schema, question, db, params, timeout=timeout) if sql else None
    if mended is None or not db.execute(sql, timeout=timeout, max_rows=max_rows).ok:
        return None
    result = db.execute(mended.sql, timeout=timeout, max_rows=max_rows)
    return (mended, result) if result.ok else None


@register
@dataclass
class FinalCheck(Output):
    """The final SQL and the version the run ends on: ``tables`` whose joins nothing read were
    left out (``by_key``: those read only through their join key, read now from the table
    they were joined to), ``values`` (as written, as stored) were written as the column stores
    them; ``kept`` with the reason when that version could not be used."""

    kind: ClassVar[str] = "final_check"
    required: ClassVar[tuple[str, ...]] = ("sql_before",)
    sql_before: str = ""
    sql_after: str | None = None
    tables: list[str] | None = None
    by_key: list[str] | None = None
    values: list[list[str]] | None = None
    rows: int | None = None
    kept: str | None = None
    apart: list[str] | None = None   # of ``tables``: named by the question, in another part
    notes: list[list[str]] | None = None  # (rule, sentence) of a rule that only reports

    def unread_tables(self) -> list[str]:
        """The tables left out that nothing read (the others were read through their key)."""
        return [t for t in self.tables or [] if t not in (self.by_key or [])]

    def rules_acted(self) -> list[str]:
        """The declared rules (:mod:`agents.rules.registry`) whose change this record holds."""
        return [name for name, acted in ((JOINS, self.tables), (CASE, self.values)) if acted] + \
            list(dict.fromkeys(name for name, _ in self.notes or []))

    def changes(self) -> list[str]:
        found = []
        apart = self.apart or []
        unread = [t for t in self.unread_tables() if t not in apart]
        by_key = [t for t in self.by_key or [] if t not in apart]
        if unread:
            found.append(f"left out the join of {', '.join(unread)}: nothing reads it and "
                         "the question does not name it")
        if by_key:
            found.append(f"left out the join of {', '.join(by_key)}: read only through its "
                         "join key, now read from the table it was joined to, and the question "
                         "does not name it")
        if apart:
            through = [t for t in apart if t in (self.by_key or [])]
            found.append(f"left out the join of {', '.join(apart)}: the question names it, but "
                         "no foreign key links it to the query's other tables (another "
                         "application's table), and nothing reads it but through its join"
                         + (f" (what was read of {', '.join(through)} through its join key "
                            "is now read from the table it was joined to)" if through else ""))
        for written, stored in self.values or []:
            found.append(f"'{written}' written as the column stores it: '{stored}'")
        return found + [sentence for _, sentence in self.notes or []]

    def text_lines(self) -> list[str]:
        if self.kept:
            return [f"  kept as it was: {self.kept}"]
        return ([f"  {change}" for change in self.changes()]
                + [indent(format_sql(self.sql_after or ""), 4), f"  runs: {self.rows} row(s)"])

    def shown_sql(self) -> list[str]:
        return [s for s in (self.sql_before, self.sql_after) if s]


def step() -> Step:
    return Step(STEP, "Final check", final_check,
                "Leave out joins nothing reads, write values as stored", then=(END,))


class ChecksFinalSQL:
    """Mixed into a pipeline whose ``steps`` hold :func:`step` and whose ``params`` hold
    :func:`param_specs`: the engine goes on to the Final check where the run would end and its
    final SQL, which runs, has something to mend."""

    closing = STEP

    def closes(self, ctx: StepContext) -> bool:
        """A final SQL that runs and that an enabled rule changes (what a query that fails
        reads is not known: its names are wrong)."""
        sql = self.final_sql(ctx.data)
        if not sql or not acting_at(FINAL_ANSWER, self.rules, ctx.params):
            return False
        if _mended(ctx, sql) is None:  # most runs: nothing to mend, the SQL is not run again
            return False
        return ctx.db.execute(sql, timeout=ctx.limits.timeout,
                              max_rows=ctx.limits.max_rows).ok


def _mended(ctx: StepContext, sql: str) -> Mended | None:
    """What the rules make of ``sql`` in this run, worked out once: the engine asks before the
    step (``closes``) and the step acts on the same answer (a resumed run asks again)."""
    known = getattr(ctx, "_final_check", None)
    key = (sql, json.dumps(ctx.params, sort_keys=True, default=str))  # any rule's switch
    if known is None or known[0] != key:
        known = (key,
                 mend(sql, ctx.schema, ctx.question, ctx.db, ctx.params,
                      timeout=ctx.limits.timeout, rules=ctx.pipeline.rules))
        ctx._final_check = known
    return known[1]


def final_check(ctx: StepContext) -> None:
    sql = ctx.pipeline.final_sql(ctx.data)
    ctx.set_inputs(sql=sql, **{name: bool(ctx.params.get(name)) for name in RULES})
    mended = _mended(ctx, sql) if sql else None
    if mended is None:
        ctx.skip("nothing to mend: the SQL is kept")
        return None
    record = FinalCheck(sql_before=sql, sql_after=mended.sql, tables=mended.tables or None,
                        by_key=mended.by_key or None,
                        values=[list(v) for v in mended.values] or None,
                        apart=mended.apart or None,
                        notes=[list(n) for n in mended.notes] or None)
    result = ctx.execute(mended.sql)
    if not result.ok:
        ctx.execute(sql)
        record.kept = f"the mended SQL fails ({result.error})"
        ctx.set_output(record, sql=sql)
        return None
    ctx.data["sql"] = mended.sql
    record.rows = result.row_count
    for name in record.rules_acted():
        acted = rule(name)
        ctx.note(f"rule '{acted.title}' ({acted.kind}, switch {acted.switch}): {acted.summary}")
    ctx.set_output(record, sql=mended.sql)
    return None
