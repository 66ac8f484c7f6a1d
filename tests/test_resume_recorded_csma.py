"""Recorded CSMA runs resumed and scored again (``bench/csma_checks.py``,
``bench/csma_rewrites.py``, ``bench/csma_failing_rounds.py``,
``bench/csma_global_writer.py``): at a check with the agreement check, where a name rewrite
would have run, and after SQL that failed with more rounds or the global writer."""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.evaluation.harness import DatabasePool, EvalOptions
from agents.evaluation.resume_recorded import resume_record
from bench_scripts import bench_script
from resume_script import GOLD, QUESTION, WRONG, reply


@pytest.fixture
def csma_checks(monkeypatch):
    return bench_script(monkeypatch, "csma_checks")


def test_a_csma_check_of_sql_that_runs_is_resumed_there_with_the_agreement_check(
        db_path, llm, scripted_llm, csma_checks):
    """Recorded with the paper's check: agent 1 writes a query that runs and answers too much,
    and agent 2's model verdict accepts it. Resumed at that check with check_method=agreement,
    agent 2's own SQL returns another result and goes on; agent 1's own SQL agrees with it."""
    from agents.pipelines.csma import PIPELINE as CSMA
    every_singer = "SELECT name FROM singer"
    tables = json.dumps({"tables": ["singer"]})
    scripted_llm.push(tables, f"```sql\n{every_singer}\n```", tables,
                      json.dumps({"verdict": "correct", "reason": "it lists the names"}))
    with open_database(db_path) as db:
        recorded = run_to_end(start_run(CSMA, QUESTION, db, llm,
                                        params={"check_method": "verdict"}))
    assert recorded.status == "done" and recorded.final_sql == every_singer
    index = csma_checks.first_check_of_running_sql(recorded)
    assert recorded.events[index].step == "check:2"
    record = {"question_id": 4, "hardness": "easy", "correct": False, "gold_sql": GOLD,
              "pred_sql": every_singer, "pred": {"ok": True}, "run": recorded.to_dict()}

    scripted_llm.push(reply(GOLD), tables, reply(GOLD))
    row = resume_record(record, CSMA, csma_checks.first_check_of_running_sql,
                        csma_checks.checks_after, db_path, {"check_method": "agreement"},
                        DatabasePool(), llm, EvalOptions())
    assert row["resumed"] and row["from_step"] == "check:2"
    assert (row["before"], row["after"]) == (False, True)
    assert row["steps"] == ["check:2", "generate:2", "extract:1", "check:1"]
    assert row["checks"] == [
        {"step": "check:2", "method": "agreement", "verdict": "negative", "agrees": False},
        {"step": "check:1", "method": "agreement", "verdict": "positive", "agrees": True}]
    assert row["stop_reason"] == "Agent 1's own SQL returns the same result"
    assert row["calls"] == 3 and scripted_llm.remaining == 0


def test_a_csma_run_whose_checks_saw_only_failing_sql_is_not_resumed(csma_checks):
    from agents.core.events import Run
    failing = {"ok": False, "error": "no such column: nme"}

    def event(step, execution, status="ok"):
        return {"index": 0, "step": step, "agent": "", "title": "", "status": status,
                "execution": execution}

    only_failing = Run.from_dict({"pipeline": "csma", "question": QUESTION, "db_name": "m",
                                  "events": [event("generate:1", failing),
                                             event("check:2", failing)]})
    assert csma_checks.first_check_of_running_sql(only_failing) is None
    later = Run.from_dict({"pipeline": "csma", "question": QUESTION, "db_name": "m",
                           "events": [event("generate:1", failing), event("check:2", failing),
                                      event("generate:2", {"ok": True}),
                                      event("check:1", {"ok": True})]})
    assert csma_checks.first_check_of_running_sql(later) == 3


def csma_misspelt_and_other(db_path, llm, scripted_llm, other_sql: str):
    """Two CSMA runs of one round each, failing SQL left as written (no global writer): the
    first ends on a
    misspelt column (``na_me``), the second on ``other_sql``; with the first's results record."""
    from agents.pipelines.csma import PIPELINE as CSMA
    misspelt = "SELECT na_me FROM singer WHERE country = 'France'"
    tables = json.dumps({"tables": ["singer"]})
    scripted_llm.push(tables, f"```sql\n{misspelt}\n```", tables, f"```sql\n{other_sql}\n```")
    with open_database(db_path) as db:
        before = {"max_rounds": 1, "name_rewrite": False, "global_writer": False,
                  "global_check": False}
        first = run_to_end(start_run(CSMA, QUESTION, db, llm, params=before))
        second = run_to_end(start_run(CSMA, QUESTION, db, llm, params=before))
    assert first.final_sql == misspelt and second.final_sql == other_sql
    record = {"question_id": 4, "hardness": "easy", "correct": False, "gold_sql": GOLD,
              "pred_sql": misspelt, "pred": {"ok": False}, "run": first.to_dict()}
    return first, second, record


@pytest.fixture
def csma_rewrites(monkeypatch):
    return bench_script(monkeypatch, "csma_rewrites")


def test_a_csma_run_is_resumed_where_a_rewrite_would_have_made_its_sql_run(
        db_path, llm, scripted_llm, csma_rewrites):
    """Recorded without ``name_rewrite``: agent 1 misspells a column and the run ends on it.
    Resumed at that generate step with the rewrite on, the same answer is rewritten and runs.
    A misspelling no single change mends is not resumed."""
    from agents.pipelines.csma import PIPELINE as CSMA
    recorded, hopeless, record = csma_misspelt_and_other(db_path, llm, scripted_llm, WRONG)
    misspelt = recorded.final_sql
    assert csma_rewrites.first_rewritable_step(hopeless) is None
    index = csma_rewrites.first_rewritable_step(recorded)
    assert recorded.events[index].step == "generate:1"

    scripted_llm.push(f"```sql\n{misspelt}\n```")
    row = resume_record(record, CSMA, csma_rewrites.first_rewritable_step,
                        csma_rewrites.rewrites_after, db_path, {"name_rewrite": True},
                        DatabasePool(), llm, EvalOptions())
    assert row["resumed"] and row["from_step"] == "generate:1" and row["calls"] == 1
    assert (row["before"], row["after"]) == (False, True)
    assert row["runs_after"] and row["sql_after"] == misspelt.replace("na_me", "name")
    assert row["rewrites"] == [{"step": "generate:1",
                                "rewrite": "na_me written name (the column of singer is spelt "
                                           "so)"}]
    assert row["stop_reason"] == "reached max_rounds (1)"


def test_a_checks_own_sql_that_failed_on_a_name_is_read_for_the_rewrite(csma_rewrites):
    from agents.core.events import StepEvent
    check = StepEvent.from_dict({
        "index": 4, "step": "check:2", "agent": "Agent 2", "title": "", "status": "ok",
        "parsed": {"verdict": "negative", "own_sql": "SELECT T2.x FROM t AS T2",
                   "own_execution": "failed: no such column: T2.x\nHint: ..."}})
    assert csma_rewrites.failing_sql(check) == ("SELECT T2.x FROM t AS T2",
                                                "no such column: T2.x")
    ran = StepEvent.from_dict({**check.to_dict(), "parsed": {
        "own_sql": "SELECT 1", "own_execution": "ran without error and returned 1 row(s)"}})
    assert csma_rewrites.failing_sql(ran) is None


@pytest.fixture
def csma_failing_rounds(monkeypatch):
    return bench_script(monkeypatch, "csma_failing_rounds")


def test_a_csma_run_that_stopped_on_failing_sql_is_resumed_at_its_last_generation(
        db_path, llm, scripted_llm, csma_failing_rounds):
    """Recorded with the round limit alone: agent 1's SQL fails and the run stops at
    max_rounds. Resumed at that generation with a round past it, agent 2 checks the failing SQL
    and writes SQL that runs. A run that stopped on SQL that runs is not resumed."""
    from agents.pipelines.csma import PIPELINE as CSMA
    recorded, runs, record = csma_misspelt_and_other(db_path, llm, scripted_llm,
                                                     "SELECT name FROM singer")
    misspelt = recorded.final_sql
    assert csma_failing_rounds.stopped_failing(runs) is None
    index = csma_failing_rounds.stopped_failing(recorded)
    assert index == len(recorded.events) - 1 and recorded.events[index].step == "generate:1"
    tables = json.dumps({"tables": ["singer"]})

    scripted_llm.push(f"```sql\n{misspelt}\n```", tables,
                      json.dumps({"verdict": "wrong", "reason": "no column na_me"}),
                      f"```sql\n{GOLD}\n```")
    row = resume_record(record, CSMA, csma_failing_rounds.stopped_failing,
                        csma_failing_rounds.rounds_after, db_path, {"rounds_while_failing": 1},
                        DatabasePool(), llm, EvalOptions())
    assert row["resumed"] and row["from_step"] == "generate:1" and row["calls"] == 4
    assert row["steps"] == ["generate:1", "extract:2", "check:2", "generate:2"]
    assert (row["before"], row["after"]) == (False, True) and row["sql_after"] == GOLD
    assert row["generation_sql"] == misspelt and row["rounds_added"] == 1
    assert row["stop_reason"] == ("reached max_rounds (1) and 1 more round(s), after which its "
                                  "SQL runs")
    assert scripted_llm.remaining == 0


@pytest.fixture
def csma_global_writer(monkeypatch):
    return bench_script(monkeypatch, "csma_global_writer")


def test_a_csma_run_that_stopped_on_failing_sql_is_resumed_after_it_with_the_global_writer(
        db_path, llm, scripted_llm, csma_global_writer):
    """Recorded without the global writer: agent 1's SQL fails and the run stops at
    max_rounds. Resumed after its last step, which the option routes on to the global writer,
    no recorded step is asked again: the writer's one call writes SQL that runs. A run that
    stopped on SQL that runs is not resumed."""
    from agents.pipelines.csma import PIPELINE as CSMA
    recorded, runs, record = csma_misspelt_and_other(db_path, llm, scripted_llm,
                                                     "SELECT name FROM singer")
    assert csma_global_writer.after_failing_end(runs) is None
    scripted_llm.push(f"```sql\n{GOLD}\n```")
    row = resume_record(record, CSMA, csma_global_writer.after_failing_end,
                        csma_global_writer.written, db_path, {"global_writer": True},
                        DatabasePool(), llm, EvalOptions())
    assert row["resumed"] and row["from_step"] is None and row["calls"] == 1
    assert row["steps"] == ["global_writer"]
    assert (row["before"], row["after"]) == (False, True) and row["sql_after"] == GOLD
    assert row["taken"] is True and row["writer_sql"] == GOLD
    assert row["writer_tables"] == ["singer"]
    assert scripted_llm.remaining == 0
