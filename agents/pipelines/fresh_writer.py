"""The writer afresh: where a pipeline's repairs end on SQL that fails to run, one writer writes
the query again from the run's schema.

Why: on schemas nobody tuned for (abbreviated or renamed tables and columns), a small model's
repair loop keeps the column it settled on. Told the error, the hint and the real columns, it
writes the same failing name again, or another invented one, until its repairs are spent; the
run then ends on SQL that fails, which is never a right answer. CSMA's global writer
(:mod:`.csma.global_writer`) showed the remedy: a writer that starts again from the schema with
the studio's single prompt, without the failing SQL to copy, reads the names from the schema
rather than from its own earlier answer. This module is that writer for the pipelines whose
repairs end the run -- MAC-SQL's Refiner, DEA-SQL's execution check, R³'s corrections -- and
the code CSMA's global writer shares with them (:func:`written`).

Each SQL it writes gets the name rewrite the repairs get (``name_rewrite``); when it still fails,
it is repaired once in its own conversation, told the error and the execution hint (or, where
the hint holds the version that runs, with that version and no model call:
``repair_from_hint``). Its SQL becomes the run's SQL only when it runs; otherwise the run ends as
it would have without it (DEA-SQL's and R³'s with their error, MAC-SQL's on its last SQL). So it
can gain answers and cannot lose one, and it costs one model call (two with the repair) only in
runs that would have ended on failing SQL. It runs once per run.

The schema it reads is the run's (after retrieval), not a step's selection: the selection may be
what dropped the needed column. Its prompt is not among the forms retrieval sizes the schema
for, so switching it on changes nothing before the ending; a prompt over the model's context is
reported and the run ends as before.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agents.core.engine import END, STUDIO, ParamSpec, Step, StepContext, StepError
from agents.db.schema import Schema
from agents.llm.parsing import extract_sql
from agents.llm.prompts import load, render
from agents.outputs import FreshSQL
from agents.rules.name_rewrite import hint_with_rewrite, rewrite_or_none, take_rewrite
from agents.rules.runnable_ending import HINT_PARAM, asks_model, repair_from_hint
from .baseline import HERE as BASELINE_PROMPTS, ddl_with_examples, question_text
from .common import user_message

PARAM = "fresh_writer"
STEP = "fresh_writer"
MAX_TOKENS = 500
# its repair is told the error in R³'s words (the prompt CSMA's global writer always used);
# read from R³'s folder by path: R³'s steps hand their failing endings over to this module
R3_PROMPTS = Path(__file__).parent / "r3"


def param_spec(default: bool) -> ParamSpec:
    return ParamSpec(PARAM, default, origin=STUDIO,
                     help="when the repairs end on SQL that fails, one writer writes it afresh "
                          "from the schema")


def step() -> Step:
    return Step(STEP, "Writer afresh", write, "Write the SQL afresh from the schema",
                then=(END,))


def wanted(ctx: StepContext, result) -> bool:
    """Whether a repair loop ending on ``result`` goes on to the writer: its SQL fails, the
    switch is on and the writer has not written in this run."""
    return not result.ok and bool(ctx.params.get(PARAM)) and not ctx.data.get("afresh")


def hand_over(ctx: StepContext, result, failure: str | None = None) -> str | None:
    """Where a repair loop ends on ``result``, SQL that fails to run: :data:`STEP`, the step the
    run goes on to, when the switch is on and the writer has not written in this run; None
    otherwise. ``failure`` is how the loop's step would have failed the run (None: it ends on
    its SQL), which the writer's step fails with if its own SQL fails too."""
    if not wanted(ctx, result):
        return None
    ctx.data["afresh"] = {"sql": result.sql, "error": result.error, "failure": failure}
    ctx.note(f"the repairs end on SQL that fails: a writer writes it afresh from the schema "
             f"({PARAM})")
    return STEP


def write(ctx: StepContext) -> None:
    data = ctx.data
    handed = data.get("afresh") or {}
    failing = data.get("sql")
    if not failing:
        ctx.skip("nothing to do: the run has no SQL")
        return None
    if not ctx.params.get(PARAM):  # resumed here with the switch off
        return _kept(ctx, handed, "the writer afresh is off")
    # run again here: a run resumed at this step with edited SQL that runs keeps it
    ran = ctx.db.execute(failing, timeout=ctx.limits.timeout, max_rows=1)
    if ran.ok:
        ctx.skip("nothing to do: the SQL runs")
        return None
    ctx.set_inputs(sql=failing, error=ran.error, tables=[t.name for t in ctx.schema.tables],
                   name_rewrite=bool(ctx.params.get("name_rewrite")),
                   repair_from_hint=bool(ctx.params.get(HINT_PARAM)))
    base = {"failed_sql": failing, "failed_error": ran.error,
            "tables": [t.name for t in ctx.schema.tables]}
    try:
        sql, result, extra = written(ctx, ctx.schema)
    except StepError as exc:  # no SQL in its answer, or a prompt over the context
        ctx.execute(failing)  # the step ends on the SQL the run keeps
        ctx.set_output(FreshSQL(sql="", executes=False, taken=False, **base), sql=failing)
        return _kept(ctx, handed, f"the writer wrote no SQL ({exc})")
    taken = bool(result.ok)
    ctx.set_output(FreshSQL(sql=sql, executes=taken, taken=taken, **base, **extra),
                   sql=sql if taken else failing)
    if not taken:
        ctx.execute(failing)
        return _kept(ctx, handed, f"its SQL fails too ({result.error})")
    data["sql"] = sql
    data["afresh"] = {**handed, "taken": True}
    for key in ("last_error", "last_error_class"):  # the failure a repair loop kept (R³)
        if key in data:
            data[key] = None
    if "stop_reason" in data:
        data["stop_reason"] = "fresh_writer"
    ctx.note(f"the writer's SQL runs: {result.row_count} row(s); it is the answer")
    return None


def _kept(ctx: StepContext, handed: dict, why: str) -> None:
    """The writer did not mend the run: it ends as the repair loop would have (failed with its
    error, or on its last SQL)."""
    if handed.get("failure"):
        raise StepError(f"{handed['failure']}; {why}")
    ctx.note(f"{why}: the run keeps its last SQL")
    return None


def written(ctx: StepContext, visible: Schema):
    """``(sql, result, extra)``: SQL written from ``visible`` with the single prompt, after the
    name rewrite and, when it still fails, one repair told the error and the hint; ``extra``
    holds the output's fields for the repair and the rewrite. Raises :class:`StepError` when an
    answer holds no SQL or a prompt is over the context."""
    messages = user_message(render(load(str(BASELINE_PROMPTS), "writer"),
                                   schema=ddl_with_examples(visible),
                                   question=question_text(ctx.question, ctx.evidence)))
    first = ctx.ask(messages, parse=extract_sql, max_tokens=MAX_TOKENS).strip()
    sql, result, rewritten = _runnable(ctx, ctx.execute(first), visible)
    repair = {}
    if not result.ok:  # one repair in its conversation, told the error (and the hint)
        hint = (hint_with_rewrite(ctx.db, result.error, result.sql, visible,
                                  timeout=ctx.limits.timeout) if ctx.limits.hints else None)
        hinted = repair_from_hint(ctx, result.sql, result.error, hint, schema=visible,
                                  record=True)
        if hinted is not None:  # the hint's version runs: no model call
            return hinted.sql, hinted.result, {"first_sql": first, "first_error": result.error,
                                               "from_hint": True, "hint_rewrite": hinted.change}
        messages = messages + [
            {"role": "assistant", "content": f"```sql\n{first}\n```"},
            {"role": "user", "content": render(load(str(R3_PROMPTS), "exec_error"), sql=first,
                                               error=dataclasses.replace(
                                                   result, hint=hint).feedback())}]
        second = ctx.ask(messages, parse=extract_sql, max_tokens=MAX_TOKENS).strip()
        repair = {"first_sql": first, "first_error": result.error,
                  **({} if asks_model(ctx) is None else {"from_hint": False})}
        sql, result, rewritten = _runnable(ctx, ctx.execute(second), visible)
    return sql, result, {**repair, **(rewritten or {})}


def _runnable(ctx: StepContext, result, visible: Schema):
    """``(sql, result, written)``: the SQL as it ran, or, with ``name_rewrite`` on and one clear
    change within ``visible`` making it run, that version (:func:`take_rewrite`)."""
    if result.ok or not ctx.params.get("name_rewrite"):
        return result.sql, result, None
    return take_rewrite(rewrite_or_none(ctx.db, result.error, result.sql, visible,
                                        timeout=ctx.limits.timeout), result, ctx.execute)
