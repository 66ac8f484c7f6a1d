"""Execution check: the final SQL must run; when it does not, the model repairs it from the error.

The paper stops after active learning and does not execute anything. This step is this
implementation's addition, because the studio promises an executable answer: it runs the SQL
read-only and, on an error, shows the model the error (against the whole schema, in case the
information filter dropped a needed column) up to ``repair_attempts`` times; a name error comes
with the hint of :mod:`agents.rules.error_hints`. When the repairs end on SQL that still fails on a
column name, the run ends on the version one clear change makes run (``name_rewrite``,
:mod:`..runnable_ending`); where it still fails, one writer may write it afresh from the schema
(``fresh_writer``, :mod:`..fresh_writer`). Where the error's hint already holds the version of
the query that runs, that version, run again under the run's limits, is the repair, with no
model call (``repair_from_hint``; off, the model is asked).

In the ``compact`` variant the repair prompt also lists, next to the error, every column of the
tables the query uses and of the tables that have the missing name: a small model given the
whole schema and the hint returned the same failing SQL, or swapped an invented table for a real
one without the columns it needed.
"""

from __future__ import annotations

from agents.core.engine import StepContext, StepError
from agents.rules.error_hints import (NO_SUCH_COLUMN, NO_SUCH_TABLE, missing_name, name_error_match,
    query_tables)
from ...outputs import ExecutionCheck
from .. import fresh_writer
from agents.db.sqltext import same_sql
from agents.rules.repeat_retry import ask_unrepeated
from agents.rules.runnable_ending import (HINT_PARAM, asks_model, repair_from_hint,
    runnable_ending)
from .shared import (COMPACT, SQL_ANSWER_SCHEMA, foreign_key_lines, hint_text, parse_sql, prompt,
                     table_info, variant)

MAX_TOKENS = 400


def tables_in_view(sql: str, error: str | None, schema) -> str:
    """``table: column, ...`` lines for the tables ``sql`` reads and the tables that have the
    name the error says is missing (a column, or a table name that is one of their columns)."""
    names = list(dict.fromkeys(query_tables(sql, schema).values()))
    match = name_error_match(error, (NO_SUCH_COLUMN, NO_SUCH_TABLE))
    if match:
        missing = missing_name(match).strip("`\"'[]")
        names += [t.name for t in schema.tables if t.column(missing) is not None]
    lines = []
    for name in dict.fromkeys(names):
        table = schema.table(name)
        if table is not None:
            lines.append(f"{table.name}: {', '.join(table.column_names())}")
    return "\n".join(lines) or "(none of the query's tables exists)"


def run(ctx: StepContext) -> str | None:
    sql = ctx.data.get("sql")
    if not sql:
        raise StepError("there is no SQL to execute")
    style = variant(ctx)
    ctx.set_inputs(sql=sql, variant=style, name_rewrite=ctx.params["name_rewrite"],
                   repair_from_hint=ctx.params[HINT_PARAM])
    result = ctx.execute(sql)
    attempts = ctx.params["repair_attempts"]
    attempt = 0
    history = []
    while not result.ok and attempt < attempts:
        attempt += 1
        error = result.feedback()
        hinted = repair_from_hint(ctx, sql, result.error, result.hint, record=True)
        if hinted is not None:  # the hint's version runs: no model call
            history.append({"error": error, "error_class": result.error_class,
                            "sql_before": sql, "sql_after": hinted.sql, "attempt": attempt,
                            "rewrite": hinted.change, "from_hint": True})
            sql, result = hinted.sql, hinted.result
            ctx.data["sql"] = sql
            break
        extra = ({"columns": tables_in_view(sql, result.error, ctx.schema)}
                 if style == COMPACT else {})
        messages = prompt("execution_repair_compact" if style == COMPACT
                          else "execution_repair", table_info=table_info(ctx.schema),
                          foreign_keys=", ".join(foreign_key_lines(ctx.schema)) or "None",
                          question=ctx.question.strip(), hint=hint_text(ctx.evidence),
                          sql=sql, error=error, **extra)
        fixed = ask_unrepeated(
            ctx, lambda temperature: ctx.ask(messages, parse=parse_sql,
                                             json_schema=SQL_ANSWER_SCHEMA,
                                             max_tokens=MAX_TOKENS, temperature=temperature),
            lambda answer: answer, [sql, *(h["sql_before"] for h in history)])
        history.append({"error": error, "error_class": result.error_class, "sql_before": sql,
                        "sql_after": fixed, "attempt": attempt,
                        **({} if asks_model(ctx) is None else {"from_hint": False})})
        if same_sql(fixed, sql):
            ctx.note(f"repair attempt {attempt} returned the same SQL")
            break
        sql = fixed
        ctx.data["sql"] = sql
        result = ctx.execute(sql)
    ending = runnable_ending(ctx, result)
    written = {}
    if ending is not None:
        sql, result, written = ending
        ctx.data["sql"] = sql
    ctx.set_output(ExecutionCheck(ok=result.ok, rows=result.row_count if result.ok else None,
                                  error=None if result.ok else result.error,
                                  error_class=None if result.ok else result.error_class,
                                  repairs=history, **written), sql=sql)
    if not result.ok:
        tried = f" after {attempt} repair attempt(s)" if attempt else ""
        failure = f"the SQL does not run{tried}: {result.error}"
        afresh = fresh_writer.hand_over(ctx, result, failure)
        if afresh:
            return afresh
        raise StepError(failure)
    ctx.note(f"the SQL runs: {result.row_count} row(s)"
             + (f" after {attempt} repair(s)" if attempt else "")
             + ("; rewritten to run" if written else ""))
    return None
