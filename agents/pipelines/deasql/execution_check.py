"""Execution check: the final SQL must run; when it does not, the model repairs it from the error.

The paper stops after active learning and does not execute anything. This step is this
implementation's addition, because the studio promises an executable answer: it runs the SQL
read-only and, on an error, shows the model the error (against the whole schema, in case the
information filter dropped a needed column) up to ``repair_attempts`` times; a name error comes
with the hint of :mod:`agents.error_hints`.
"""

from __future__ import annotations

from ...engine import StepContext, StepError
from ...outputs import ExecutionCheck
from ...sqltext import same_sql
from .shared import (SQL_ANSWER_SCHEMA, foreign_key_lines, hint_text, parse_sql, prompt,
                     table_info)

MAX_TOKENS = 400


def run(ctx: StepContext) -> None:
    sql = ctx.data.get("sql")
    if not sql:
        raise StepError("there is no SQL to execute")
    ctx.set_inputs(sql=sql)
    result = ctx.execute(sql)
    attempts = ctx.params["repair_attempts"]
    attempt = 0
    history = []
    while not result.ok and attempt < attempts:
        attempt += 1
        error = result.feedback()
        fixed = ctx.ask(prompt("execution_repair", table_info=table_info(ctx.schema),
                               foreign_keys=", ".join(foreign_key_lines(ctx.schema)) or "None",
                               question=ctx.question.strip(), hint=hint_text(ctx.evidence),
                               sql=sql, error=error),
                        parse=parse_sql, json_schema=SQL_ANSWER_SCHEMA,
                        max_tokens=MAX_TOKENS)
        history.append({"error": error, "error_class": result.error_class, "sql_before": sql,
                        "sql_after": fixed, "attempt": attempt})
        if same_sql(fixed, sql):
            ctx.note(f"repair attempt {attempt} returned the same SQL")
            break
        sql = fixed
        ctx.data["sql"] = sql
        result = ctx.execute(sql)
    ctx.set_output(ExecutionCheck(ok=result.ok, rows=result.row_count if result.ok else None,
                                  error=None if result.ok else result.error,
                                  error_class=None if result.ok else result.error_class,
                                  repairs=history), sql=sql)
    if not result.ok:
        tried = f" after {attempt} repair attempt(s)" if attempt else ""
        raise StepError(f"the SQL does not run{tried}: {result.error}")
    ctx.note(f"the SQL runs: {result.row_count} row(s)"
             + (f" after {attempt} repair(s)" if attempt else ""))
    return None
