"""The global writer: when the rounds end on SQL that fails, one writer starts afresh from the
global schema.

Why: in the seed-7 benchmark runs, 8 of 100 CSMA runs stopped at ``max_rounds`` on SQL that
fails to execute, and going on for more rounds (``rounds_while_failing``) gained nothing: told
the error and its hint, the 1.5B agents wrote the very same failing SQL again. Each agent writes
from the tables it extracted, and a small model that has settled on a wrong column keeps it. The
global schema -- the paper's shared channel, what every agent has published -- holds the tables
of all agents' extractions, so a writer that reads it whole, with the studio's single prompt and
without the failing SQL to copy, starts from a larger view than any agent had. It sees nothing
private: only what the agents already shared.

Each SQL it writes gets the name rewrite the agents get, within the global schema; when it
still fails, the writer repairs it once in its own conversation, told the error and a hint
built from the global schema (the same repair ``selection``'s candidates get). Its SQL becomes
the run's SQL only when it runs; otherwise -- or when its answer holds no SQL -- the agents'
SQL stays. SQL that fails is never a right
answer, so the step can gain answers and cannot lose one. It makes one model call (two with the repair),
and only in runs that would otherwise end on SQL that fails.
"""

from __future__ import annotations

import dataclasses

from ...engine import StepContext, StepError
from ...name_rewrite import hint_with_rewrite
from ...parsing import extract_sql
from ...prompts import load, render
from ..baseline import HERE as BASELINE_PROMPTS, ddl_with_examples
from ..common import user_message
from ..r3.steps import HERE as R3_PROMPTS
from . import schema_ops as ops
from .outputs import GlobalWriterSQL

PARAM = "global_writer"
STEP = "global_writer"
MAX_TOKENS = 500


def wanted(ctx: StepContext) -> bool:
    """Whether the run, about to end on its last SQL, goes on to the global writer: the option
    is on, the SQL failed to execute when it was written, and the global schema holds a table."""
    data = ctx.data
    return bool(ctx.params.get(PARAM) and data.get("sql") and data.get("sql_runs") is False
                and data.get("global"))


def write(ctx: StepContext) -> None:
    from .steps import question_text, rewrites_names, runnable_version  # steps imports this

    if not wanted(ctx):  # resumed here with the option off, or with SQL that runs
        ctx.skip("nothing to do: the option is off, or the run's SQL runs" if ctx.data.get("sql")
                 else "nothing to do: the run has no SQL")
        return None
    data = ctx.data
    shared = ops.in_schema_order(data.get("global") or {}, ctx.schema)
    visible = ops.restrict(ctx.schema, shared)
    ctx.set_inputs(tables=list(shared), name_rewrite=rewrites_names(ctx))
    agents = ctx.db.execute(data["sql"], timeout=ctx.limits.timeout, max_rows=1)
    messages = user_message(render(load(str(BASELINE_PROMPTS), "writer"),
                                   schema=ddl_with_examples(visible),
                                   question=question_text(ctx)))
    repair = None
    try:
        first = ctx.ask(messages, parse=extract_sql, max_tokens=MAX_TOKENS).strip()
        sql, result, rewritten = runnable_version(ctx, ctx.execute(first), shared, ctx.execute)
        if not result.ok:  # one repair in its conversation, told the error (and the hint)
            messages = messages + [
                {"role": "assistant", "content": f"```sql\n{first}\n```"},
                {"role": "user", "content": render(load(str(R3_PROMPTS), "exec_error"),
                                                   sql=first, error=_feedback(ctx, result,
                                                                              visible))}]
            second = ctx.ask(messages, parse=extract_sql, max_tokens=MAX_TOKENS).strip()
            repair = {"first_sql": first, "first_error": result.error}
            sql, result, rewritten = runnable_version(ctx, ctx.execute(second), shared,
                                                      ctx.execute)
    except StepError as exc:  # no SQL in its answer, or a prompt over the context
        data["global_writer"] = False
        ctx.execute(data["sql"])  # the step ends on the SQL the run keeps
        ctx.note(f"the global writer wrote no SQL ({exc}): the agents' SQL stays")
        ctx.set_output(GlobalWriterSQL(sql="", tables=list(shared), executes=False,
                                       taken=False, agents_sql=data["sql"],
                                       agents_error=None if agents.ok else agents.error,
                                       **(repair or {})), sql=data["sql"])
        return None
    taken = bool(result.ok)
    record = GlobalWriterSQL(
        sql=sql, tables=list(shared), executes=taken, taken=taken,
        agents_sql=data["sql"], agents_error=None if agents.ok else agents.error,
        **(repair or {}), **(rewritten or {}))
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


def _feedback(ctx: StepContext, result, visible) -> str:
    """The error as the writer reads it, with a hint built from the global schema only (never
    a table the agents did not share), unless hints are off."""
    hint = (hint_with_rewrite(ctx.db, result.error, result.sql, visible,
                              timeout=ctx.limits.timeout) if ctx.limits.hints else None)
    return dataclasses.replace(result, hint=hint).feedback()
