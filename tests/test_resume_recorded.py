"""Recorded runs resumed from one step and scored again (``bench/retry_repeats.py``,
``bench/name_error_repairs.py``, ``bench/failed_checks.py``, ``bench/recandidate.py``,
``bench/second_repairs.py``, ``bench/csma_checks.py``, ``bench/csma_rewrites.py``; the vote
resumed with another order is in ``tests/test_selection.py``), against the scripted
OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.evaluation.harness import DatabasePool, EvalOptions
from agents.evaluation.resume_recorded import resume_record
from agents.pipelines.r3 import PIPELINE
from bench_scripts import bench_script
from dbfactory import SINGERS_SQL, make_db

QUESTION = "What are the names of singers from France?"
GOLD = "SELECT name FROM singer WHERE country = 'France'"
WRONG = "SELECT nme FROM singer WHERE country = 'France'"


def reply(sql: str) -> str:
    return f"The question asks for names.\n```sql\n{sql};\n```"


@pytest.fixture
def retry_repeats(monkeypatch):
    return bench_script(monkeypatch, "retry_repeats")


@pytest.fixture
def name_error_repairs(monkeypatch):
    return bench_script(monkeypatch, "name_error_repairs")


@pytest.fixture
def failed_checks(monkeypatch):
    return bench_script(monkeypatch, "failed_checks")


@pytest.fixture
def recandidate(monkeypatch):
    return bench_script(monkeypatch, "recandidate")


@pytest.fixture
def second_repairs(monkeypatch):
    return bench_script(monkeypatch, "second_repairs")


@pytest.fixture
def db_path(tmp_path):
    return str(make_db(tmp_path / "music.sqlite", SINGERS_SQL))


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


def event(step, kind, parsed, inputs=None):
    from agents.core.events import StepEvent
    return StepEvent(index=0, step=step, agent=step, title=step, status="ok", kind=kind,
                     parsed=parsed, inputs=inputs or {})


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


def test_a_selection_run_with_its_decomposer_written_again_is_voted_on_again(
        db_path, llm, scripted_llm, recandidate):
    """Recorded with the paper's Decomposer prompt: its wrong candidate ties with the writer's
    right one and the selection agent picks it. Resumed at that candidate with the graded
    prompt, the decomposer agrees with the writer, whose candidate is written again the same,
    and the vote is decisive."""
    from agents.core.events import Run
    from agents.pipelines.selection import PIPELINE as SELECTION
    from prompt_markers import MAC_DECOMPOSE, SELECT_CHOICE, WRITER
    everyone = "SELECT name FROM singer"
    one_step = "If one SQL query can answer the [Question]"

    def asks(marker):
        return lambda req: marker in str(req["messages"][0]["content"])

    def decomposed(sql):
        return f"Sub question 1: Which singers?\nSQL\n```sql\n{sql}\n```\nQuestion Solved."

    scripted_llm.when(asks(one_step), decomposed(GOLD))
    scripted_llm.when(asks(MAC_DECOMPOSE), decomposed(everyone))
    scripted_llm.when(asks(WRITER), f"```sql\n{GOLD}\n```")
    scripted_llm.when(asks(SELECT_CHOICE), '{"reasoning": "A is first.", "choice": "A"}')
    db = open_database(db_path)
    recorded = run_to_end(start_run(SELECTION, QUESTION, db, llm, params={
        "generators": "decomposer,writer", "samples": 0, "decomposer_prompt": "paper",
        "draft_first": False, "stop_when_decided": False}))
    db.close()
    assert [e.step for e in recorded.events] == [
        "ground", "candidate:decomposer", "candidate:writer", "vote", "select"]
    assert recorded.final_sql == everyone
    record = {"question_id": 4, "correct": False, "gold_sql": GOLD, "pred_sql": everyone,
              "pred": {"ok": True}, "run": recorded.to_dict()}

    find, describe = recandidate.regenerating("decomposer")
    row = resume_record(record, SELECTION, find, describe, db_path,
                        {"decomposer_prompt": "graded"}, DatabasePool(), llm, EvalOptions())
    assert row["resumed"] and row["from_step"] == "candidate:decomposer"
    assert (row["before"], row["after"]) == (False, True)
    assert row["steps"] == ["candidate:decomposer", "candidate:writer", "vote"]
    assert row["prompt"] == "graded" and row["later_changed"] == []
    assert (row["candidate_sql_before"], row["candidate_sql_after"]) == (everyone, GOLD)
    assert row["vote"] == "decisive" and row["chosen"] == "decomposer"
    assert row["calls"] == 2  # the decomposer and the writer; no selection agent

    # a run without that candidate keeps its verdict
    assert find(Run(pipeline="selection", question="q", db_name="d", events=[
        event("candidate:writer", "candidate", {})])) is None


def test_the_option_a_script_needs_first_is_checked_before_the_rest(recandidate, capsys):
    from agents.evaluation.resume_recorded import leading_option

    assert leading_option(["--pipeline", "r3", "--results", "x"], "--pipeline", ["macsql", "r3"],
                          "doc") == ("r3", ["--results", "x"])
    for argv, code, stream, text in [
            (["--help"], 0, "out", "doc"),
            (["--results", "x"], 2, "err", "--pipeline is required: one of macsql, r3"),
            (["--pipeline", "csma"], 2, "err", "--pipeline: 'csma' is not one of macsql, r3")]:
        with pytest.raises(SystemExit) as exit_:
            leading_option(argv, "--pipeline", ["macsql", "r3"], "doc")
        assert exit_.value.code == code
        assert text in getattr(capsys.readouterr(), stream)
    # a candidate name is checked by the generators' own lookup, before any model is started
    with pytest.raises(SystemExit) as exit_:
        recandidate.main(["--candidate", "poet", "--results", "x"])
    assert exit_.value.code == 2 and "'poet' is not a generator" in capsys.readouterr().err


def test_a_stopped_measurement_continues_with_its_rows_under_the_same_settings(tmp_path):
    """``--continue`` keeps an earlier report's rows and sittings only when it measured the
    same thing; a sitting left ``running`` by a killed measurement is said to have ended
    unrecorded."""
    from agents.evaluation.resume_recorded import earlier_report, summary
    from agents.evaluation.sittings import Sitting

    settings = {"results": "bench/results/seed8", "pipeline": "selection",
                "params": {"decomposer_prompt": "graded"}, "examples": "train.json",
                "records": 3, "machine": {}}
    out = tmp_path / "report.json"
    assert earlier_report(out, settings) == {"rows": [], "sittings": []}  # nothing yet
    row = {"question_id": 4, "before": True, "after": True, "resumed": False}
    sitting = Sitting(code="abc1234")
    sitting.count_result()
    out.write_text(json.dumps(summary([row], {**settings, "sittings": [sitting.so_far()]})))
    assert json.loads(out.read_text())["complete"] is False
    kept = earlier_report(out, settings)
    assert kept["rows"] == [row]
    assert [(s["code"], s["results"], s["ended_as"]) for s in kept["sittings"]] == [
        ("abc1234", 1, "ended unrecorded")]
    # the same files named another way are the same measurement
    assert earlier_report(out, {**settings, "results": str(Path.cwd() / "bench/results/seed8")})
    with pytest.raises(SystemExit, match="another params; write to a new --out"):
        earlier_report(out, {**settings, "params": {"decomposer_prompt": "paper"}})
    for text in ("{not json", "[1, 2]"):
        out.write_text(text)
        with pytest.raises(SystemExit, match="is not a (readable report|report of this)"):
            earlier_report(out, settings)


def test_a_measurement_stopped_and_continued_ends_with_one_row_per_record(tmp_path):
    """Interrupted after two runs, the report holds those two and says so; continued, only
    the rest are resumed and the report is complete, with both sittings."""
    from agents.evaluation.resume_recorded import earlier_report, measure

    records = [{"question_id": q} for q in (1, 2, 3, 4)]
    settings = {"results": "r", "pipeline": "p", "params": {}, "examples": None,
                "records": len(records), "machine": {}}
    out = tmp_path / "report.json"
    resumed: list[int] = []

    def resume_one(record, stop_at=None):
        if record["question_id"] == stop_at:
            raise KeyboardInterrupt
        resumed.append(record["question_id"])
        return {"question_id": record["question_id"], "before": False, "after": True,
                "resumed": True, "calls": 1, "seconds": 1.0}

    report, status = measure(records, lambda r: resume_one(r, stop_at=3), out, settings,
                             {"rows": [], "sittings": []})
    assert status == 130 and resumed == [1, 2]
    written = json.loads(out.read_text())
    assert written == report and not written["complete"]
    assert [r["question_id"] for r in written["rows"]] == [1, 2]
    assert [s["ended_as"] for s in written["sittings"]] == ["interrupted"]
    assert not list(tmp_path.glob("*.partial"))          # written whole, then swapped in

    report, status = measure(records, resume_one, out, settings, earlier_report(out, settings))
    assert status == 0 and resumed == [1, 2, 3, 4]
    assert [r["question_id"] for r in report["rows"]] == [1, 2, 3, 4] and report["complete"]
    assert report["ex_after"] == 4
    assert [(s["ended_as"], s["results"]) for s in report["sittings"]] == [
        ("interrupted", 2), ("done", 2)]


def test_a_selection_repair_that_failed_anew_is_resumed_there_with_a_second_repair(
        db_path, llm, scripted_llm, second_repairs):
    """Recorded with one repair: the writer's table is wrong, its repair fixes the table and
    names a wrong column, and no candidate runs. Resumed at that repair with two attempts, the
    repair answers as recorded and a second one, told the new error, is right."""
    from agents.pipelines.selection import PIPELINE as SELECTION
    from prompt_markers import R3_EXEC_ERROR, WRITER
    wrong_table = "SELECT name FROM singers WHERE country = 'France'"

    def repair(req):
        second = len(req["messages"]) > 3
        return f"```sql\n{GOLD if second else WRONG}\n```"

    scripted_llm.when(lambda req: R3_EXEC_ERROR in str(req["messages"][-1]["content"]), repair)
    scripted_llm.when(lambda req: WRITER in str(req["messages"][0]["content"]),
                      f"```sql\n{wrong_table}\n```")
    with open_database(db_path) as db:
        recorded = run_to_end(start_run(SELECTION, QUESTION, db, llm,
                                        params={"generators": "writer", "samples": 0}))
    assert recorded.status == "failed"  # no candidate ran
    index = second_repairs.first_repair_failing_anew(recorded)
    assert recorded.events[index].step == "repair:writer"
    record = {"question_id": 3, "hardness": "easy", "correct": False, "gold_sql": GOLD,
              "pred_sql": WRONG, "pred": {"ok": False}, "run": recorded.to_dict()}

    row = resume_record(record, SELECTION, second_repairs.first_repair_failing_anew,
                        second_repairs.repairs_after, db_path, {"repair_attempts": 2},
                        DatabasePool(), llm, EvalOptions())
    assert row["resumed"] and row["from_step"] == "repair:writer"
    assert (row["before"], row["after"]) == (False, True)
    assert row["steps"] == ["repair:writer", "repair:writer", "vote"]
    assert row["first_repair_as_recorded"] is True
    assert [(r["attempt"], r["runs"]) for r in row["repairs"]] == [(1, False), (2, True)]
    assert row["calls"] == 2


def test_a_selection_run_whose_repairs_ran_or_repeated_their_error_is_not_resumed(
        second_repairs):
    from agents.core.events import Run

    def repair(error, after_error, ok=False):
        e = event("repair:cot", "sql_repair", {"sql_before": "A", "sql_after": "B",
                                               "error": error})
        e.execution = {"ok": ok, "error": after_error}
        return e

    same = Run(pipeline="selection", question="q", db_name="d", events=[
        event("candidate:cot", "candidate", {}), repair("no such column: x", "no such column: x"),
        event("vote", "candidate_vote", {})])
    fixed = Run(pipeline="selection", question="q", db_name="d", events=[
        event("candidate:cot", "candidate", {}), repair("no such column: x", None, ok=True)])
    anew = Run(pipeline="selection", question="q", db_name="d", events=[
        event("candidate:cot", "candidate", {}), repair("no such column: x", None, ok=True),
        repair("no such table: t", "no such column: y")])
    assert second_repairs.first_repair_failing_anew(same) is None
    assert second_repairs.first_repair_failing_anew(fixed) is None
    assert second_repairs.first_repair_failing_anew(anew) == 2


def test_a_run_asked_on_a_merged_file_is_resumed_there_and_scored_against_its_own_database(
        db_path, llm, scripted_llm, second_repairs, tmp_path):
    """An evaluation with ``--ask-db``: the resumed steps run on the file the question was
    asked on, whose names differ (the merge renames), and the gold query on its own database."""
    from agents.pipelines.selection import PIPELINE as SELECTION
    from prompt_markers import R3_EXEC_ERROR, WRITER
    merged = str(make_db(tmp_path / "merged.sqlite",
                         SINGERS_SQL.replace("singer ", "music_singer ")
                         .replace("singer(", "music_singer(")))
    renamed = "SELECT name FROM music_singer WHERE country = 'France'"
    with open_database(merged) as db:
        assert db.execute(GOLD).error == "no such table: singer"

    def repair(req):
        second = len(req["messages"]) > 3
        return f"```sql\n{renamed if second else 'SELECT nme FROM music_singer'}\n```"

    scripted_llm.when(lambda req: R3_EXEC_ERROR in str(req["messages"][-1]["content"]), repair)
    scripted_llm.when(lambda req: WRITER in str(req["messages"][0]["content"]),
                      "```sql\nSELECT name FROM singer WHERE country = 'France'\n```")
    with open_database(merged) as db:
        recorded = run_to_end(start_run(SELECTION, QUESTION, db, llm,
                                        params={"generators": "writer", "samples": 0}))
    record = {"question_id": 4, "correct": False, "gold_sql": GOLD, "pred_sql": None,
              "run": recorded.to_dict()}
    row = resume_record(record, SELECTION, second_repairs.first_repair_failing_anew,
                        second_repairs.repairs_after, db_path, {"repair_attempts": 2},
                        DatabasePool(), llm, EvalOptions(), ask_path=merged)
    assert row["resumed"] and row["sql_after"] == renamed
    assert (row["before"], row["after"]) == (False, True)


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


def test_a_few_named_questions_are_resumed_and_their_report_continues_only_as_such(tmp_path):
    """``--question`` measures a change known to touch a few questions: only their records
    are resumed, a mistyped id is refused rather than measuring nothing, and a report of some
    questions is not continued as one of others."""
    from agents.evaluation.resume_recorded import chosen_records, earlier_report, summary

    records = [{"question_id": q, "pipeline": p} for q in (1, 2, 3) for p in ("a", "b")]
    assert [r["question_id"] for r in chosen_records(records, "a", [])] == [1, 2, 3]
    assert chosen_records(records, "a", [3, 1]) == [{"question_id": 1, "pipeline": "a"},
                                                    {"question_id": 3, "pipeline": "a"}]
    with pytest.raises(SystemExit, match="no a record for question 7"):
        chosen_records(records, "a", [1, 7])
    settings = {"results": "r", "pipeline": "a", "params": {}, "examples": None, "records": 1,
                "machine": {}, "only": [1]}
    out = tmp_path / "report.json"
    out.write_text(json.dumps(summary([], {**settings, "sittings": []})))
    assert earlier_report(out, settings) == {"rows": [], "sittings": []}
    with pytest.raises(SystemExit, match="another only"):
        earlier_report(out, {**settings, "only": [3]})


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
