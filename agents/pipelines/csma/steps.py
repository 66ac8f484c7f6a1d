"""CSMA's steps: split the schema, then per round extract schema, check the last SQL, write SQL.

Every step reads and writes only ``ctx.data`` (see :func:`initial_data` for its keys), so a run
resumes from any step. Privacy is structural: a round step recomputes its agent's known schema
from that agent's private schema and the global schema, and every prompt is rendered from that
map alone (see :func:`~.schema_ops.restrict`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ...candidates import Candidate, results_equal
from ...engine import StepContext, StepError, UnparseableAnswer
from .outputs import AgentSQL, SchemaExtraction, SchemaPartition, SQLCheck
from ...error_hints import explain_error
from ...outer_columns import outer_column_in_subquery
from ...unread_joins import tables_named, unread_joins
from ...name_rewrite import REWRITE_SECONDS, hint_with_rewrite, rewrite_or_none, take_rewrite
from ...parsing import extract_sql
from ...prompts import load, render
from ...schema import Schema
from ..common import user_message
from ..macsql import decomposer as macsql_decomposer
from . import global_writer
from . import schema_ops as ops
from .answers import (CHECK_JSON_SCHEMA, NEGATIVE, POSITIVE, parse_check, parse_extraction,
                      parse_table_extraction)

HERE = Path(__file__).parent

# variant parameter -> prompt files. "paper": the paper's extraction of tables and columns, and
# a rewrite shown the rejected SQL with the checker's reason. "compact", for small models: the
# extraction names tables, each kept whole (so no agent writes SQL over columns the global
# schema lost), and a rewrite is told the rejected SQL's execution outcome
# and the reason instead of seeing its text (a 1.5B writer shown the SQL often copied it).
PAPER, COMPACT = "paper", "compact"
VARIANTS = (PAPER, COMPACT)
PROMPTS = {PAPER: {"extract": "extract", "generate": "generate", "feedback": "feedback"},
           COMPACT: {"extract": "extract_compact", "generate": "generate_compact",
                     "feedback": "feedback_compact"}}

# check_method parameter. "verdict", the paper's check: the model judges the SQL. "agreement"
# (the default), for small models: the checking agent writes its own SQL from its extracted
# schema and the check is positive when both return the same result (the metric's equality);
# on a disagreement its own SQL is the round's new SQL. A 1.5B checker judged nearly every query
# that ran "correct", also one written without the tables only the checker holds.
VERDICT, AGREEMENT = "verdict", "agreement"
CHECK_METHODS = (VERDICT, AGREEMENT)

EXTRACT_MAX_TOKENS = 400
EXTRACT_TABLES_MAX_TOKENS = 200
GENERATE_MAX_TOKENS = 500
DECOMPOSE_MAX_TOKENS = 900
CHECK_MAX_TOKENS = 160
ROUNDS_WHILE_FAILING = "rounds_while_failing"
PREVIEW_ROWS = 3       # result rows the checking agent is shown
PREVIEW_CHARS = 40     # longest value shown in such a row


def initial_data(ctx: StepContext) -> dict:
    return {
        "n_agents": 0,
        "partition_mode": "",
        "private": {},       # agent number (str) -> schema map
        "global": {},        # the global schema, shared by all agents
        "round": 0,
        "known": {},         # the current working agent's known schema
        "extracted": {},     # what the current working agent extracted this round
        "sql": None,
        "sql_by": None,      # agent number that wrote ``sql``
        "sql_round": None,
        "sql_runs": None,    # whether ``sql`` ran when its round wrote it
        "checks": [],        # every check: round, agent, sql, sql_by, verdict, reason,
                             # execution, method; an agreement check's own SQL: own_sql,
                             # own_execution, own_runs, agrees, own_written_for,
                             # own_sub_questions; rewritten (name_rewrite): own_written_sql,
                             # own_written_error, own_rewrite
        "rounds": [],        # per round: agent, extracted, global after, check, sql
        "stop_reason": None,
    }


# -- helpers ------------------------------------------------------------------------------------

def agent_label(agent: int) -> str:
    return f"Agent {agent}"


def question_text(ctx: StepContext) -> str:
    evidence = (ctx.evidence or "").strip()
    question = ctx.question.strip()
    return f"{question}\nHint: {evidence}" if evidence else question


def known_schema(ctx: StepContext, agent: int) -> ops.SchemaMap:
    """The agent's private schema merged with the global schema (paper 4.2), database order."""
    private = ctx.data["private"].get(str(agent))
    if private is None:
        raise StepError(f"{agent_label(agent)} does not exist in this run "
                        f"({ctx.data.get('n_agents', 0)} agents)")
    return ops.in_schema_order(ops.merge(private, ctx.data.get("global") or {}), ctx.schema)


def schema_texts(ctx: StepContext, schema_map: ops.SchemaMap) -> tuple[str, str]:
    """Schema description and foreign-key lines rendered from ``schema_map`` and nothing else."""
    visible = ops.restrict(ctx.schema, schema_map)
    return (visible.render_macsql().strip() or "(no table)",
            visible.render_foreign_keys().strip() or "None")


def variant(ctx: StepContext) -> str:
    value = ctx.params["variant"]
    if value not in VARIANTS:
        raise StepError(f"unknown variant {value!r}; choose one of {', '.join(VARIANTS)}")
    return value


def check_method(ctx: StepContext) -> str:
    value = ctx.params["check_method"]
    if value not in CHECK_METHODS:
        raise StepError(f"unknown check_method {value!r}; choose one of "
                        f"{', '.join(CHECK_METHODS)}")
    return value


def rewrites_names(ctx: StepContext) -> bool:
    return bool(ctx.params.get("name_rewrite"))


def rewrite_within(db, schema: Schema, error: str | None, sql: str,
                   extracted: ops.SchemaMap, timeout: float = REWRITE_SECONDS):
    """The :class:`~agents.name_rewrite.Rewrite` of ``sql``, failing with ``error``, that runs
    where one clear change within the ``extracted`` tables and columns of ``schema`` makes it
    run (never a table or column the agent did not extract); None otherwise. The rewrite sees
    only those tables, so "the one table that has the column" is one among them (a table the
    SQL names without the agent having extracted it is not weighed)."""
    return rewrite_or_none(db, error, sql, ops.restrict(schema, extracted), timeout=timeout)


def runnable_version(ctx: StepContext, result, extracted: ops.SchemaMap, run):
    """``(sql, result, written)``: an agent's SQL and its execution ``result`` as they are, or,
    with ``name_rewrite`` on and the SQL failing on a column name that one clear change within
    the agent's extracted schema makes run (:func:`rewrite_within`), that version run with
    ``run`` and ``written`` saying what it replaced (:func:`~agents.name_rewrite.take_rewrite`).
    A 1.5B writer told "no such column: indep_year" and the column it meant was seen writing
    the same name again in every later round; the rewrite is what the hint says."""
    if result.ok or not rewrites_names(ctx):
        return result.sql, result, None
    return take_rewrite(rewrite_within(ctx.db, ctx.schema, result.error, result.sql, extracted,
                                       ctx.limits.timeout), result, run)


def extracted_schema(ctx: StepContext, known: ops.SchemaMap) -> ops.SchemaMap:
    """What the round's agent extracted, within its known schema: what it writes SQL from."""
    return ops.in_schema_order(ops.intersect(ctx.data.get("extracted") or {}, known),
                               ctx.schema)


def next_round(ctx: StepContext) -> str | None:
    data = ctx.data
    limit = ctx.params["max_rounds"]
    if data["round"] >= limit:
        extra = ctx.params.get(ROUNDS_WHILE_FAILING) or 0
        failing = data.get("sql_runs") is False
        if not (failing and data["round"] < limit + extra):
            past = data["round"] - limit
            data["stop_reason"] = (
                f"reached max_rounds ({limit})" if past <= 0 else
                f"reached max_rounds ({limit}) and {past} more round(s), "
                + ("its SQL still failing" if failing else "after which its SQL runs"))
            ctx.note(f"stopped: {data['stop_reason']}")
            if global_writer.wanted(ctx):
                ctx.note("its SQL fails to execute: a writer starts afresh from the global "
                         f"schema ({global_writer.PARAM})" if failing else
                         "its SQL runs but no check agreed with it: a writer checks it from "
                         f"the global schema ({global_writer.CHECK_PARAM})")
                return global_writer.STEP
            return None
        ctx.note(f"the SQL of round {data.get('sql_round')} fails to execute: the run goes on "
                 f"past max_rounds ({limit}), at most {extra} round(s) past it "
                 f"({ROUNDS_WHILE_FAILING})")
    data["round"] += 1
    return f"extract:{ops.agent_for_round(data['round'], data['n_agents'])}"


def execution_text(result, visible: Schema | None = None, db=None,
                   timeout: float = REWRITE_SECONDS) -> str:
    """What the checking agent learns from running the SQL: the error, or the rows' shape.
    Result column names are left out: ``SELECT *`` would spell out columns of unseen tables.
    For the same reason a name error's hint is built from ``visible`` (the agent's known
    schema), never from the whole database, and so is the version of the query that runs
    (checked on ``db``) which ends it where one clear change makes the query run."""
    if not result.ok:
        if visible is None:
            hint = None
        elif db is not None:
            hint = hint_with_rewrite(db, result.error, result.sql, visible, timeout=timeout)
        else:
            hint = explain_error(result.error, result.sql, visible)
        return "failed: " + dataclasses.replace(result, hint=hint).feedback()
    if not result.rows:
        return "ran without error and returned no rows"
    count = _row_count(result)
    rows = "; ".join("(" + ", ".join(_short(v) for v in row) + ")"
                     for row in result.rows[:PREVIEW_ROWS])
    return f"ran without error and returned {count} row(s), first: {rows}"


def _row_count(result) -> str:
    """"12", or "at least 1000" for a result cut at the row cap."""
    return f"at least {result.row_count}" if result.truncated else str(result.row_count)


def _short(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


# -- steps --------------------------------------------------------------------------------------

def partition(ctx: StepContext) -> str:
    """Give every agent its private schema: the user's partition, or equal contiguous parts."""
    schema = ctx.schema
    # in the database's order, even where retrieval writes a part of the schema first
    position = {name: i for i, name in enumerate(ctx.db.schema.table_names())}
    tables = sorted(schema.table_names(), key=lambda name: position.get(name, len(position)))
    if not tables:
        raise StepError("the database has no tables to split among agents")
    try:
        parts = ops.parse_partition(ctx.params["partition"], tables)
    except ops.PartitionError as exc:
        raise StepError(f"invalid partition: {exc}") from None
    requested = ctx.params["n_agents"]
    if parts is not None:
        mode = "user-defined"
        if len(parts) != requested:
            ctx.note(f"the partition defines {len(parts)} agent(s); n_agents={requested} "
                     f"is not used")
    else:
        mode = "equal, contiguous in table order"
        parts = ops.equal_partition(tables, requested)
        if len(parts) < requested:
            ctx.note(f"the database has {len(tables)} table(s): {len(parts)} agent(s) "
                     f"instead of {requested}, so each owns at least one table")
    private = ops.private_schemas(schema, parts)
    data = ctx.data
    data.update(initial_data(ctx))  # a fresh start, also when resumed from this step
    data.update(n_agents=len(parts), partition_mode=mode, round=1,
                private={str(k): m for k, m in enumerate(private, start=1)})
    ctx.set_inputs(tables=len(tables), agents=len(parts), partition=mode)
    ctx.set_output(SchemaPartition(
        partition=mode,
        agents=[{"agent": agent_label(k), "tables": list(m),
                 "columns": sum(len(c) for c in m.values())}
                for k, m in enumerate(private, start=1)],
        private_schemas=[{"agent": agent_label(k), **row}
                         for k, m in enumerate(private, start=1) for row in ops.as_rows(m)],
    ))
    return "extract:1"


def extract(ctx: StepContext, agent: int) -> str | None:
    """Schema collection (4.2): merge private and global schema into the known schema, extract
    its question-relevant part (with retention), merge that into the global schema. The compact
    variant extracts whole tables: the model names tables, each kept with every known column."""
    data = ctx.data
    known = known_schema(ctx, agent)
    mode = variant(ctx)
    ctx.set_inputs(round=data["round"], known_tables=list(known), variant=mode)
    schema_text, fk_text = schema_texts(ctx, known)
    prompt = render(load(str(HERE), PROMPTS[mode]["extract"]), schema=schema_text,
                    foreign_keys=fk_text, question=question_text(ctx))
    if mode == COMPACT:
        tables, notes = ctx.ask(user_message(prompt),
                                parse=lambda t: parse_table_extraction(t, known),
                                json_schema=ops.table_extraction_json_schema(known),
                                max_tokens=EXTRACT_TABLES_MAX_TOKENS)
        extracted = ops.whole_tables(tables, known)
        # the model named tables, not columns; no column was added by retention or for a join
        chosen, join_added, retained = {}, {}, {}
    else:
        extracted, notes = ctx.ask(user_message(prompt),
                                   parse=lambda t: parse_extraction(t, known),
                                   json_schema=ops.extraction_json_schema(known),
                                   max_tokens=EXTRACT_MAX_TOKENS)
        chosen = {t: list(c) for t, c in extracted.items() if c}
        extracted, join_added = ops.keep_join_columns(extracted, known, ctx.schema.foreign_keys)
        primary_keys = {t: ctx.schema.table(t).primary_key for t in extracted}
        extracted, retained = ops.apply_retention(extracted, known, ctx.params["delta"],
                                                  primary_keys)
    extracted = ops.in_schema_order(extracted, ctx.schema)
    new_global = ops.in_schema_order(ops.merge(data.get("global") or {}, extracted), ctx.schema)
    for note in notes:
        ctx.note(note)
    if not extracted:
        ctx.note(f"{agent_label(agent)} found nothing relevant in its known schema")
    data.update(known=known, extracted=extracted)
    data["global"] = new_global
    data["rounds"] = list(data.get("rounds") or []) + [{
        "round": data["round"], "agent": agent, "extracted": extracted, "global": new_global,
        "check": None, "sql": None}]
    ctx.set_output(SchemaExtraction(
        round=data["round"],
        agent=agent_label(agent),
        private_schema=ops.as_rows(data["private"][str(agent)]),
        known_schema=ops.as_rows(known),
        extracted=[{"table": t, "columns": cols, "chosen_by_model": chosen.get(t, []),
                    "added_for_joins": join_added.get(t, []),
                    "added_for_retention": retained.get(t, []),
                    "whole_table": mode == COMPACT}
                   for t, cols in extracted.items()],
        global_schema=ops.as_rows(new_global),
    ))
    return f"check:{agent}" if data.get("sql") else f"generate:{agent}"


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
    an outer query's column (``outer`` describes it, :mod:`agents.outer_columns`) is checked as
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
        sql, sub_questions = _write(ctx, extracted, None)
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
    elif _row_count(own["result"]) == _row_count(checked):
        reason = ("its own SQL, written from its extracted schema, returns as many rows "
                  "with other values")
    else:
        reason = (f"its own SQL, written from its extracted schema, returns a different result "
                  f"({_row_count(own['result'])} row(s) against {_row_count(checked)})")
    return {"verdict": POSITIVE if agrees else NEGATIVE, "reason": reason, "agrees": agrees}


def _same_result(checked, sql: str, result) -> bool:
    return results_equal(Candidate.from_result("checked", checked.sql, checked),
                         Candidate.from_result("own", sql, result))


def _without_unread_joins(ctx: StepContext, checked, own_sql: str):
    """The own SQL without the joins nothing in it reads (:mod:`agents.unread_joins`), when
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


def generate(ctx: StepContext, agent: int) -> str | None:
    """SQL generation (4.3): the round's agent writes SQL from its extracted schema -- or,
    after a negative agreement check, takes the SQL it wrote for that check."""
    data = ctx.data
    known = known_schema(ctx, agent)
    extracted = extracted_schema(ctx, known)
    mode = variant(ctx)
    ctx.set_inputs(round=data["round"], tables=list(extracted), variant=mode,
                   name_rewrite=rewrites_names(ctx))
    if not extracted:
        if data["round"] >= ctx.params["max_rounds"] and not data.get("sql"):
            raise StepError(f"no agent extracted a table relevant to the question in "
                            f"{data['round']} round(s); no SQL was written")
        ctx.skip(f"{agent_label(agent)} extracted no relevant table, so it writes no SQL "
                 f"this round")
        return next_round(ctx)
    decompose = ctx.params["generation"] == "decompose"
    feedback = None if decompose else _feedback(data, agent)
    own = _own_sql_of_check(data, agent, _written_for(ctx, extracted), rewrites_names(ctx))
    written = None
    if own is not None:  # written in this round's check; asking again would repeat it
        ctx.set_inputs(written_in_check=True)
        sql, sub_questions = own["own_sql"], own.get("own_sub_questions")
        if own.get("own_rewrite"):  # the check rewrote it: say so here too
            written = {"written_sql": own.get("own_written_sql"),
                       "written_error": own.get("own_written_error"),
                       "rewrite": own["own_rewrite"]}
    else:
        sql, sub_questions = _write(ctx, extracted, feedback)
    sql, result, rewritten = runnable_version(ctx, ctx.execute(sql), extracted, ctx.execute)
    written = rewritten or written
    data.update(sql=sql, sql_by=agent, sql_round=data["round"], sql_runs=result.ok)
    if data.get("rounds") and data["rounds"][-1].get("round") == data["round"]:
        data["rounds"][-1]["sql"] = sql
    parsed = {"round": data["round"], "agent": agent_label(agent), "tables": list(extracted),
              "strategy": ctx.params["generation"],
              "feedback": feedback["reason"] if feedback else None,
              "executes": result.ok, "sql": sql, "written_in_check": own is not None}
    if written is not None:
        parsed.update(written)
    if sub_questions is not None:
        parsed["sub_questions"] = sub_questions
    ctx.set_output(AgentSQL(**parsed), sql=sql)
    if not result.ok:
        ctx.note(f"the SQL fails to execute: {result.error}")
    return next_round(ctx)


def _write(ctx: StepContext, extracted: ops.SchemaMap,
           feedback: dict | None) -> tuple[str, list | None]:
    """The agent's SQL from ``extracted`` (told ``feedback``, a negative check, if any) and the
    sub-questions when the decomposition prompt wrote it."""
    mode = variant(ctx)
    schema_text, fk_text = schema_texts(ctx, extracted)
    decompose = ctx.params["generation"] == "decompose"
    sub_questions = None
    if decompose:
        prompt = render(load(str(macsql_decomposer.HERE), "decomposer"), desc_str=schema_text,
                        fk_str=fk_text, query=ctx.question.strip(),
                        evidence=(ctx.evidence or "").strip() or "None")
        answer = ctx.ask(user_message(prompt), parse=macsql_decomposer.parse_answer,
                         max_tokens=DECOMPOSE_MAX_TOKENS)
        sql, sub_questions = answer["sql"].strip(), answer["sub_questions"]
    else:
        if mode == COMPACT:  # the rejected SQL's outcome and the reason, never its text
            told = render(load(str(HERE), PROMPTS[mode]["feedback"]),
                          reason=feedback["reason"] or "(no reason given)",
                          execution=feedback.get("execution") or "(not run)") if feedback else ""
            prompt = render(load(str(HERE), PROMPTS[mode]["generate"]), schema=schema_text,
                            foreign_keys=fk_text, feedback=told, question=question_text(ctx))
        else:
            prompt = render(load(str(HERE), PROMPTS[mode]["generate"]), schema=schema_text,
                            foreign_keys=fk_text, question=question_text(ctx))
            if feedback:
                prompt += render(load(str(HERE), PROMPTS[mode]["feedback"]), sql=feedback["sql"],
                                 reason=feedback["reason"] or "(no reason given)")
        sql = ctx.ask(user_message(prompt), parse=extract_sql,
                      max_tokens=GENERATE_MAX_TOKENS).strip()
    return sql, sub_questions


def _feedback(data: dict, agent: int) -> dict | None:
    """This round's negative check by the same agent, when there is one: the agent knows why it
    rejected the previous SQL, so its new attempt is told (direct strategy only)."""
    checks = data.get("checks") or []
    if not checks:
        return None
    last = checks[-1]
    if last.get("round") == data["round"] and last.get("agent") == agent \
            and last.get("verdict") == NEGATIVE:
        return last
    return None


def _own_sql_of_check(data: dict, agent: int, written_for: dict,
                      rewriting: bool) -> dict | None:
    """This round's negative agreement check by the same agent, when its own SQL ran and was
    written from what the agent would write from now (a step resumed with another extraction
    or prompt writes anew, and one resumed with ``name_rewrite`` off does not take a rewritten
    SQL): that SQL is the agent's new SQL."""
    last = _feedback(data, agent)
    if last and last.get("method") == AGREEMENT and last.get("own_runs") \
            and isinstance(last.get("own_sql"), str) and last["own_sql"].strip() \
            and last.get("own_written_for") == written_for \
            and (rewriting or not last.get("own_rewrite")):
        return last
    return None
