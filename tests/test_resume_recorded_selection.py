"""Recorded candidate-selection runs resumed and scored again (``bench/recandidate.py``,
``bench/second_repairs.py``): a candidate written again and voted on again, a repair that
failed anew given a second one, and a run asked on a merged file; the vote resumed with
another order is in ``tests/test_selection_resume.py``."""

from __future__ import annotations

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.evaluation.harness import DatabasePool, EvalOptions
from agents.evaluation.resume_recorded import resume_record
from bench_scripts import bench_script
from dbfactory import SINGERS_SQL, make_db
from resume_script import GOLD, QUESTION, WRONG, event


@pytest.fixture
def recandidate(monkeypatch):
    return bench_script(monkeypatch, "recandidate")


@pytest.fixture
def second_repairs(monkeypatch):
    return bench_script(monkeypatch, "second_repairs")


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
