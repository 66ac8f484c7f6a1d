"""Active learning (Section 2.5, Appendix B.5.1): fix the error patterns of the model's past.

The paper shows three fixed error cases -- extremum questions answered with a MAX/MIN subquery
rewritten to ORDER BY ... LIMIT 1, and a non-extremum question left alone -- and asks the model
to decide whether the question is an extremum problem and, if so, to modify the SQL. A rewrite
is applied only when the model says the question is an extremum problem, the SQL really changes
and the new SQL runs; otherwise the SQL stays and the step says why.

With ``active_learning="extremum"`` (the default) the step asks the model only when the question
or the SQL looks like an extremum problem (a superlative word, or MAX/MIN in the SQL): the cases
teach nothing else, and the call costs the local model several seconds.
"""

from __future__ import annotations

import re

from agents.core.engine import ParseError, StepContext
from .outputs import ActiveLearning
from agents.llm.parsing import extract_sql
from agents.db.sqltext import same_sql
from .shared import hint_text, parse_sql, prompt, table_info, working_schema

MAX_TOKENS = 400
_SUPERLATIVE = re.compile(
    r"\b(most|least|fewest|highest|lowest|largest|smallest|biggest|greatest|maximum|minimum|"
    r"max|min|oldest|youngest|newest|latest|earliest|longest|shortest|best|worst|top|cheapest|"
    r"priciest|busiest|heaviest|lightest|fastest|slowest|richest|poorest|[a-z]{3,}iest)\b",
    re.IGNORECASE)
_MIN_MAX = re.compile(r"\b(MAX|MIN)\s*\(", re.IGNORECASE)
_MODIFIED = re.compile(r"modified\s+SQL\s*(?:is)?\s*[:：]", re.IGNORECASE)
_NOT_EXTREMUM = re.compile(r"\bnot\s+an?\s+extremum", re.IGNORECASE)
_IS_EXTREMUM = re.compile(r"\bis\s+an?\s+extremum", re.IGNORECASE)


def looks_extremum(question: str, sql: str | None) -> bool:
    return bool(_SUPERLATIVE.search(question or "") or _MIN_MAX.search(sql or ""))


def parse_answer(text: str) -> dict:
    """``{"extremum": True | False | None, "sql": str | None}`` from the model's answer."""
    text = text or ""
    if _NOT_EXTREMUM.search(text):
        extremum = False
    elif _IS_EXTREMUM.search(text):
        extremum = True
    else:
        extremum = None
    markers = list(_MODIFIED.finditer(text))
    sql = None
    if markers:
        sql = parse_sql(text[markers[-1].end():])
    else:
        try:
            sql = parse_sql(extract_sql(text))
        except ParseError:
            sql = None
    if sql is None and extremum is not False:
        raise ParseError("say whether the question is an extremum problem and end with "
                         "'The modified SQL: <SQL>'")
    return {"extremum": extremum, "sql": sql}


def run(ctx: StepContext) -> str:
    before = ctx.data.get("sql")
    mode = ctx.params["active_learning"]
    if mode == "off":
        ctx.skip("active learning is off")
        return "execution_check"
    if not before:
        ctx.skip("no SQL to check")
        return "execution_check"
    if mode == "extremum" and not looks_extremum(ctx.question, before):
        ctx.skip("not an extremum question (no superlative in the question, no MAX/MIN in the "
                 "SQL): the error cases do not apply")
        return "execution_check"
    schema = working_schema(ctx)
    ctx.set_inputs(sql=before, mode=mode)
    answer = ctx.ask(prompt("active_learning", question=ctx.question.strip(),
                            hint=hint_text(ctx.evidence), table_info=table_info(schema),
                            sql=before),
                     parse=parse_answer, max_tokens=MAX_TOKENS)
    after = answer["sql"]
    parsed = {"extremum": answer["extremum"], "applied": False, "sql_before": before,
              "sql_after": after or before}
    if answer["extremum"] is False:
        reason = "the model judged it is not an extremum problem: the SQL is unchanged"
    elif answer["extremum"] is None:
        reason = "the model did not say it is an extremum problem: the SQL is unchanged"
    elif same_sql(before, after):
        reason = "the modified SQL is the same: nothing to apply"
    else:
        result = ctx.execute(after)
        if result.ok:
            ctx.data["sql"] = after
            parsed["applied"] = True
            reason = "extremum problem: the modified SQL is applied"
        else:
            reason = f"the modified SQL fails ({result.error}): the SQL before it is kept"
    if not parsed["applied"]:
        ctx.execute(before)
    parsed["reason"] = reason
    ctx.note(reason)
    ctx.set_output(ActiveLearning(**parsed), sql=ctx.data["sql"])
    return "execution_check"
