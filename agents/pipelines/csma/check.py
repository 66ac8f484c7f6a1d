"""CSMA's check step: an agent checks the last round's SQL against the schema it knows. By the
paper's verdict (the model judges) or, for small models, by agreement: the checker writes its own
SQL and the check is positive when both return the same result."""

from __future__ import annotations

from agents.runs.candidates import Candidate, results_equal
from agents.core.engine import StepContext, UnparseableAnswer
from agents.pipelines.csma.outputs import SQLCheck
from agents.rules.outer_columns import outer_column_in_subquery
from agents.rules.unread_joins import tables_named, unread_joins
from agents.llm.prompts import load, render
from agents.db.schema import Schema
from agents.pipelines.common import user_message
from agents.pipelines.csma import schema_ops as ops
from agents.pipelines.csma.answers import CHECK_JSON_SCHEMA, NEGATIVE, POSITIVE, parse_check
from agents.pipelines.csma.context import (AGREEMENT, CHECK_MAX_TOKENS, HERE, agent_label,
    check_method, execution_text, extracted_schema, known_schema, question_text, rewrites_names,
    row_count, runnable_version, schema_texts, variant, write_sql)


def check(ctx: StepContext, agent: int) -> str | None:
    """SQL correctness check (4.4): the round's agent checks the previous round's SQL against
    its latest known schema -- by the model's verdict, or (``check_method=agreement``, SQL that
    runs) by writing its own SQL and comparing results; a positive check ends the run."""
    data = ctx.data
    sql = (data.get("sql") or "").strip()
    if not sql:
        ctx.skip("there is no SQL to check yet")
        return f"generate:{agent}"
    known = known_schema(ctx, agent)
    author = data.get("sql_by")
    method = check_method(ctx)
    ctx.set_inputs(round=data["round"], sql_by=agent_label(author) if author else "edited",
                   known_tables=list(known), variant=variant(ctx), check_method=method,
                   name_rewrite=rewrites_names(ctx),
                   outer_column_check=bool(ctx.params["outer_column_check"]),
                   ignore_unread_joins=bool(ctx.params["ignore_unread_joins"]))
    result = ctx.execute(sql)
    # no hint when hints are off for the run (``--no-error-hints``)
    execution = execution_text(result, ops.restrict(ctx.schema, known)
                               if ctx.limits.hints else None, ctx.db, ctx.limits.timeout)
    outer = (outer_column_in_subquery(sql, ctx.schema)
             if result.ok and ctx.params["outer_column_check"] else None)
    if outer:
        execution += f"; but {outer}"
    verdict, own = _decide(ctx, agent, known, sql, result, execution, method, outer)
    record = _check_record(ctx, agent, sql, execution, method, verdict, own)
    data["checks"] = list(data.get("checks") or []) + [record]
    if data.get("rounds") and data["rounds"][-1].get("round") == data["round"]:
        data["rounds"][-1]["check"] = record
    ctx.set_output(SQLCheck(round=data["round"], agent=agent_label(agent),
                            verdict=verdict["verdict"], reason=verdict["reason"],
                            sql_by=agent_label(author) if author else "edited",
                            execution=execution, sql=sql, method=method,
                            own_sql=record.get("own_sql"),
                            own_execution=record.get("own_execution"),
                            own_runs=record.get("own_runs"), agrees=record.get("agrees"),
                            own_written_sql=record.get("own_written_sql"),
                            own_written_error=record.get("own_written_error"),
                            own_rewrite=record.get("own_rewrite"),
                            own_unread_joins=record.get("own_unread_joins"),
                            own_compared_sql=record.get("own_compared_sql")), sql=sql)
    if verdict["verdict"] == POSITIVE:
        data["stop_reason"] = (f"{agent_label(agent)}'s own SQL returns the same result"
                               if verdict.get("agrees") else
                               f"{agent_label(agent)} judged the SQL correct")
        return None
    return f"generate:{agent}"


def _decide(ctx: StepContext, agent: int, known: ops.SchemaMap, sql: str, result,
            execution: str, method: str, outer: str | None = None) -> tuple[dict, dict | None]:
    """The check's verdict (``{"verdict", "reason"}``, plus ``agrees`` when results were
    compared) and the agent's own attempt, if it wrote one. The model judges unless an
    agreement check can compare two results that say something. SQL whose subquery selects
    an outer query's column (``outer`` describes it, :mod:`agents.rules.outer_columns`) is checked as
    SQL that fails: the model judges it, told why, and the check is negative whatever it says
    (overruled, the reason the writer is told is that description)."""
    own = None
    if method == AGREEMENT and result.ok and not outer:
        own = _own_attempt(ctx, agent, known)
    if own is not None and own["result"].ok:
        agreement = _agreement(ctx, result, own) if own["result"].rows or result.rows else None
        if agreement is not None:
            return agreement, own
        if own.get("unread_joins"):
            ctx.note(f"its own SQL without its join of {', '.join(own['unread_joins'])} "
                     f"returns no rows, as the checked SQL does, which says little: the "
                     f"model judges the SQL instead")
        else:
            ctx.note("its own SQL returns no rows either, which says little: the model "
                     "judges the SQL instead")
    elif own is not None:
        ctx.note(f"its own SQL fails to execute ({own['result'].error}), so there is no "
                 f"result to compare: the model judges the SQL instead")
    verdict = _judge(ctx, known, sql, execution)
    if verdict["verdict"] == POSITIVE and not result.ok:
        verdict = {"verdict": NEGATIVE, "reason": verdict["reason"]}
        ctx.note("judged correct by the model, but the SQL failed to execute: counted as "
                 "negative")
    elif verdict["verdict"] == POSITIVE and outer:
        verdict = {"verdict": NEGATIVE, "reason": outer}
        ctx.note("judged correct by the model, but a subquery of the SQL selects a column of "
                 "the outer query: counted as negative")
    return verdict, own


def _check_record(ctx: StepContext, agent: int, sql: str, execution: str, method: str,
                  verdict: dict, own: dict | None) -> dict:
    """What ``ctx.data["checks"]`` keeps of a check; with an own attempt, also what the
    generate step needs to take its SQL as the round's new one (and when it may)."""
    record = {"round": ctx.data["round"], "agent": agent, "sql": sql,
              "sql_by": ctx.data.get("sql_by"), "verdict": verdict["verdict"],
              "reason": verdict["reason"], "execution": execution, "method": method}
    if own is not None:
        record.update(own_sql=own["sql"], own_execution=execution_text(own["result"]),
                      own_runs=own["result"].ok, agrees=verdict.get("agrees"),
                      own_written_for=own["written_for"])
        if own.get("unread_joins"):
            record.update(own_unread_joins=own["unread_joins"],
                          own_compared_sql=own["compared_sql"])
        if own.get("rewrite"):
            record.update(own_written_sql=own["written_sql"],
                          own_written_error=own["written_error"], own_rewrite=own["rewrite"])
        if own.get("sub_questions") is not None:
            record["own_sub_questions"] = own["sub_questions"]
    return record


def _judge(ctx: StepContext, known: ops.SchemaMap, sql: str, execution: str) -> dict:
    """The paper's check: the model's verdict and reason on ``sql``, given its execution."""
    schema_text, fk_text = schema_texts(ctx, known)
    prompt = render(load(str(HERE), "check"), schema=schema_text, foreign_keys=fk_text,
                    question=question_text(ctx), sql=sql, execution=execution)
    return ctx.ask(user_message(prompt), parse=parse_check, json_schema=CHECK_JSON_SCHEMA,
                   max_tokens=CHECK_MAX_TOKENS)


def _own_attempt(ctx: StepContext, agent: int, known: ops.SchemaMap) -> dict | None:
    """The checking agent's own SQL for the question, written as its generation would be
    (its extracted schema, no feedback), and its execution. None -- the model judges instead
    -- when it extracted nothing, when the SQL to check is its own (it would only repeat
    itself), or when its answer held no SQL even after the retry."""
    if ctx.data.get("sql_by") == agent:
        ctx.note(f"the SQL to check is {agent_label(agent)}'s own, so writing it again would "
                 f"prove nothing: the model judges the SQL instead")
        return None
    extracted = extracted_schema(ctx, known)
    if not extracted:
        ctx.note(f"{agent_label(agent)} extracted no table, so it writes no SQL of its own to "
                 f"compare: the model judges the SQL instead")
        return None
    try:
        sql, sub_questions = write_sql(ctx, extracted, None)
    except UnparseableAnswer as exc:
        ctx.note(f"its own SQL could not be read ({exc}): the model judges the SQL instead")
        return None
    # run without the name hint: the checker's own failing SQL is only reported, or rewritten
    # where one clear change makes it run (``name_rewrite``)
    def run(query: str):
        return ctx.db.execute(query, timeout=ctx.limits.timeout, max_rows=ctx.limits.max_rows)

    sql, result, written = runnable_version(ctx, run(sql), extracted, run)
    return {"sql": sql, "sub_questions": sub_questions, "result": result,
            "written_for": _written_for(ctx, extracted), **(written or {})}


def _written_for(ctx: StepContext, extracted: ops.SchemaMap) -> dict:
    """What an agent's SQL was written from: reused by the generate step only if unchanged."""
    return {"tables": list(extracted), "variant": variant(ctx),
            "generation": ctx.params["generation"]}


def _agreement(ctx: StepContext, checked, own: dict) -> dict | None:
    """Positive when the checked SQL and the agent's own return the same result -- or, with
    ``ignore_unread_joins``, when they do once the own SQL's joins of tables nothing in it reads
    are left out (tables the checked SQL does not name: the checker's addition alone). None
    when that leaves two results with no rows, which say little (the model judges)."""
    agrees = _same_result(checked, own["sql"], own["result"])
    found = None if agrees else _without_unread_joins(ctx, checked, own["sql"])
    if found is not None:
        unread, says_little = found
        own["unread_joins"], own["compared_sql"] = unread.tables, unread.sql
        if says_little:
            return None
        agrees = True
        joined = ", ".join(unread.tables)
        reason = (f"its own SQL, written from its extracted schema, returns the same result "
                  f"once its join of {joined}, which nothing in it reads, is left out")
    elif agrees:
        reason = "its own SQL, written from its extracted schema, returns the same result"
    elif row_count(own["result"]) == row_count(checked):
        reason = ("its own SQL, written from its extracted schema, returns as many rows "
                  "with other values")
    else:
        reason = (f"its own SQL, written from its extracted schema, returns a different result "
                  f"({row_count(own['result'])} row(s) against {row_count(checked)})")
    return {"verdict": POSITIVE if agrees else NEGATIVE, "reason": reason, "agrees": agrees}


def _same_result(checked, sql: str, result) -> bool:
    return results_equal(Candidate.from_result("checked", checked.sql, checked),
                         Candidate.from_result("own", sql, result))


def _without_unread_joins(ctx: StepContext, checked, own_sql: str):
    """The own SQL without the joins nothing in it reads (:mod:`agents.rules.unread_joins`), when
    those tables are not in the checked SQL and the result is then the checked SQL's, and
    whether both results are empty; else None. In the benchmark traces a 1.5B agent joined a
    table it owns into its own SQL though it read nothing of it, and the check took the extra
    rows (or the rows it dropped) for a disagreement with SQL that was right."""
    if not ctx.params.get("ignore_unread_joins"):
        return None
    return agreement_without_unread_joins(ctx.db, ctx.schema, checked, own_sql,
                                          ctx.limits.timeout, ctx.limits.max_rows)


def agreement_without_unread_joins(db, schema: Schema, checked, own_sql: str, timeout: float,
                                   max_rows: int):
    """The rule itself, on a database handle (a measurement replays it on recorded checks):
    ``(unread, says_little)`` when the own SQL without its unread joins returns the checked
    SQL's result -- ``says_little`` when neither returns a row -- else None."""
    unread = unread_joins(own_sql, schema)
    if unread is None or {t.casefold() for t in unread.tables} & tables_named(checked.sql):
        return None
    result = db.execute(unread.sql, timeout=timeout, max_rows=max_rows)
    if not (result.ok and _same_result(checked, unread.sql, result)):
        return None
    return unread, not (checked.rows or result.rows)
