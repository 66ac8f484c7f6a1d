"""What every CSMA step reads from its context: the prompt variant and check method, an agent's
known and extracted schema, the question as the agents see it, and an agent's SQL made to run
within the tables it extracted (the name rewrite). The steps and the global writer share it."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from agents.core.engine import StepContext, StepError
from agents.rules.error_hints import explain_error
from agents.rules.name_rewrite import (REWRITE_SECONDS, hint_with_rewrite, rewrite_or_none,
    take_rewrite)
from agents.db.schema import Schema
from agents.llm.parsing import extract_sql
from agents.llm.prompts import load, render
from agents.pipelines.common import user_message
from agents.pipelines.baseline import question_text as baseline_question
from agents.pipelines.macsql import decomposer as macsql_decomposer
from agents.pipelines.csma import schema_ops as ops

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


def agent_label(agent: int) -> str:
    return f"Agent {agent}"


def question_text(ctx: StepContext) -> str:
    """The question with the run's evidence as its hint, as the single prompt reads it."""
    return baseline_question(ctx.question, ctx.evidence)


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
    """The :class:`~agents.rules.name_rewrite.Rewrite` of ``sql``, failing with ``error``, that runs
    where one clear change within the ``extracted`` tables and columns of ``schema`` makes it
    run (never a table or column the agent did not extract); None otherwise. The rewrite sees
    only those tables, so "the one table that has the column" is one among them (a table the
    SQL names without the agent having extracted it is not weighed)."""
    return rewrite_or_none(db, error, sql, ops.restrict(schema, extracted), timeout=timeout)


def runnable_version(ctx: StepContext, result, extracted: ops.SchemaMap, run):
    """``(sql, result, written)``: an agent's SQL and its execution ``result`` as they are, or,
    with ``name_rewrite`` on and the SQL failing on a column name that one clear change within
    the agent's extracted schema makes run (:func:`rewrite_within`), that version run with
    ``run`` and ``written`` saying what it replaced (:func:`~agents.rules.name_rewrite.take_rewrite`).
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
    count = row_count(result)
    rows = "; ".join("(" + ", ".join(short_value(v) for v in row) + ")"
                     for row in result.rows[:PREVIEW_ROWS])
    return f"ran without error and returned {count} row(s), first: {rows}"


def row_count(result) -> str:
    """"12", or "at least 1000" for a result cut at the row cap."""
    return f"at least {result.row_count}" if result.truncated else str(result.row_count)


def short_value(value) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= PREVIEW_CHARS else text[:PREVIEW_CHARS] + "…"


def write_sql(ctx: StepContext, extracted: ops.SchemaMap,
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
