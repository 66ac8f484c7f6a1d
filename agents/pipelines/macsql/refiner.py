"""MAC-SQL's Refiner: run the SQL, and when it fails (or finds nothing) ask for a repair.

Algorithm 1 of the paper loops "execute, and on error refine" up to a maximum number of tries;
here each pass is one step event, so the user sees every error and every repaired query, and a
run can be resumed at any pass with hand-edited SQL. A repaired query is always executed again
by the next pass before it is accepted. Following the paper ("the retrieval of non-empty results")
an empty result counts as a failure unless ``refine_empty_result`` is off. A name error reaches
the model with the hint of :mod:`agents.rules.error_hints` (the real names it could have meant); with
``refiner_prompt="tables"`` (the default) also with the tables the SQL uses and their columns,
which alias to write or table to join (:mod:`..name_context`; read from the whole schema the run
has, so it may name a table the Selector left out, to join if the question needs it), and, after
any error, a line when the same SQL has failed before. Where that hint already holds the version
of the query that runs, the pass takes it as its repair, run again under the run's limits,
without asking the model (``repair_from_hint``, :mod:`agents.rules.runnable_ending`; off, the
model is asked as in the paper). Where the loop ends on SQL that fails to run, one writer may
write it afresh from the schema (``fresh_writer``, :mod:`..fresh_writer`).
"""

from __future__ import annotations

from pathlib import Path

from agents.db.sqltext import same_sql
from agents.core.engine import StepContext, StepError
from ...outputs import SQLRepair
from .. import fresh_writer
from agents.llm.parsing import extract_sql
from agents.llm.prompts import load, render
from ..common import evidence_text, macsql_schema, user_message
from agents.rules.name_context import name_error_context
from agents.rules.repeat_retry import ask_unrepeated, failed_before, retried
from agents.rules.runnable_ending import (HINT_PARAM, asks_model, repair_from_hint,
    runnable_ending)
from .values import shown_evidence, shown_schema

HERE = Path(__file__).parent
# refiner_prompt -> prompt file. "tables" is the paper's prompt with, after a name error, the
# block R³'s "tables" correction uses: given only the error and its hint, a small Refiner
# returns the SQL that has just failed (bench/parameter-notes.md).
PROMPTS = {"paper": "refiner", "tables": "refiner_tables"}
REPEATED = "This SQL has failed before in the same way: change what the error names.\n"

EMPTY_RESULT_ERROR = "The SQL executed without error but returned no rows"
EMPTY_RESULT_CLASS = "EmptyResult"


def run(ctx: StepContext) -> str | None:
    sql = (ctx.data.get("sql") or "").strip()
    if not sql:
        raise StepError("there is no SQL to check (the previous step produced none)")
    attempts = int(ctx.data.get("refine_attempts") or 0)
    ctx.set_inputs(sql=sql, repairs_so_far=attempts,
                   prompt=ctx.params["refiner_prompt"],
                   name_rewrite=ctx.params["name_rewrite"],
                   repair_from_hint=ctx.params[HINT_PARAM])
    result = ctx.execute(sql)
    if result.ok and (result.row_count > 0 or not ctx.params["refine_empty_result"]):
        ctx.set_output(SQLRepair(status="ok", rows=result.row_count), sql=sql)
        return None
    if result.ok:
        error, error_class = EMPTY_RESULT_ERROR, EMPTY_RESULT_CLASS
        shown_error = error
    else:
        error, error_class = result.error or "unknown error", result.error_class or "Error"
        shown_error = result.feedback()  # what the model reads: the error and its hint
    limit = ctx.params["max_refine"]
    if attempts >= limit:
        if end_on_rewrite(ctx, sql, result, attempts):
            return None
        ctx.set_output(SQLRepair(status="gave_up", error=error, error_class=error_class,
                                 attempt=attempts), sql=sql)
        ctx.note(f"still failing after {attempts} repair(s) (max_refine={limit})"
                 + ("" if fresh_writer.wanted(ctx, result) else "; keeping the last SQL"))
        return fresh_writer.hand_over(ctx, result)

    attempt = attempts + 1
    hinted = None if result.ok else repair_from_hint(ctx, sql, result.error, result.hint)
    if hinted is not None:  # the hint's version runs: no model call
        ctx.data["refine_attempts"] = attempt
        ctx.data["sql"] = hinted.sql
        ctx.set_output(SQLRepair(error=error, error_class=error_class, hint=result.hint,
                                 sql_before=sql, sql_after=hinted.sql, attempt=attempt,
                                 rewrite=hinted.change, from_hint=True), sql=hinted.sql)
        return "refiner"
    failed = failed_sqls(ctx, sql, result)
    prompt = refiner_prompt(ctx, sql, result, shown_error, error_class, failed)
    repaired = ask_unrepeated(
        ctx, lambda temperature: ctx.ask(user_message(prompt), parse=extract_sql,
                                         temperature=temperature).strip(),
        lambda answer: answer, failed)
    ctx.data["refine_attempts"] = attempt
    ctx.set_output(SQLRepair(error=error, error_class=error_class, hint=result.hint,
                             sql_before=sql, sql_after=repaired, attempt=attempt,
                             from_hint=asks_model(ctx)), sql=repaired)
    if same_sql(repaired, sql):
        ctx.note("the repair is the same SQL as before; asking again would give the same answer"
                 if not retried(ctx) else "the sampled repair is the same SQL as before too")
        if end_on_rewrite(ctx, sql, result, attempt):
            return None
        return fresh_writer.hand_over(ctx, result)
    ctx.data["sql"] = repaired
    return "refiner"


def end_on_rewrite(ctx: StepContext, sql: str, result, attempt: int) -> bool:
    """Where the Refiner's loop ends (repairs spent, or the repair repeated the SQL) on ``sql``
    failing on a column name, and ``name_rewrite`` is on, the run ends on the version one clear
    change makes run (:mod:`..runnable_ending`); whether it did."""
    ending = runnable_ending(ctx, result)
    if ending is None:
        return False
    rewritten, rerun, written = ending
    ctx.data["sql"] = rewritten
    ctx.set_output(SQLRepair(status="rewritten", error=result.error,
                             error_class=result.error_class, hint=result.hint, sql_before=sql,
                             sql_after=rewritten, attempt=attempt, rows=rerun.row_count,
                             **written), sql=rewritten)
    return True


def refiner_prompt(ctx: StepContext, sql: str, result, shown_error: str, error_class: str,
                   failed: list[str]) -> str:
    """The Refiner's prompt in the ``refiner_prompt`` variant the run asks for."""
    variant = ctx.params["refiner_prompt"]
    desc_str, fk_str = macsql_schema(shown_schema(ctx), ctx.data.get("selection"))
    fields = dict(desc_str=desc_str, fk_str=fk_str, query=ctx.question.strip(),
                  evidence=evidence_text(shown_evidence(ctx)), sql=sql, sqlite_error=shown_error,
                  exception_class=error_class)
    if variant == "tables":
        fields["repeated"] = REPEATED if failed_before(sql, failed) else ""
        fields["tables"] = "" if result.ok else name_error_context(result.error, sql,
                                                                    ctx.schema)
    return render(load(str(HERE), PROMPTS[variant]), **fields)


def failed_sqls(ctx: StepContext, sql: str, result) -> list[str]:
    """The SQL of this run that failed to run: the current one unless it only returned no rows
    (a model that answers an empty result with the same SQL is often right), and every earlier
    Refiner pass's failing SQL."""
    earlier = [(e.parsed or {}) for e in ctx.run.events if e.step == "refiner"]
    return [p["sql_before"] for p in earlier if p.get("sql_before")
            and p.get("error_class") != EMPTY_RESULT_CLASS] + ([] if result.ok else [sql])
