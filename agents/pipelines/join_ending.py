"""A final SQL that joins a table it reads nothing of, and the question does not name, ends
without that join.

``SELECT T1.name FROM battle AS T1 JOIN ship AS T2 ON T1.id = T2.lost_in_battle WHERE
T1.bulgarian_commander = 'Kaloyan'`` reads no column of ``ship`` outside its ``ON``: the join
only keeps the battles that lost a ship, once per ship. The question ("the battles between
commander Kaloyan and ...") asked for neither. A 1.5B model adds such joins because the table
was in its schema, and the papers' loops do not remove them: a query that runs and returns rows
passes MAC-SQL's Refiner, DEA-SQL's execution check, R³'s reviewers and CSMA's checks alike.
Where the question names the joined table ("teachers who teach a course", "students who have
pets", "visitors who visited a museum twice"), the join is the filter it asks for and stays.

So a pipeline with ``drop_unread_joins`` on goes, where it would end, to one more step, the
Join check, when its final SQL has such a join (:func:`agents.unread_joins.unread_joins`: plain
inner joins of the outermost SELECT, read only in their own equality condition); the step runs
the SQL without them and ends on it, or keeps the SQL when that version does not run. The
trace shows both queries and the tables left out. Not in any of the papers: off, the run ends
where the paper's algorithm ends.

A question names a table when one of its words is one of the table name's words (``pets`` and
``Has_Pet``) or, for words of four letters or more, one holds the other (``languages`` and
``countrylanguage``, ``visited`` and ``visit``): a word written into a longer one keeps a join
rather than drop it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ..engine import END, ParamSpec, Step, StepContext
from ..outputs.base import Output, register
from ..outputs.common import indent
from ..retrieval.ranking import query_words, words
from ..sqltext import format_sql
from ..unread_joins import WithoutUnreadJoins, unread_joins

PARAM = "drop_unread_joins"
STEP = "join_check"
LONG_WORD = 4   # shorter words must match a table name's word whole


def param_spec() -> ParamSpec:
    return ParamSpec(PARAM, True,
                     help="end without a join of a table the final SQL reads nothing of and "
                          "the question does not name (a step of its own, after the "
                          "pipeline's last; not in the paper); off: the SQL is kept as the "
                          "paper's algorithm ends it")


def question_names(question: str, table: str) -> bool:
    """Whether a word of ``question`` names ``table`` (see the module's docstring)."""
    asked = query_words(question)
    own = words(table)
    if set(asked) & set(own):
        return True
    return any(a in w or w in a for w in own if len(w) >= LONG_WORD
               for a in asked if len(a) >= LONG_WORD)


def unnamed_unread_joins(sql: str | None, schema, question: str) -> WithoutUnreadJoins | None:
    """``sql`` without its joins of tables nothing reads and the question does not name."""
    return unread_joins(sql, schema, keep=lambda table: question_names(question, table))


def ending_for(sql: str | None, schema, question: str, db, *, timeout: float,
               max_rows: int):
    """``(without, result)``: the final SQL without such joins and its result, where the final
    SQL runs and that version runs too, else None: what the Join check ends on, for a replay on
    recorded runs."""
    without = unnamed_unread_joins(sql, schema, question)
    if without is None or not db.execute(sql, timeout=timeout, max_rows=max_rows).ok:
        return None
    result = db.execute(without.sql, timeout=timeout, max_rows=max_rows)
    return (without, result) if result.ok else None


@register
@dataclass
class JoinCheck(Output):
    """The final SQL and, where it joined tables it reads nothing of that the question does not
    name, the SQL without those joins (``tables``) that the run ends on; ``kept`` with the
    reason when that version could not be used."""

    kind: ClassVar[str] = "join_check"
    required: ClassVar[tuple[str, ...]] = ("sql_before",)
    sql_before: str = ""
    sql_after: str | None = None
    tables: list[str] | None = None
    rows: int | None = None
    kept: str | None = None

    def text_lines(self) -> list[str]:
        if self.kept:
            return [f"  kept as it was: {self.kept}"]
        return [f"  left out the join of {', '.join(self.tables or [])}: nothing reads it and "
                "the question does not name it",
                indent(format_sql(self.sql_after or ""), 4),
                f"  runs: {self.rows} row(s)"]

    def shown_sql(self) -> list[str]:
        return [s for s in (self.sql_before, self.sql_after) if s]


def step() -> Step:
    return Step(STEP, "Join check", join_check,
                "Leave out joins that nothing reads and the question does not name",
                then=(END,))


class DropsUnreadJoins:
    """Mixed into a pipeline whose ``steps`` hold :func:`step` and whose ``params`` hold
    :func:`param_spec`: the engine goes on to the Join check where the run would end and its
    final SQL has a join to leave out."""

    closing = STEP

    def closes(self, ctx: StepContext) -> bool:
        """A final SQL that runs and has such a join (what a query that fails reads is not
        known: its names are wrong)."""
        sql = self.final_sql(ctx.data)
        if not ctx.params.get(PARAM) or unnamed_unread_joins(sql, ctx.schema,
                                                             ctx.question) is None:
            return False
        return ctx.execute(sql, record=False).ok


def join_check(ctx: StepContext) -> None:
    sql = ctx.pipeline.final_sql(ctx.data)
    ctx.set_inputs(sql=sql)
    if not ctx.params.get(PARAM):
        ctx.skip(f"{PARAM} is off: the SQL is kept")
        return None
    without = unnamed_unread_joins(sql, ctx.schema, ctx.question)
    if without is None:
        ctx.set_output(JoinCheck(sql_before=sql or "", kept="no join to leave out"), sql=sql)
        return None
    result = ctx.execute(without.sql)
    if not result.ok:
        ctx.execute(sql)
        ctx.set_output(JoinCheck(sql_before=sql, sql_after=without.sql, tables=without.tables,
                                 kept=f"without the join it fails ({result.error})"), sql=sql)
        return None
    ctx.data["sql"] = without.sql
    ctx.set_output(JoinCheck(sql_before=sql, sql_after=without.sql, tables=without.tables,
                             rows=result.row_count), sql=without.sql)
    return None
