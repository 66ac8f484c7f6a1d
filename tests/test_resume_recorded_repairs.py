"""Recorded runs resumed at a repair and scored again (``bench/retry_repeats.py``,
``bench/failed_checks.py``, ``bench/name_error_repairs.py``): R³'s repeated correction retried
sampled, DEA-SQL's check given a second repair, and the first repair of a name error found in
each pipeline's runs, against the scripted OpenAI-compatible server."""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.evaluation.harness import DatabasePool, EvalOptions
from agents.evaluation.resume_recorded import resume_record
from agents.pipelines.r3 import PIPELINE
from bench_scripts import bench_script
from dbfactory import make_db
from resume_script import GOLD, QUESTION, WRONG, event, reply


@pytest.fixture
def retry_repeats(monkeypatch):
    return bench_script(monkeypatch, "retry_repeats")


@pytest.fixture
def name_error_repairs(monkeypatch):
    return bench_script(monkeypatch, "name_error_repairs")


@pytest.fixture
def failed_checks(monkeypatch):
    return bench_script(monkeypatch, "failed_checks")


def test_a_run_that_repeated_its_failing_repair_is_resumed_there_and_scored(
        db_path, llm, scripted_llm, retry_repeats):
    # recorded without the retry: the correction repeats the failing SQL until the loop ends
    scripted_llm.push(reply(WRONG), *[reply(WRONG)] * 3)
    db = open_database(db_path)
    recorded = run_to_end(start_run(PIPELINE, QUESTION, db, llm,
                                    params={"k": 0, "max_fix_attempts": 3}))
    db.close()
    assert recorded.status == "failed"
    index = retry_repeats.first_repeat(recorded)
    assert recorded.events[index].step == "fix" and index == 2  # write, execute, fix
    record = {"question_id": 1, "hardness": "easy", "correct": False, "gold_sql": GOLD,
              "pred_sql": WRONG, "pred": {"ok": False}, "run": recorded.to_dict()}

    # resumed with the retry: the first fix repeats again at temperature 0, the sampled one
    # is right, and the run goes on to its reviewer, who approves
    scripted_llm.clear()
    scripted_llm.when(lambda req: req.get("temperature"), reply(GOLD))
    scripted_llm.push(reply(WRONG), "```json\n{\"Reviewer 1\": \"SQL\"}\n```",
                      "COMMENT: right.\nVERDICT: approve")
    row = resume_record(record, PIPELINE, retry_repeats.first_repeat, retry_repeats.retried,
                        db_path, {"repeat_temperature": 0.7, "n_reviewers": 1}, DatabasePool(),
                        llm, EvalOptions())
    assert row["resumed"] and row["from_step"] == "fix"
    assert (row["before"], row["after"]) == (False, True)
    assert (row["runs_before"], row["runs_after"]) == (False, True)
    assert row["retries"] == 1 and row["sql_after"].rstrip(";") == GOLD
    assert row["steps"][:2] == ["fix", "execute"]
    assert row["calls"] == 4  # the fix twice, the invitation, the review
    # what a later replay reads of the resumed steps: no prompts
    assert row["from_index"] == 2 and [e["step"] for e in row["events"]] == row["steps"]
    assert row["events"][1]["execution"]["ok"] is True and "calls" not in row["events"][0]


def test_a_run_without_a_repeated_repair_keeps_its_verdict(db_path, llm, scripted_llm,
                                                           retry_repeats):
    scripted_llm.push(reply(GOLD), "```json\n{\"Reviewer 1\": \"SQL\"}\n```",
                      "COMMENT: right.\nVERDICT: approve")
    db = open_database(db_path)
    recorded = run_to_end(start_run(PIPELINE, QUESTION, db, llm,
                                    params={"k": 0, "n_reviewers": 1}))
    db.close()
    assert retry_repeats.first_repeat(recorded) is None
    record = {"question_id": 2, "correct": True, "gold_sql": GOLD, "pred_sql": GOLD,
              "run": recorded.to_dict()}
    calls = len(scripted_llm.requests)
    row = resume_record(record, PIPELINE, retry_repeats.first_repeat, retry_repeats.retried,
                        db_path, {"repeat_temperature": 0.7}, DatabasePool(), llm,
                        EvalOptions())
    assert row == {"question_id": 2, "hardness": None, "before": True, "after": True,
                   "resumed": False}
    assert len(scripted_llm.requests) == calls


def test_first_repeat_reads_each_pipeline_s_repairs(retry_repeats):
    from agents.core.events import Run
    dea = Run(pipeline="deasql", question="q", db_name="d", events=[
        event("sql_generation", "sql_draft", {"sql": "A"}),
        event("execution_check", "execution_check", {"ok": False, "repairs": [
            {"sql_before": "SELECT a FROM t", "sql_after": "SELECT a  FROM t",
             "error_class": "OperationalError"}]})])
    assert retry_repeats.first_repeat(dea) == 1
    mac = Run(pipeline="macsql", question="q", db_name="d", events=[
        event("refiner", "sql_repair", {"sql_before": "SELECT x FROM t WHERE 0",
                                        "sql_after": "SELECT x FROM t WHERE 0",
                                        "error_class": "EmptyResult"}),
        event("refiner", "sql_repair", {"sql_before": "SELECT y FROM t",
                                        "sql_after": "SELECT z FROM t",
                                        "error_class": "OperationalError"}),
        event("refiner", "sql_repair", {"sql_before": "SELECT z FROM t",
                                        "sql_after": "SELECT y FROM t",
                                        "error_class": "OperationalError"})])
    assert retry_repeats.first_repeat(mac) == 2  # an empty result repeated is not a failure


def test_a_dea_sql_check_that_gave_up_is_resumed_there_with_a_second_repair(
        db_path, llm, scripted_llm, failed_checks):
    from agents.core.events import Run
    from agents.pipelines.deasql import PIPELINE as DEASQL
    from prompt_markers import (DEA_ACTIVE, DEA_CLASSIFY, DEA_CORRECT, DEA_ELEMENTS,
                                DEA_FILTER, DEA_GENERATE, DEA_REPAIR)
    from scripted_llm import prompt_text

    halfway = "SELECT name FROM singer WHERE countr = 'France'"
    # a repair fixes the error it is shown and leaves another one behind
    scripted_llm.when(lambda req: DEA_REPAIR in prompt_text(req)
                      and "no such column: countr" in prompt_text(req), json.dumps({"sql": GOLD}))
    scripted_llm.when(DEA_REPAIR, json.dumps({"sql": halfway}))
    for marker, answer in {
            DEA_ELEMENTS: json.dumps({"entities": ["singers"], "query": "names of singers"}),
            DEA_FILTER: json.dumps({"Required table information": [{
                "Table name": "singer",
                "All field names required by SQL under this table": ["name", "country"]}]}),
            DEA_CLASSIFY: "Label: NON-JOIN, NON-NESTED", DEA_GENERATE: json.dumps({"sql": WRONG}),
            DEA_CORRECT: json.dumps({"sql": WRONG}),
            DEA_ACTIVE: f"Not an extremum problem. The modified SQL: {WRONG}"}.items():
        scripted_llm.when(marker, answer)
    db = open_database(db_path)
    recorded = run_to_end(start_run(DEASQL, QUESTION, db, llm))
    db.close()
    index = failed_checks.failed_check(recorded)
    assert recorded.events[index].step == "execution_check"
    assert recorded.final_sql == halfway
    record = {"question_id": 4, "hardness": "easy", "correct": False, "gold_sql": GOLD,
              "pred_sql": halfway, "pred": {"ok": False}, "run": recorded.to_dict()}

    row = resume_record(record, DEASQL, failed_checks.failed_check, failed_checks.repairs_made,
                        db_path, {"repair_attempts": 2}, DatabasePool(), llm, EvalOptions())
    assert row["resumed"] and row["from_step"] == "execution_check"
    assert (row["before"], row["after"]) == (False, True) and row["runs_after"]
    assert row["repairs"] == 2 and row["calls"] == 2
    assert row["errors"] == ["no such column: nme", "no such column: countr"]
    # a run whose check passed is not resumed, nor one that never reached the check
    passed = recorded.to_dict()
    passed["events"][index]["parsed"]["ok"] = True
    assert failed_checks.failed_check(Run.from_dict(passed)) is None
    unchecked = {**recorded.to_dict(), "events": recorded.to_dict()["events"][:index]}
    assert failed_checks.failed_check(Run.from_dict(unchecked)) is None


def test_a_results_line_without_a_run_keeps_its_verdict(db_path, llm, retry_repeats):
    record = {"question_id": 3, "correct": False, "gold_sql": GOLD, "pred_sql": None,
              "run": None}
    row = resume_record(record, PIPELINE, retry_repeats.first_repeat, retry_repeats.retried,
                        db_path, {}, DatabasePool(), llm, EvalOptions())
    assert row["resumed"] is False and row["after"] is False


def test_the_first_repair_of_a_name_error_is_found_in_old_and_new_runs(name_error_repairs):
    from agents.core.events import Run
    find = name_error_repairs.first_name_error_repair
    failing = {"sql_before": "SELECT T2.x FROM t AS T1 JOIN u AS T2", "sql_after": "B",
               "error": "no such column: T2.x\nHint: T2 is table u.",
               "error_class": "OperationalError"}
    # MAC-SQL recorded before output kinds; a Refiner that gave up repaired nothing
    old_mac = Run(pipeline="macsql", question="q", db_name="d", events=[
        event("decomposer", None, {"sub_questions": []}),
        event("refiner", None, {"sql_before": "SELECT x FROM t WHERE 0", "sql_after": "B",
                                "error": "The SQL executed without error but returned no rows",
                                "error_class": "EmptyResult"}),
        event("refiner", None, {"status": "gave_up", "error": "no such column: T2.x",
                                "error_class": "OperationalError", "attempt": 3}),
        event("refiner", None, failing)])
    assert find("refiner")(old_mac) == 3
    # MAC-SQL with output kinds, and a run that ran at once
    new_mac = Run(pipeline="macsql", question="q", db_name="d", events=[
        event("refiner", "sql_repair", {"status": "repaired", **failing}),
        event("refiner", "sql_repair", {"status": "ok", "rows": 2})])
    assert find("refiner")(new_mac) == 0
    assert find("refiner")(Run(pipeline="macsql", question="q", db_name="d", events=[
        event("refiner", "sql_repair", {"status": "ok", "rows": 2})])) is None
    # R³, old (no kind) and new: a syntax error's correction is not a name error's
    for kind in (None, "sql_repair"):
        r3 = Run(pipeline="r3", question="q", db_name="d", events=[
            event("execute", None, {}),
            event("fix", kind, {**failing, "error": 'near "FROM": syntax error'},
                  {"sql": "A", "error": 'near "FROM": syntax error'}),
            event("fix", kind, failing, {"sql": failing["sql_before"],
                                         "error": failing["error"]})])
        assert find("fix")(r3) == 2
    # R³'s fix reads the error its execution step recorded: the run resumes there, so the
    # hint is written again; DEA-SQL's execution check keeps its repairs in a list
    r3 = Run(pipeline="r3", question="q", db_name="d", events=[
        event("write", "sql_draft", {}), event("execute", "execution_check", {}),
        event("fix", "sql_repair", failing, {"sql": "A", "error": failing["error"]})])
    assert find("fix")(r3) == 1
    dea = Run(pipeline="deasql", question="q", db_name="d", events=[
        event("active_learning", "active_learning", {}),
        event("execution_check", "execution_check", {"ok": False, "repairs": [failing]})])
    assert find("execution_check")(dea) == 1
    assert find("execution_check")(Run(pipeline="deasql", question="q", db_name="d", events=[
        event("execution_check", "execution_check", {"ok": True, "repairs": []})])) is None
    # CSMA's checks are numbered by their agent; the first told of a name error is the one
    csma = Run(pipeline="csma", question="q", db_name="d", events=[
        event("generate:1", "agent_sql", {}),
        event("check:2", "sql_check", {"execution": "ran without error and returned no rows"}),
        event("generate:2", "agent_sql", {}),
        event("check:3", "sql_check", {"execution": "failed: " + failing["error"]})])
    assert find("check")(csma) == 3
    # the resumed steps' prompt variants, R³'s reviewers' left out
    described = name_error_repairs.prompts_of("fix")(Run(
        pipeline="r3", question="q", db_name="d", events=[
            event("fix", None, failing, {"prompt": "tables"}),
            event("review", None, {}, {"prompt": "paper"})]), 0)
    assert described == {"prompts": ["tables"]}


def test_a_selection_repair_resumes_at_its_candidate_and_only_where_the_hint_changed(
        name_error_repairs, tmp_path):
    """The repair reads the error from its candidate's execution, so the run resumes at that
    candidate; with ``changed_hint`` only a repair whose recorded hint today's code would not
    write again counts (here: a rewrite comparing a column with itself, no longer offered)."""
    from agents.core.events import Run
    from agents.rules.name_rewrite import hint_with_rewrite
    script = ("CREATE TABLE owner (owner_id INTEGER PRIMARY KEY, city TEXT);"
              "CREATE TABLE pro (pro_id INTEGER PRIMARY KEY, city TEXT);"
              "INSERT INTO owner VALUES (1, 'West'); INSERT INTO pro VALUES (1, 'West');")
    path = str(make_db(tmp_path / "vets.sqlite", script))
    self_join = "SELECT T1.city FROM pro AS T1 JOIN owner AS T2 ON T1.owner_id = T2.owner_id"
    qualified = "SELECT T1.city FROM owner AS T2 JOIN pro AS T1 ON T2.owner_id = T1.pro_id " \
                "WHERE T1.owner_id = 1"
    with open_database(path) as db:
        error = db.execute(self_join).error
        today = hint_with_rewrite(db, error, self_join, db.schema)
        moved = hint_with_rewrite(db, error, qualified, db.schema)
    assert "A version that runs" not in today and "A version that runs" in moved
    old = today + " A version that runs, with T1.owner_id written T2.owner_id: ..."

    def repair(sql, hint):
        return event("repair:writer", "sql_repair", {"status": "repaired", "sql_before": sql,
                                                     "sql_after": "B", "error": error,
                                                     "hint": hint})

    run = Run(pipeline="selection", question="q", db_name="vets", db_path=path, events=[
        event("ground", "value_matches", {}), event("candidate:cot", "candidate", {}),
        repair(qualified, moved), event("candidate:writer", "candidate", {}),
        repair(self_join, old), event("vote", "candidate_vote", {})])
    find = name_error_repairs.first_name_error_repair
    assert find("repair")(run) == 1  # the first name-error repair, at its candidate
    assert find("repair", changed_hint=True)(run) == 3  # the one whose hint is not today's
    run.events[4] = repair(self_join, today)
    assert find("repair", changed_hint=True)(run) is None
