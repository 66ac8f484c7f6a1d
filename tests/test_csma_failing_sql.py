"""CSMA on SQL that fails: an agent's SQL rewritten where one clear change makes it run
(name_rewrite), and rounds past max_rounds while the last SQL fails (rounds_while_failing)."""

from __future__ import annotations

from agents.core.engine import resume_run, run_to_end
from agents.pipelines.csma import PIPELINE
from agents.pipelines.csma import context as csma_context
from csma_script import (FAILING_SQL, GOOD_SQL, HULL_ONLY, run_agreement, sql_block, steps_of,
                         tables_answer, verdict)


# -- an agent's SQL rewritten where one clear change makes it run (name_rewrite) --------------

def test_a_failing_column_name_is_rewritten_into_the_agents_sql_when_asked(fleet, llm,
                                                                          scripted_llm):
    written = "SELECT hullname FROM vessels WHERE hullname = 'Aurora'"
    scripted_llm.push(tables_answer("vessels"), sql_block(written))
    run = run_agreement(fleet, llm, max_rounds=1)
    assert run.status == "done", run.error
    generate = run.events[-1]
    assert generate.step == "generate:1" and len(generate.calls) == 1
    assert generate.parsed["written_sql"] == written
    assert generate.parsed["rewrite"] == ("hullname written hull_name (the column of vessels is "
                                          "spelt so)")
    assert generate.parsed["executes"] is True and generate.execution["ok"] is True
    assert run.final_sql == "SELECT hull_name FROM vessels WHERE hull_name = 'Aurora'"
    assert run.events[-1].data["sql"] == run.final_sql
    assert generate.parsed["written_error"] == "no such column: hullname"
    assert generate.inputs["name_rewrite"] is True
    # off, the agent's SQL goes on as written
    scripted_llm.push(tables_answer("vessels"), sql_block(written))
    plain = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False)
    assert plain.final_sql == written and plain.events[-1].parsed["executes"] is False
    assert "written_sql" not in plain.events[-1].parsed
    assert plain.events[-1].inputs["name_rewrite"] is False  # the trace says it was off


def test_a_rewrite_never_reaches_a_table_the_agent_did_not_extract(fleet, llm, scripted_llm):
    # the database has the column on voyages, joinable on the key; agent 1 extracted vessels
    written = "SELECT T1.hull_name FROM vessels AS T1 WHERE T1.cargo_kind = 'coal'"
    scripted_llm.push(tables_answer("vessels"), sql_block(written))
    run = run_agreement(fleet, llm, max_rounds=1)
    generate = run.events[-1]
    assert generate.parsed["executes"] is False and "rewrite" not in generate.parsed
    assert run.final_sql == written


def test_an_agreement_checks_own_sql_is_rewritten_and_compared(fleet, llm, scripted_llm):
    own = ("SELECT T2.cargo_kind FROM vessels AS T1 JOIN voyages AS T2 ON T1.vessel_id = "
           "T2.vessel_id WHERE T2.hull_name = 'Aurora'")
    scripted_llm.push(tables_answer("vessels"), sql_block(HULL_ONLY),
                      tables_answer("vessels", "voyages"), sql_block(own))
    run = run_agreement(fleet, llm, max_rounds=2)
    assert run.status == "done", run.error
    assert len(scripted_llm.requests) == 4  # no verdict: the rewritten own SQL ran
    check, generate = run.events[4], run.events[5]
    assert check.parsed["own_written_sql"] == own
    assert check.parsed["own_written_error"] == "no such column: T2.hull_name"
    assert check.parsed["own_rewrite"] == ("T2.hull_name written T1.hull_name (vessels, which "
                                           "the query names T1, has the column)")
    fixed = own.replace("T2.hull_name", "T1.hull_name")
    assert check.parsed["own_sql"] == fixed and check.parsed["agrees"] is False
    assert generate.calls == [] and generate.parsed["written_in_check"] is True
    # the round's SQL, taken from the check, says it is a rewrite too
    assert generate.parsed["written_sql"] == own and generate.parsed["rewrite"] == \
        check.parsed["own_rewrite"]
    assert run.final_sql == fixed and sorted(run.result["rows"]) == [["coal"], ["grain"]]
    # resumed at that generate step with the option off, the agent writes anew
    scripted_llm.push(sql_block(GOOD_SQL))
    again = run_to_end(resume_run(PIPELINE, run, 5, fleet, llm,
                                  params={**run.params, "name_rewrite": False}))
    assert len(again.events[5].calls) == 1 and again.final_sql == GOOD_SQL
    assert "rewrite" not in again.events[5].parsed


def test_a_checks_own_sql_is_never_rewritten_beyond_its_extracted_tables(fleet, llm,
                                                                        scripted_llm):
    # agent 2 extracted voyages only; hull_name is on vessels, joinable, but not its to use
    own = "SELECT T1.cargo_kind FROM voyages AS T1 WHERE T1.hull_name = 'Aurora'"
    scripted_llm.push(tables_answer("vessels"), sql_block(HULL_ONLY), tables_answer("voyages"),
                      sql_block(own), verdict("wrong", "the ship is not named"),
                      sql_block(GOOD_SQL))
    run = run_agreement(fleet, llm, max_rounds=2)
    check = run.events[4]
    assert check.parsed["own_sql"] == own and check.parsed["own_runs"] is False
    assert "own_rewrite" not in check.parsed and len(check.calls) == 2  # the model judged


def test_the_text_views_say_when_an_agents_sql_was_rewritten():
    from agents.pipelines.csma.outputs import AgentSQL, SQLCheck
    lines = "\n".join(AgentSQL(sql=GOOD_SQL, written_sql="SELECT 1", executes=True,
                               written_error="no such column: hullname",
                               rewrite="hullname written hull_name").text_lines())
    assert ("its SQL failed (no such column: hullname) and was rewritten: hullname written "
            "hull_name") in lines
    lines = "\n".join(SQLCheck(verdict="negative", own_sql=GOOD_SQL, agrees=False,
                               own_rewrite="T2.x written T1.x").text_lines())
    assert "its own SQL failed and was rewritten: T2.x written T1.x" in lines


def test_a_rewrite_that_fails_under_the_runs_limits_is_not_taken(fleet, llm, scripted_llm,
                                                                 monkeypatch):
    """The rewrite ran in its one-row trial; should it fail when run for the step, the SQL as
    written goes on, and the step records that SQL's execution, not the rewrite's."""
    from agents.rules.name_rewrite import Rewrite
    written = "SELECT hullname FROM vessels"
    monkeypatch.setattr(csma_context, "rewrite_within", lambda *a, **k: Rewrite(
        sql="SELECT still_missing FROM vessels", changes=("a change",)))
    scripted_llm.push(tables_answer("vessels"), sql_block(written))
    run = run_agreement(fleet, llm, max_rounds=1)
    generate = run.events[-1]
    assert run.final_sql == written and "rewrite" not in generate.parsed
    assert generate.execution["ok"] is False
    assert generate.execution["error"] == "no such column: hullname"


# -- rounds past max_rounds while the last SQL fails (rounds_while_failing) --------------------

def test_a_run_whose_sql_fails_at_max_rounds_goes_on_until_its_sql_runs(fleet, llm,
                                                                         scripted_llm):
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),         # agent 1
                      tables_answer("vessels", "voyages"),                       # agent 2
                      verdict("wrong", "cargo is cargo_kind, in voyages"),
                      sql_block(GOOD_SQL))
    run = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, rounds_while_failing=2)
    assert run.status == "done", run.error
    assert steps_of(run) == ["partition", "extract:1", "generate:1", "extract:2", "check:2",
                             "generate:2"]
    assert run.final_sql == GOOD_SQL and run.events[-1].parsed["executes"] is True
    assert run.events[2].data["sql_runs"] is False and run.events[-1].data["sql_runs"] is True
    assert run.events[2].notes[-1].startswith("the SQL of round 1 fails to execute: the run goes "
                                              "on past max_rounds (1), at most 2 round(s)")
    assert run.events[-1].data["stop_reason"] == ("reached max_rounds (1) and 1 more round(s), "
                                                  "after which its SQL runs")
    assert scripted_llm.remaining == 0


def test_the_rounds_past_max_rounds_are_bounded(fleet, llm, scripted_llm):
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL),
                      tables_answer("vessels", "voyages"), verdict("wrong", "no cargo column"),
                      sql_block(FAILING_SQL))
    run = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False, rounds_while_failing=1)
    assert run.status == "done", run.error
    assert steps_of(run)[-1] == "generate:2" and run.final_sql == FAILING_SQL
    assert run.events[-1].data["round"] == 2
    assert run.events[-1].data["stop_reason"] == ("reached max_rounds (1) and 1 more round(s), "
                                                  "its SQL still failing")
    # with none allowed, the run stops where the paper's round limit is
    scripted_llm.push(tables_answer("vessels"), sql_block(FAILING_SQL))
    plain = run_agreement(fleet, llm, max_rounds=1, name_rewrite=False)
    assert steps_of(plain)[-1] == "generate:1"
    assert plain.events[-1].data["stop_reason"] == "reached max_rounds (1)"
    assert scripted_llm.remaining == 0


def test_sql_that_runs_at_max_rounds_stops_the_run_there(fleet, llm, scripted_llm):
    scripted_llm.push(tables_answer("vessels", "voyages"), sql_block(GOOD_SQL))
    run = run_agreement(fleet, llm, max_rounds=1, rounds_while_failing=2)
    assert steps_of(run) == ["partition", "extract:1", "generate:1"]
    assert run.events[-1].data["stop_reason"] == "reached max_rounds (1)"


def test_rounds_while_failing_is_off_by_default_as_the_round_limit_was():
    assert PIPELINE.resolve_params({})["rounds_while_failing"] == 0
    assert PIPELINE.resolve_recorded({"check_method": "agreement"})["rounds_while_failing"] == 0
