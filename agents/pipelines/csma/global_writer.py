"""The global writer: when the rounds end on SQL that fails, one writer starts afresh from the
global schema.

Why: CSMA runs stop at ``max_rounds`` on SQL that fails to execute, and going on for more
rounds (``rounds_while_failing``) gains nothing: told the error and its hint, small agents
write the very same failing SQL again (measurements: ``bench/parameter-notes.md``). Each agent writes
from the tables it extracted, and a small model that has settled on a wrong column keeps it. The
global schema -- the paper's shared channel, what every agent has published -- holds the tables
of all agents' extractions, so a writer that reads it whole, with the studio's single prompt and
without the failing SQL to copy, starts from a larger view than any agent had. It sees nothing
private: only what the agents already shared.

Each SQL it writes gets the name rewrite the agents get, within the global schema; when it
still fails, the writer repairs it once in its own conversation, told the error and a hint
built from the global schema (the same repair ``selection``'s candidates get) -- or, where that
hint already holds the version of the query that runs (``name_rewrite`` off, or a version
within the global schema it did not find), with that version and no model call
(``repair_from_hint``, :mod:`agents.rules.runnable_ending`). Its SQL becomes
the run's SQL only when it runs; otherwise -- or when its answer holds no SQL -- the agents'
SQL stays. SQL that fails is never a right answer, so the step can gain answers and cannot lose
one (``global_writer``).

The same writer checks a run that ends at ``max_rounds`` on SQL that runs but that no check
agreed with (``global_check``): its result is compared, with the agreement check's equality,
with that of every SQL the agents wrote, the last first, and the latest one with the same
result is the answer (two results without rows say nothing; with no match the last SQL stays).
An earlier round may name the airline that "serves the most flights" and a later check replace
it with SQL returning the airline's id; a second writer agreeing with the earlier SQL is the
agreement the rounds did not reach.

When the check finds no agreement, a result without data weighs less than one with data
(``global_data_first``): if the agents' last SQL returns no rows (or NULLs only) while the
writer's returns data, the writer's SQL is the answer. It is ``selection``'s ``data_first``
rule (a vote sets aside results that hold no data): a query that joins on columns that never pair, names a value
that is not stored or reads the wrong table finds nothing, and a question that is asked of a
database is rarely answered by nothing. Where both find nothing, or the last SQL finds data,
the last SQL stays as before.

Either way it makes one model call (two with the repair), only in runs ending at ``max_rounds``.
"""

from __future__ import annotations

from agents.runs.candidates import Candidate, has_data, results_equal
from agents.core.engine import StepContext, StepError
from agents.rules.runnable_ending import HINT_PARAM
from agents.db.sqltext import same_sql
from .. import fresh_writer
from . import schema_ops as ops
from .context import rewrites_names
from .outputs import GlobalWriterSQL

PARAM = "global_writer"
CHECK_PARAM = "global_check"
DATA_FIRST_PARAM = "global_data_first"
STEP = "global_writer"


def wanted(ctx: StepContext, failing: bool | None = None) -> bool:
    """Whether the run, about to end at ``max_rounds`` on its last SQL, goes on to the global
    writer: the global schema holds a table, and either the SQL fails to execute
    (``global_writer``) or it runs but no check agreed with it (``global_check``). ``failing``
    defaults to what the last round recorded (``sql_runs``)."""
    data = ctx.data
    if not (data.get("sql") and data.get("global")):
        return False
    if failing is None:
        failing = data.get("sql_runs") is False
    return bool(ctx.params.get(PARAM if failing else CHECK_PARAM))


def write(ctx: StepContext) -> None:
    data = ctx.data
    # run again here: a run recorded before ``sql_runs`` was kept says so only this way
    agents = ctx.db.execute(data["sql"], timeout=ctx.limits.timeout, max_rows=1) \
        if data.get("sql") else None
    failing = agents is not None and not agents.ok
    if not wanted(ctx, failing):  # resumed here with the option off for this kind of ending
        ctx.skip("nothing to do: the option is off for this kind of ending"
                 if data.get("sql") else "nothing to do: the run has no SQL")
        return None
    shared = ops.in_schema_order(data.get("global") or {}, ctx.schema)
    mode = "rewrite" if failing else "check"
    ctx.set_inputs(tables=list(shared), name_rewrite=rewrites_names(ctx), mode=mode,
                   repair_from_hint=bool(ctx.params.get(HINT_PARAM)))
    base = {"tables": list(shared), "agents_sql": data["sql"],
            "agents_error": agents.error if failing else None, "mode": mode}
    try:
        sql, result, extra = _written(ctx, shared)
    except StepError as exc:  # no SQL in its answer, or a prompt over the context
        data["global_writer"] = False
        ctx.execute(data["sql"])  # the step ends on the SQL the run keeps
        ctx.note(f"the global writer wrote no SQL ({exc}): the agents' SQL stays")
        ctx.set_output(GlobalWriterSQL(sql="", executes=False, taken=False, **base),
                       sql=data["sql"])
        return None
    if not failing:
        return _check(ctx, sql, result, extra, base)
    taken = bool(result.ok)
    record = GlobalWriterSQL(sql=sql, executes=taken, taken=taken, **base, **extra)
    if taken:
        data.update(sql=sql, sql_by=None, sql_runs=True, global_writer=True)
        data["stop_reason"] = (f"{data.get('stop_reason') or 'the rounds ended'}, on SQL that "
                               f"fails; the global writer's SQL runs and is the answer")
    else:
        data["global_writer"] = False
        ctx.execute(data["sql"])  # the step ends on the SQL the run keeps
        ctx.note(f"the global writer's SQL fails too ({result.error}): the agents' SQL stays")
    ctx.set_output(record, sql=data["sql"])
    return None


def _written(ctx: StepContext, shared: ops.SchemaMap):
    """``(sql, result, extra)``: the writer's SQL from the global schema, after the name
    rewrite and, when it still fails, one repair (:func:`..fresh_writer.written`, the writer
    the other pipelines' repairs end with, here shown only the global schema)."""
    return fresh_writer.written(ctx, ops.restrict(ctx.schema, shared))


def _check(ctx: StepContext, sql: str, result, extra: dict, base: dict) -> None:
    """The rounds ended on SQL that runs but that no check agreed with: the writer's result is
    compared with that of every SQL the agents wrote in the run, the last first. The latest one
    returning the same result (the metric's equality; two results without rows say nothing) is
    the answer; with none, the last SQL stays -- unless it finds no data while the writer's
    SQL does (``global_data_first``), when the writer's SQL is the answer. Each of the agents'
    SQL is run again here, within the run's limits."""
    data = ctx.data
    agreed, compared = None, {}
    if result.ok and result.rows:
        for candidate in reversed(agents_sqls(data)):
            ran = compared[candidate] = ctx.db.execute(candidate, timeout=ctx.limits.timeout,
                                                       max_rows=ctx.limits.max_rows)
            if ran.ok and results_equal(Candidate.from_result("writer", sql, result),
                                        Candidate.from_result("agents", candidate, ran)):
                agreed = candidate
                break
    runs = len(compared)
    last = same_sql(agreed, data["sql"]) if agreed else False
    data_first = not agreed and _finds_data_alone(ctx, sql, result, compared)
    record = GlobalWriterSQL(sql=sql, executes=bool(result.ok), taken=data_first,
                             agreed_sql=agreed, agrees_with_last=last if agreed else None,
                             compared=runs, **base, **extra)
    if agreed and not last:
        data.update(sql=agreed, sql_by=None, sql_runs=True, global_writer=True)
        data["stop_reason"] = _unchecked_ending(data, "the global writer's result is that of "
                                                      "an earlier SQL of the agents, which is "
                                                      "the answer")
    elif agreed:
        data["global_writer"] = True
        data["stop_reason"] = _unchecked_ending(data, "the global writer's result is the "
                                                      "same: the SQL stays")
    elif data_first:
        data.update(sql=sql, sql_by=None, sql_runs=True, global_writer=True)
        data["stop_reason"] = _unchecked_ending(data, "the agents' last SQL finds no data and "
                                                      "the global writer's does: its SQL is "
                                                      "the answer")
    else:
        data["global_writer"] = False
        why = ("the global writer's result is that of no SQL the agents wrote"
               if result.ok and result.rows else
               "the global writer's SQL returns no rows, which says little"
               if result.ok else f"the global writer's SQL fails ({result.error})")
        ctx.note(f"{why}: the agents' last SQL stays")
    ctx.execute(data["sql"])  # the step ends on the SQL the run keeps
    ctx.set_output(record, sql=data["sql"])
    return None


def _unchecked_ending(data: dict, how: str) -> str:
    """The run's stop reason once the global writer has checked its unchecked ending."""
    return f"{data.get('stop_reason') or 'the rounds ended'}, unchecked; {how}"


def _finds_data_alone(ctx: StepContext, sql: str, result, compared: dict) -> bool:
    """Whether, with ``global_data_first``, the writer's SQL finds data (a value that is not
    NULL) and the agents' last SQL finds none. ``compared`` holds the results the comparison
    already ran, by SQL: the last SQL's is among them (it is run here only if not)."""
    if not (ctx.params.get(DATA_FIRST_PARAM) and result.ok
            and has_data(Candidate.from_result("writer", sql, result).result)):
        return False
    last = next((ran for written, ran in compared.items()
                 if same_sql(written, ctx.data["sql"])), None)
    if last is None:
        last = ctx.db.execute(ctx.data["sql"], timeout=ctx.limits.timeout,
                              max_rows=ctx.limits.max_rows)
    return bool(last.ok) and not has_data(Candidate.from_result("agents", ctx.data["sql"],
                                                                last).result)


def agents_sqls(data: dict) -> list[str]:
    """Every distinct SQL the agents wrote in the run, in the order written: each round's SQL
    and each agreement check's own SQL."""
    written = [sql for round_ in data.get("rounds") or []
               for sql in ((round_.get("check") or {}).get("own_sql"), round_.get("sql"))]
    seen: list[str] = []
    for sql in [*written, data.get("sql")]:
        if isinstance(sql, str) and sql.strip() and not any(same_sql(sql, s) for s in seen):
            seen.append(sql)
    return seen
