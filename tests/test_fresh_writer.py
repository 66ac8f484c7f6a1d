"""The writer afresh (``fresh_writer``): where MAC-SQL's, DEA-SQL's or R³'s repairs end on SQL
that fails, one writer writes the SQL again from the run's schema with the single prompt; its
SQL is the answer only if it runs, else the run ends as the repairs left it."""

from __future__ import annotations

import json

import pytest

import deasql_script
import r3_script
from agents.core.engine import resume_run, run_to_end
from agents.pipelines import fresh_writer
from agents.pipelines.deasql import PIPELINE as DEASQL
from agents.pipelines.macsql import PIPELINE as MACSQL
from agents.pipelines.r3 import PIPELINE as R3
from agents.rules.registry import rule, rules_table
from bench_scripts import bench_script
from deasql_script import event, script
from macsql_script import DECOMPOSER, REFINER, decomposition
from macsql_script import run as run_macsql
from prompt_markers import DEA_CORRECT, DEA_GENERATE, DEA_REPAIR, R3_EXEC_ERROR, WRITER
from scripted_llm import prompt_text

db = deasql_script.db  # the singers and concerts, in a file of their own name

BROKEN = "SELECT nme FROM singer WHERE country = 'France'"
FRESH = "SELECT name FROM singer WHERE country = 'France'"


def fresh_requests(server) -> list[dict]:
    return [r for r in server.requests if WRITER in prompt_text(r)]


def script_failing_deasql(server, *fresh: str) -> None:
    """DEA-SQL's agents and its repair all write :data:`BROKEN`; the writer afresh answers
    ``fresh`` in turn (its first SQL, then its repair)."""
    answers = iter(fresh)
    server.when(WRITER, lambda req: f"```sql\n{next(answers)}\n```")
    script(server, **{DEA_GENERATE: json.dumps({"sql": BROKEN}),
                      DEA_CORRECT: json.dumps({"sql": BROKEN}),
                      DEA_REPAIR: json.dumps({"sql": BROKEN})})


def run_deasql(db, llm, **params):
    return deasql_script.run(db, llm, variant=None, name_rewrite=False,
                             repair_from_hint=False, **params)


# -- DEA-SQL: the execution check hands its failure over -------------------------------------

def test_a_failing_execution_check_goes_on_to_the_writer_whose_sql_is_the_answer(
        db, llm, scripted_llm):
    script_failing_deasql(scripted_llm, FRESH)
    result = run_deasql(db, llm, fresh_writer=True)
    assert result.status == "done", result.error
    check = event(result, "execution_check")
    assert check.status == "ok" and check.next_step == fresh_writer.STEP
    assert any("writes it afresh from the schema (fresh_writer)" in n for n in check.notes)
    step = result.events[-1]
    assert step.step == fresh_writer.STEP and step.kind == "fresh_sql"
    assert step.parsed["taken"] is True and step.parsed["failed_sql"] == BROKEN
    assert "no such column: nme" in step.parsed["failed_error"]
    assert result.final_sql == FRESH and [r[0] for r in result.result["rows"]] == ["Ann", "Cleo"]
    # the single prompt over the run's whole schema, with nothing of the failing SQL to copy
    (prompt,) = fresh_requests(scripted_llm)
    text = prompt_text(prompt)
    assert "CREATE TABLE singer" in text and "CREATE TABLE concert" in text
    assert deasql_script.QUESTION in text and "nme" not in text


def test_the_writers_failing_sql_is_repaired_once_told_the_error(db, llm, scripted_llm):
    script_failing_deasql(scripted_llm, "SELECT singer_name FROM singer", FRESH)
    result = run_deasql(db, llm, fresh_writer=True)
    assert result.status == "done", result.error
    step = result.events[-1]
    assert step.parsed["first_sql"] == "SELECT singer_name FROM singer"
    assert "no such column: singer_name" in step.parsed["first_error"]
    assert result.final_sql == FRESH
    repair = fresh_requests(scripted_llm)[-1]["messages"]
    assert [m["role"] for m in repair] == ["user", "assistant", "user"]
    assert R3_EXEC_ERROR in repair[2]["content"] and "singer_name" in repair[2]["content"]
    assert "Hint:" in repair[2]["content"]


def test_when_the_writer_fails_too_the_run_fails_as_it_did_without_it(db, llm, scripted_llm):
    script_failing_deasql(scripted_llm, "SELECT a1 FROM singer", "SELECT a2 FROM singer")
    result = run_deasql(db, llm, fresh_writer=True)
    assert result.status == "failed"
    step = result.events[-1]
    assert step.step == fresh_writer.STEP and step.status == "error"
    assert "the SQL does not run after 1 repair attempt(s)" in step.error
    assert "its SQL fails too" in step.error and "a2" in step.error
    assert result.final_sql == BROKEN  # the SQL the repairs ended on, as before


def test_with_the_switch_off_the_execution_check_fails_the_run(db, llm, scripted_llm):
    script_failing_deasql(scripted_llm, FRESH)
    result = run_deasql(db, llm, fresh_writer=False)
    assert result.status == "failed" and result.events[-1].step == "execution_check"
    assert fresh_requests(scripted_llm) == []


def test_resumed_at_the_writer_with_sql_that_runs_it_keeps_that_sql(db, llm, scripted_llm):
    script_failing_deasql(scripted_llm, "SELECT a1 FROM singer", "SELECT a2 FROM singer")
    first = run_deasql(db, llm, fresh_writer=True)
    index = next(e.index for e in first.events if e.step == fresh_writer.STEP)
    edited = dict(first.events[index - 1].data, sql=FRESH)
    calls = len(scripted_llm.requests)
    second = run_to_end(resume_run(DEASQL, first, index, db, llm, data=edited))
    assert len(scripted_llm.requests) == calls  # the writer did not write
    assert second.status == "done" and second.final_sql == FRESH
    assert second.events[index].status == "skipped"


def test_resumed_at_the_writer_with_the_switch_off_the_run_fails_as_before(db, llm,
                                                                           scripted_llm):
    script_failing_deasql(scripted_llm, "SELECT a1 FROM singer", "SELECT a2 FROM singer")
    first = run_deasql(db, llm, fresh_writer=True)
    index = next(e.index for e in first.events if e.step == fresh_writer.STEP)
    calls = len(scripted_llm.requests)
    second = run_to_end(resume_run(DEASQL, first, index, db, llm,
                                   params={**first.params, fresh_writer.PARAM: False}))
    assert len(scripted_llm.requests) == calls
    assert second.status == "failed" and "the SQL does not run" in second.error
    assert "the writer afresh is off" in second.error and second.final_sql == BROKEN


def test_resumed_at_the_ending_the_failure_is_handed_over_again(db, llm, scripted_llm):
    script_failing_deasql(scripted_llm, "SELECT a1 FROM singer", "SELECT a2 FROM singer")
    first = run_deasql(db, llm, fresh_writer=True)
    index = next(e.index for e in first.events if e.step == "execution_check")
    assert "afresh" not in first.events[index - 1].data  # the state before the ending
    second = run_to_end(resume_run(DEASQL, first, index, db, llm))
    assert [e.step for e in second.events[index:]] == ["execution_check", fresh_writer.STEP]
    assert second.events[-1].data["afresh"]["sql"] == BROKEN


def test_a_writer_whose_answer_holds_no_sql_leaves_deasqls_failure_as_it_was(db, llm,
                                                                             scripted_llm):
    scripted_llm.when(WRITER, "I do not know.")
    script_failing_deasql(scripted_llm)
    result = run_deasql(db, llm, fresh_writer=True)
    step = result.events[-1]
    assert step.step == fresh_writer.STEP and result.status == "failed"
    assert step.parsed["sql"] == "" and step.parsed["taken"] is False
    assert "the SQL does not run" in step.error and "the writer wrote no SQL" in step.error


def test_a_writer_whose_answer_holds_no_sql_leaves_macsqls_last_sql(small_db, llm,
                                                                   scripted_llm):
    scripted_llm.when(WRITER, "I do not know.")
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nope0 FROM singer")))
    scripted_llm.when(REFINER, "```sql\nSELECT nope0 FROM singer\n```")
    result = run_macsql(small_db, llm, name_rewrite=False, fresh_writer=True)
    step = result.events[-1]
    assert step.step == fresh_writer.STEP and result.status == "done"
    assert step.parsed["sql"] == "" and step.parsed["taken"] is False
    assert any("the writer wrote no SQL" in n for n in step.notes)
    assert result.final_sql == "SELECT nope0 FROM singer"


# -- R³: spent corrections hand their failure over ------------------------------------------

def test_r3s_spent_corrections_go_on_to_the_writer(db, llm, scripted_llm):
    scripted_llm.when(WRITER, f"```sql\n{FRESH}\n```")
    scripted_llm.push(*[r3_script.writer(BROKEN)] * 2)
    result = r3_script.run(db, llm, n_reviewers=1, max_fix_attempts=1, name_rewrite=False,
                           repair_from_hint=False, fresh_writer=True)
    assert result.status == "done", result.error
    assert [e.step for e in result.events] == ["write", "execute", "fix", "execute",
                                               fresh_writer.STEP]
    assert result.events[-1].parsed["taken"] is True and result.final_sql == FRESH
    state = result.events[-1].data  # the loop's failure is not left behind
    assert state["stop_reason"] == "fresh_writer" and state["last_error"] is None
    scripted_llm.push(*[r3_script.writer(BROKEN)] * 2)
    off = r3_script.run(db, llm, n_reviewers=1, max_fix_attempts=1, name_rewrite=False,
                        repair_from_hint=False, fresh_writer=False)
    assert off.status == "failed" and "still fails after 1 correction(s)" in off.error


def test_r3s_writer_failing_too_fails_the_run_with_the_corrections_error(db, llm,
                                                                         scripted_llm):
    scripted_llm.when(WRITER, "```sql\nSELECT a1 FROM singer\n```")
    scripted_llm.push(*[r3_script.writer(BROKEN)] * 2)
    result = r3_script.run(db, llm, n_reviewers=1, max_fix_attempts=1, name_rewrite=False,
                           repair_from_hint=False, fresh_writer=True)
    assert result.status == "failed" and result.events[-1].step == fresh_writer.STEP
    assert "still fails after 1 correction(s)" in result.error
    assert "its SQL fails too" in result.error and result.final_sql == BROKEN


# -- MAC-SQL: a Refiner that gives up hands its last SQL over ---------------------------------

def test_a_refiner_that_gives_up_goes_on_to_the_writer(small_db, llm, scripted_llm):
    scripted_llm.when(WRITER, "```sql\nSELECT COUNT(*) FROM singer WHERE country = 'France'\n```")
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nope0 FROM singer")))
    scripted_llm.when(REFINER, "```sql\nSELECT nope1 FROM singer\n```")
    result = run_macsql(small_db, llm, max_refine=1, name_rewrite=False, fresh_writer=True)
    assert result.status == "done", result.error
    assert result.events[-2].parsed["status"] == "gave_up"
    assert result.events[-1].step == fresh_writer.STEP
    assert result.final_sql == "SELECT COUNT(*) FROM singer WHERE country = 'France'"
    assert result.result["rows"] == [[2]]


def test_a_refiner_whose_writer_fails_too_keeps_its_last_sql(small_db, llm, scripted_llm):
    scripted_llm.when(WRITER, "```sql\nSELECT nope9 FROM singer\n```")
    scripted_llm.when(DECOMPOSER, decomposition(("q", "SELECT nope0 FROM singer")))
    scripted_llm.when(REFINER, "```sql\nSELECT nope0 FROM singer\n```")  # the same SQL
    result = run_macsql(small_db, llm, name_rewrite=False, fresh_writer=True)
    assert result.status == "done"  # as MAC-SQL ends without the writer: on its last SQL
    step = result.events[-1]
    assert step.step == fresh_writer.STEP and step.parsed["taken"] is False
    assert any("its SQL fails too" in n for n in step.notes)
    assert result.final_sql == "SELECT nope0 FROM singer" and result.result["ok"] is False


def test_an_empty_result_is_not_handed_over(small_db, llm, scripted_llm):
    empty = "SELECT name FROM singer WHERE country = 'Mars'"
    scripted_llm.when(DECOMPOSER, decomposition(("q", empty)))
    scripted_llm.when(REFINER, f"```sql\n{empty}\n```")
    result = run_macsql(small_db, llm, refine_empty_result=True, fresh_writer=True)
    assert "same SQL" in result.events[-1].notes[0]  # the Refiner's loop ended on it
    assert fresh_writer.STEP not in [e.step for e in result.events]
    assert fresh_requests(scripted_llm) == []


# -- declared once ----------------------------------------------------------------------------

@pytest.mark.parametrize("pipeline", [MACSQL, DEASQL, R3])
def test_the_rule_is_declared_and_drawn_in_the_graph(pipeline):
    assert "fresh_writer" in pipeline.rules
    assert any(p.name == fresh_writer.PARAM for p in pipeline.params)
    assert any(b == fresh_writer.STEP for _, b in pipeline.edges())
    declared = rule("fresh_writer")
    assert declared.switch == fresh_writer.PARAM and declared.hook == "repair ending"
    line = next(line for line in rules_table([pipeline]).splitlines() if "Writer afresh" in line)
    assert pipeline.name in line


@pytest.mark.parametrize("pipeline", [MACSQL, DEASQL, R3])
def test_it_is_on_by_default_and_runs_recorded_before_it_replay_without_it(pipeline):
    assert pipeline.resolve_params({})[fresh_writer.PARAM] is True
    assert pipeline.resolve_recorded({"name_rewrite": True})[fresh_writer.PARAM] is False


def test_the_measurement_resumes_exactly_the_runs_that_ended_on_failing_sql(
        db, llm, scripted_llm, monkeypatch):
    """``bench/fresh_writer.py`` finds a run's failing ending, and no ending that runs."""
    measure = bench_script(monkeypatch, "fresh_writer")
    find = measure.failing_ending("execution_check")
    script_failing_deasql(scripted_llm, FRESH)
    failing = run_deasql(db, llm, fresh_writer=False)
    assert find(failing) == len(failing.events) - 1
    scripted_llm.clear()
    deasql_script.script(scripted_llm)
    assert find(run_deasql(db, llm)) is None  # it runs: nothing to resume
    taken = measure.describe(run_deasql_failing_then_fresh(db, llm, scripted_llm), 0)
    assert taken == {"fresh_writer": True, "taken": True}


def run_deasql_failing_then_fresh(db, llm, server):
    server.clear()
    script_failing_deasql(server, FRESH)
    return run_deasql(db, llm, fresh_writer=True)
