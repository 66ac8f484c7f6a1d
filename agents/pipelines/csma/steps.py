"""CSMA's steps: split the schema, then per round extract schema, check the last SQL, write SQL.

Every step reads and writes only ``ctx.data`` (see :func:`initial_data` for its keys), so a run
resumes from any step. Privacy is structural: a round step recomputes its agent's known schema
from that agent's private schema and the global schema, and every prompt is rendered from that
map alone (see :func:`~.schema_ops.restrict`).
"""

from __future__ import annotations


from agents.core.engine import StepContext, StepError
from .outputs import AgentSQL, SchemaExtraction, SchemaPartition
from agents.llm.prompts import load, render
from ..common import user_message
from . import global_writer
from . import schema_ops as ops
from .answers import NEGATIVE, parse_extraction, parse_table_extraction
from agents.pipelines.csma.context import (AGREEMENT, COMPACT, EXTRACT_MAX_TOKENS,
    EXTRACT_TABLES_MAX_TOKENS, HERE, PROMPTS, ROUNDS_WHILE_FAILING, agent_label, extracted_schema,
    known_schema, question_text, rewrites_names, runnable_version, schema_texts, variant)
from agents.pipelines.csma.check import _written_for
from agents.pipelines.csma.context import write_sql


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
        sql, sub_questions = write_sql(ctx, extracted, feedback)
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
