"""CSMA's round loop: agents extract, write and check in turn until a check is positive or the
rounds run out, no agent ever sees another agent's private schema, the compact variant (whole
tables, for small models), and the checker's execution hints. On the embedded model too."""

from __future__ import annotations

import json
import re

import pytest

from agents.db.database import open_database
from agents.core.engine import ExecLimits, resume_run, run_to_end, start_run
from agents.core.paths import SAMPLE_DBS
from agents.pipelines.csma import PIPELINE
from agents.pipelines.csma import schema_ops as ops
from agents.pipelines.csma import context as csma_context
from agents.llm.prompts import load, render
from csma_script import (GOOD_SQL, QUESTION, extraction, run_csma, script_two_rounds, sql_block,
                         steps_of, tables_answer, verdict)


# -- the round loop -----------------------------------------------------------------------------

def test_run_stops_at_the_first_positive_check(fleet, llm, scripted_llm):
    script_two_rounds(scripted_llm, "correct")
    run = run_csma(fleet, llm, delta=3)
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "extract:2", "check:2"]
    assert [e.agent for e in run.events[1:]] == ["Agent 1"] * 2 + ["Agent 2"] * 2
    assert run.final_sql == "SELECT hull_name FROM vessels WHERE hull_name = 'Aurora'"
    assert run.result["ok"] and run.result["rows"] == [["Aurora"]]
    data = run.events[-1].data
    assert data["stop_reason"] == "Agent 2 judged the SQL correct"
    assert data["checks"][0]["verdict"] == "positive" and data["checks"][0]["sql_by"] == 1
    # retention to delta=3 columns: the primary key first, then table order
    first = run.events[1].parsed
    assert first["extracted"] == [{"table": "vessels", "columns": ["vessel_id", "hull_name",
                                                                  "tonnage"],
                                   "chosen_by_model": ["hull_name"], "added_for_joins": [],
                                   "added_for_retention": ["vessel_id", "tonnage"],
                                   "whole_table": False}]
    assert first["global_schema"] == [{"table": "vessels",
                                       "columns": ["vessel_id", "hull_name", "tonnage"]}]
    # agent 2: merge of its private schema and the global one; the join key kept both sides
    second = run.events[3].parsed
    assert [r["table"] for r in second["known_schema"]] == ["vessels", "voyages", "crew_members"]
    assert second["global_schema"] == [
        {"table": "vessels", "columns": ["vessel_id", "hull_name", "tonnage"]},
        {"table": "voyages", "columns": ["voyage_id", "vessel_id", "cargo_kind"]}]
    check = run.events[4]
    assert check.parsed["verdict"] == "positive" and check.parsed["sql_by"] == "Agent 1"
    assert check.execution["ok"]


def test_run_stops_after_max_rounds_with_the_last_sql(fleet, llm, scripted_llm):
    script_two_rounds(scripted_llm, "wrong")
    scripted_llm.push(sql_block(GOOD_SQL))  # agent 2 writes after its negative check
    run = run_csma(fleet, llm, max_rounds=2)
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "extract:2", "check:2",
                             "generate:2"]
    assert run.final_sql == GOOD_SQL
    assert sorted(run.result["rows"]) == [["coal"], ["grain"]]
    data = run.events[-1].data
    assert data["stop_reason"] == "reached max_rounds (2)" and data["sql_by"] == 2
    # the agent that rejected the SQL is told its own reason when it writes the new one
    prompt = run.events[-1].prompt[-1]["content"]
    assert "judged wrong" in prompt and "the cargo is in voyages" in prompt
    assert scripted_llm.remaining == 0


def test_agent_that_extracts_nothing_writes_no_sql_and_the_next_agent_goes_on(fleet, llm,
                                                                              scripted_llm):
    scripted_llm.push(extraction({}),                                          # agent 1
                      extraction({"vessels": ["hull_name"], "voyages": ["cargo_kind"]}),
                      sql_block(GOOD_SQL),                                     # agent 2
                      extraction({"vessels": ["hull_name"]}),                  # agent 1
                      verdict("correct"))
    run = run_csma(fleet, llm, partition='{"1": ["harbors"], "2": ["vessels", "voyages", '
                                         '"crew_members"]}')
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "extract:2", "generate:2",
                             "extract:1", "check:1"]
    assert run.events[2].status == "skipped"
    assert run.final_sql == GOOD_SQL


def test_more_agents_than_tables_gives_one_table_each(fleet, llm, scripted_llm):
    scripted_llm.push(extraction({"harbors": ["harbor_title"]}),
                      sql_block("SELECT harbor_title FROM harbors"))
    run = run_csma(fleet, llm, n_agents=6, max_rounds=1)
    assert run.status == "done", run.error
    assert run.events[0].data["n_agents"] == 4
    assert any("4 agent(s) instead of 6" in n for n in run.events[0].notes)


def test_decompose_strategy_uses_the_sub_question_prompt(fleet, llm, scripted_llm):
    scripted_llm.push(extraction({"vessels": ["hull_name"], "voyages": ["cargo_kind"]}),
                      "Sub question 1: Which voyages did Aurora make?\nSQL\n"
                      + sql_block(GOOD_SQL) + "\nQuestion Solved.")
    run = run_csma(fleet, llm, partition='[["vessels", "voyages"], ["harbors", "crew_members"]]',
                   generation="decompose", max_rounds=1)
    assert run.status == "done", run.error
    parsed = run.events[-1].parsed
    assert parsed["strategy"] == "decompose"
    assert parsed["sub_questions"] == [{"question": "Which voyages did Aurora make?",
                                        "sql": GOOD_SQL}]
    assert "Decompose the question" in scripted_llm.requests[-1]["messages"][-1]["content"]
    assert run.final_sql == GOOD_SQL


def test_no_sql_after_the_last_round_fails_the_run_clearly(fleet, llm, scripted_llm):
    scripted_llm.push(extraction({}))
    run = run_csma(fleet, llm, max_rounds=1)
    assert run.status == "failed"
    assert "no SQL was written" in run.error


def test_sql_that_fails_to_execute_is_shown_to_the_checker_and_never_accepted(fleet, llm,
                                                                              scripted_llm):
    scripted_llm.push(extraction({"vessels": ["hull_name"]}),
                      sql_block("SELECT cargo FROM vessels"),
                      extraction({"voyages": ["cargo_kind"]}),
                      verdict("correct"),                    # the model misses the error
                      sql_block(GOOD_SQL))
    run = run_csma(fleet, llm, max_rounds=2)
    check = run.events[4]
    assert check.step == "check:2"
    assert "failed: " in check.prompt[-1]["content"] and "no such column" in \
        check.prompt[-1]["content"]
    assert check.parsed["verdict"] == "negative"
    assert any("failed to execute" in n for n in check.notes)
    assert run.final_sql == GOOD_SQL


def test_malformed_extraction_fails_the_step_after_one_retry(fleet, llm, scripted_llm):
    scripted_llm.push("The vessels table looks relevant.", "I would use the vessels table.")
    run = run_csma(fleet, llm)
    assert run.status == "failed"
    assert steps_of(run) == ["partition", "extract:1"]
    event = run.events[-1]
    assert event.status == "error" and len(event.calls) == 2
    assert "could not be parsed" in event.error and "JSON" in event.error


def test_malformed_check_fails_the_step_after_one_retry(fleet, llm, scripted_llm):
    script_two_rounds(scripted_llm, "correct")
    scripted_llm.clear()
    scripted_llm.push(extraction({"vessels": ["hull_name"]}), sql_block("SELECT 1"),
                      extraction({"vessels": ["hull_name"]}), "Hmm, hard to say.", "Perhaps.")
    run = run_csma(fleet, llm)
    assert run.status == "failed"
    assert run.events[-1].step == "check:2" and run.events[-1].status == "error"
    assert "verdict" in run.events[-1].error


def test_resume_from_a_check_step_with_edited_sql(fleet, llm, scripted_llm):
    script_two_rounds(scripted_llm, "wrong")
    scripted_llm.push(sql_block(GOOD_SQL))
    first = run_csma(fleet, llm, max_rounds=2)
    index = steps_of(first).index("check:2")
    edited = json.loads(json.dumps(first.events[index - 1].data))
    edited["sql"] = "SELECT cargo_kind FROM voyages WHERE vessel_id = 1"
    scripted_llm.clear()
    scripted_llm.push(verdict("correct"))
    run = run_to_end(resume_run(PIPELINE, first, index, fleet, llm, data=edited))
    assert run.status == "done", run.error
    assert steps_of(run) == steps_of(first)[:index + 1]
    assert run.events[index - 1].edited
    assert edited["sql"] in scripted_llm.requests[0]["messages"][-1]["content"]
    assert run.final_sql == edited["sql"]
    assert sorted(run.result["rows"]) == [["coal"], ["grain"]]


# -- privacy ------------------------------------------------------------------------------------

def test_no_agent_ever_sees_another_agents_private_schema(fleet, llm, scripted_llm):
    script_two_rounds(scripted_llm, "wrong")
    scripted_llm.push(sql_block(GOOD_SQL),
                      extraction({"vessels": ["hull_name"], "voyages": ["cargo_kind"]}),
                      verdict("correct"))
    run = run_csma(fleet, llm, max_rounds=3)
    assert run.status == "done", run.error
    assert steps_of(run)[-2:] == ["extract:1", "check:1"]
    private = {int(k): v for k, v in run.events[0].data["private"].items()}
    round_events = [e for e in run.events if e.calls]
    assert len(round_events) == len(scripted_llm.requests) == 7
    for event, request in zip(round_events, scripted_llm.requests):
        agent = int(event.agent.split()[-1])
        allowed = ops.names_in(private[agent]) | ops.names_in(event.data["global"])
        others = set().union(*(ops.names_in(m) for k, m in private.items() if k != agent))
        forbidden = others - allowed
        assert forbidden, "the scenario must leave something private"
        text = json.dumps({"messages": request["messages"],
                           "response_format": request.get("response_format")})
        leaked = sorted(n for n in forbidden if re.search(rf"\b{re.escape(n)}\b", text))
        assert not leaked, f"{event.step} saw {leaked}"
    # and the scenario did move schema between agents through the global schema
    assert "cargo_kind" in scripted_llm.requests[-1]["messages"][-1]["content"]


# -- the compact variant (small models) ---------------------------------------------------------

def test_the_compact_variant_is_the_default_and_the_paper_one_is_a_switch_away(fleet, llm,
                                                                              scripted_llm):
    assert PIPELINE.resolve_params({})["variant"] == "compact"
    # a run recorded before the compact default, which names no variant, ran the paper's
    assert PIPELINE.resolve_recorded({})["variant"] == "paper"
    partition = '[["vessels", "voyages"], ["harbors", "crew_members"]]'
    scripted_llm.push(extraction({"vessels": ["hull_name"], "voyages": ["cargo_kind"]}),
                      sql_block(GOOD_SQL))
    paper = run_csma(fleet, llm, partition=partition, max_rounds=1, delta=2)
    assert paper.status == "done", paper.error
    assert [e.inputs["variant"] for e in paper.events[1:]] == ["paper", "paper"]
    paper_extract, paper_generate = (r["messages"][-1]["content"]
                                     for r in scripted_llm.requests)
    assert '{"table_x": ["column_a", "column_b"]' in paper_extract

    scripted_llm.clear()
    scripted_llm.push(tables_answer("vessels", "voyages"), sql_block(GOOD_SQL))
    compact = run_csma(fleet, llm, partition=partition, max_rounds=1, delta=2, variant=None)
    assert compact.status == "done", compact.error
    assert [e.inputs["variant"] for e in compact.events[1:]] == ["compact", "compact"]
    extract_request, generate_request = scripted_llm.requests
    compact_extract = extract_request["messages"][-1]["content"]
    # the same schema and question after the instructions; only table names are asked for
    assert '{"tables": ["table_x", "table_y"]}' in compact_extract
    assert compact_extract.split("### Schema")[1] == paper_extract.split("### Schema")[1]
    assert compact_extract.index("### Schema") < compact_extract.index(QUESTION)
    schema = extract_request["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["tables"]["items"]["enum"] == ["vessels", "voyages"]
    # every column of a named table is kept and reaches the global schema
    parsed = compact.events[1].parsed
    whole = [{"table": "vessels", "columns": ["vessel_id", "hull_name", "tonnage",
                                              "home_harbor_id"]},
             {"table": "voyages", "columns": ["voyage_id", "vessel_id", "departed_on",
                                              "cargo_kind"]}]
    assert parsed["global_schema"] == whole
    assert [r["columns"] for r in parsed["extracted"]] == [r["columns"] for r in whole]
    assert all(r["whole_table"] and not r["added_for_retention"] and not r["chosen_by_model"]
               for r in parsed["extracted"])
    assert "departed_on" not in paper_generate
    compact_generate = generate_request["messages"][-1]["content"]
    assert "departed_on" in compact_generate and "vessels.`vessel_id`" in compact_generate
    # with no rejected SQL to report, the writer's prompt is the paper's writer prompt
    values = {"schema": "S", "foreign_keys": "F", "question": "Q"}
    assert render(load(str(csma_context.HERE), "generate_compact"), feedback="", **values) \
        == render(load(str(csma_context.HERE), "generate"), **values)
    assert compact.final_sql == paper.final_sql == GOOD_SQL
    assert sorted(compact.result["rows"]) == sorted(paper.result["rows"]) == [["coal"], ["grain"]]


def test_compact_rewrite_is_told_the_error_and_reason_but_not_shown_the_rejected_sql(
        fleet, llm, scripted_llm):
    bad_sql = "SELECT cargo FROM vessels WHERE hull_name = 'Aurora'"
    scripted_llm.push(tables_answer("vessels"),                       # agent 1 extracts
                      sql_block(bad_sql),                             # agent 1 writes
                      tables_answer("vessels", "voyages"),            # agent 2 extracts
                      verdict("wrong", "the cargo is in voyages"),    # agent 2 checks
                      sql_block(GOOD_SQL),                            # agent 2 rewrites
                      tables_answer("vessels"),                       # agent 1 extracts
                      verdict("correct"))                             # agent 1 checks
    run = run_csma(fleet, llm, variant="compact")
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "extract:2", "check:2",
                             "generate:2", "extract:1", "check:1"]
    assert all(e.inputs["variant"] == "compact" for e in run.events[1:])
    rewrite = run.events[5]
    prompt = rewrite.prompt[-1]["content"]
    assert "Reason: the cargo is in voyages" in prompt
    assert "Execution: failed: no such column: cargo" in prompt
    assert bad_sql not in prompt and "SELECT" not in prompt
    assert prompt.index("### Database schema") < prompt.index("judged wrong") \
        < prompt.index("### Question") < prompt.index(QUESTION)
    assert rewrite.parsed["feedback"] == "the cargo is in voyages"
    # agent 1 learns the voyages table, whole, from the global schema only
    last_extract = run.events[6].parsed
    assert {"table": "voyages", "columns": ["voyage_id", "vessel_id", "departed_on",
                                            "cargo_kind"]} in last_extract["known_schema"]
    assert run.events[-1].data["stop_reason"] == "Agent 1 judged the SQL correct"
    assert run.final_sql == GOOD_SQL
    assert sorted(run.result["rows"]) == [["coal"], ["grain"]]


def test_compact_agents_never_see_another_agents_unshared_tables(fleet, llm, scripted_llm):
    # agent 1 owns harbors and vessels, agent 2 voyages and crew_members; only vessels and
    # voyages are ever shared, so harbors and crew_members stay with their owners
    scripted_llm.push(tables_answer("vessels"), sql_block("SELECT hull_name FROM vessels"),
                      tables_answer("voyages"), verdict("wrong", "needs voyages"),
                      sql_block(GOOD_SQL), tables_answer("vessels", "voyages"),
                      verdict("correct"))
    run = run_csma(fleet, llm, variant="compact")
    assert run.status == "done", run.error
    requests = iter(scripted_llm.requests)
    for event in (e for e in run.events if e.calls):
        request = next(requests)
        text = json.dumps({"messages": request["messages"],
                           "response_format": request.get("response_format")})
        hidden = {"Agent 1": ["crew_id", "sailor_name", "rank_level", "crew_members"],
                  "Agent 2": ["harbor_title", "coastline", "harbors"]}[event.agent]
        assert not [n for n in hidden if re.search(rf"\b{n}\b", text)], event.step


# -- the embedded model -------------------------------------------------------------------------

def cancelled_orders_question() -> tuple[dict, dict]:
    """The shop database's easy question about cancelled orders (its entry, with the gold SQL)
    and the database's entry."""
    shop = json.loads((SAMPLE_DBS / "questions.json").read_text())["databases"]["shop"]
    item = next(q for q in shop["questions"] if q["difficulty"] == "easy"
                and "cancelled" in q["question"])
    return item, shop


@pytest.mark.real_model
def test_csma_answers_a_simple_sample_question_with_the_embedded_model(sample_dbs, real_llm):
    """The paper's prompts, end to end on the embedded model, to the right answer."""
    item, shop = cancelled_orders_question()
    db = open_database(sample_dbs / shop["file"])
    try:
        run = run_csma(db, real_llm, question=item["question"], max_rounds=2)
        assert run.status == "done", run.error
        expected = db.execute(item["sql"])
        assert run.result["ok"], run.result
        assert sorted(map(tuple, run.result["rows"])) == sorted(map(tuple, expected.rows))
    finally:
        db.close()


@pytest.mark.real_model
def test_csma_defaults_run_to_sql_that_runs_with_the_embedded_model(sample_dbs, real_llm):
    """The defaults (compact variant, agreement check, failing names rewritten), end to end
    on the embedded model:
    every round step ran them and the final SQL runs. How often it is right is measured in
    bench/README.md, not here (on this question the 1.5B model has filtered on the delivery
    date, not the order date)."""
    item, shop = cancelled_orders_question()
    db = open_database(sample_dbs / shop["file"])
    try:
        run = run_csma(db, real_llm, question=item["question"], max_rounds=2, variant=None,
                       check_method=None, name_rewrite=None)
        assert run.params["name_rewrite"] is True
        assert run.status == "done", run.error
        rounds = [e for e in run.events if e.step.split(":")[0] in ("extract", "generate")]
        assert rounds and all(e.inputs["variant"] == "compact" for e in rounds)
        checks = [e for e in run.events if e.step.startswith("check:")]
        assert all(e.inputs["check_method"] == "agreement" for e in checks)
        assert run.result["ok"], run.result
    finally:
        db.close()


def push_cargo_kind_on_vessels(scripted_llm) -> None:
    """Agent 1 writes cargo_kind on vessels' alias; agent 2, who knows voyages, checks it."""
    scripted_llm.push(extraction({"vessels": ["hull_name"]}),
                      sql_block("SELECT T1.hull_name FROM vessels AS T1 "
                                "WHERE T1.cargo_kind = 'coal'"),
                      extraction({"voyages": ["cargo_kind"]}),
                      verdict("wrong", "cargo_kind is a column of voyages"),
                      sql_block(GOOD_SQL))


def test_the_checker_is_shown_a_version_that_runs_built_from_its_known_schema(fleet, llm,
                                                                               scripted_llm):
    push_cargo_kind_on_vessels(scripted_llm)
    run = run_csma(fleet, llm, max_rounds=2)
    check = run.events[4]
    assert check.step == "check:2"
    execution = check.prompt[-1]["content"].split("### Execution", 1)[1]
    assert ("A version that runs, with T1.cargo_kind written T2.cargo_kind and voyages joined "
            "as T2 on T1.vessel_id = T2.vessel_id (voyages has the column): SELECT T1.hull_name "
            "FROM vessels AS T1 JOIN voyages AS T2 ON T1.vessel_id = T2.vessel_id WHERE "
            "T2.cargo_kind = 'coal'") in execution
    assert "harbors" not in execution


def test_without_hints_the_checker_is_told_the_bare_error(fleet, llm, scripted_llm):
    push_cargo_kind_on_vessels(scripted_llm)
    run = run_to_end(start_run(PIPELINE, QUESTION, fleet, llm,
                               params={"variant": "paper", "max_rounds": 2},
                               limits=ExecLimits(hints=False)))
    execution = run.events[4].prompt[-1]["content"].split("### Execution", 1)[1]
    assert "failed: no such column: T1.cargo_kind" in execution and "Hint:" not in execution


def test_the_checker_gets_a_name_hint_from_its_known_schema_only(fleet, llm, scripted_llm):
    # agent 1 owns harbors and vessels and shares only vessels; agent 2 checks next
    scripted_llm.push(extraction({"vessels": ["hull_name"]}),
                      sql_block("SELECT coastline FROM vessels"),
                      extraction({"voyages": ["cargo_kind"]}),
                      verdict("wrong", "coastline is not a column of vessels"),
                      sql_block(GOOD_SQL))
    run = run_csma(fleet, llm, max_rounds=2)
    check = run.events[4]
    assert check.step == "check:2"
    prompt = check.prompt[-1]["content"]
    assert "failed: no such column: coastline\nHint: Table vessels has columns:" in prompt
    assert "harbors" not in prompt.split("### Execution", 1)[1]
    # the user, who sees the whole database, is told where the column really is
    assert "Column coastline is in table harbors." in check.execution["hint"]
