"""The result summary: an optional last step that answers the question in words from the
result's first rows, recorded like any step, never failing the run, and quoted by a follow-up."""

from __future__ import annotations


import pytest

from agents.runs.conversation import follow_up_of
from agents.core.engine import ExecLimits, run_to_end, start_run
from agents.core.events import Run
from agents.pipelines import get_pipeline
from agents.runs.result_summary import (SUMMARY_STEP, pipeline_events, summary_messages,
    summary_text, with_summary)
from agents.runs.textview import render_event, render_outcome
from dbfactory import two_singers_db
from scripted_llm import prompt_text

SQL = "```sql\nSELECT name, country FROM singer ORDER BY singer_id\n```"
WORDS = "There are two singers: Ana from France and Bo from Chile."


@pytest.fixture
def db(tmp_path):
    with two_singers_db(tmp_path) as handle:
        yield handle


def _run(db, llm, question="Which singers are there?", **kwargs) -> Run:
    return run_to_end(with_summary(start_run(get_pipeline("baseline"), question, db, llm,
                                             **kwargs), llm))


def test_the_summary_is_one_more_step_with_its_own_kind(db, llm, scripted_llm):
    scripted_llm.push(SQL, WORDS)
    run = _run(db, llm)
    assert run.status == "done" and run.result["ok"]
    last = run.events[-1]
    assert (last.step, last.kind, last.status) == (SUMMARY_STEP, "result_summary", "ok")
    assert last.output.summary == WORDS and last.output.row_count == 2
    assert summary_text(run) == WORDS
    assert [e.step for e in pipeline_events(run)] == [e.step for e in run.events[:-1]]
    prompt = prompt_text(scripted_llm.requests[1])
    for part in ("Which singers are there?", "SELECT name, country FROM singer",
                 "The result has 2 row(s).", "Ana | France", "Bo | Chile",
                 "do not compute, estimate or invent"):
        assert part in prompt
    assert WORDS in "\n".join(render_event(last))
    assert "In words:" in "\n".join(render_outcome(run, 10))
    stored = Run.from_dict(run.to_dict())
    assert summary_text(stored) == WORDS and stored.events[-1].output.kind == "result_summary"


def test_without_the_option_the_run_is_exactly_as_before(db, llm, scripted_llm):
    scripted_llm.push(SQL)
    plain = run_to_end(start_run(get_pipeline("baseline"), "Which singers?", db, llm))
    assert all(e.step != SUMMARY_STEP for e in plain.events)
    assert len(scripted_llm.requests) == 1


def test_a_failed_summary_leaves_the_answer_standing(db, llm, scripted_llm):
    scripted_llm.push(SQL)  # nothing scripted for the summary call: the model answers an error
    run = _run(db, llm)
    assert run.status == "done" and run.final_sql and run.result["ok"]
    last = run.events[-1]
    assert last.step == SUMMARY_STEP and last.status == "error"
    assert "model call failed" in last.error
    assert summary_text(run) == ""


def test_a_failed_query_gets_a_skipped_summary_and_no_model_call(db, llm, scripted_llm):
    scripted_llm.push("```sql\nSELECT nope FROM singer\n```")
    run = _run(db, llm)
    last = run.events[-1]
    assert last.step == SUMMARY_STEP and last.status == "skipped"
    assert "no result to put in words" in last.notes[0]
    assert len(scripted_llm.requests) == 1


def test_the_prompt_says_when_a_result_is_empty_or_cut():
    empty = prompt_text({"messages": summary_messages(
        "Who?", "SELECT 1 WHERE 0", {"ok": True, "columns": ["x"], "rows": [], "row_count": 0})})
    assert "The result is empty: no row matched." in empty and "Rows:" not in empty
    rows = [[i] for i in range(50)]
    cut = prompt_text({"messages": summary_messages(
        "Which?", "SELECT x FROM t", {"ok": True, "columns": ["x"], "rows": rows,
                                      "row_count": 50, "truncated": True})})
    assert "cut by a row or size limit after 50 row(s)" in cut
    assert "Only the first 20 are shown below." in cut and "\n19\n" in cut and "\n20\n" not in cut


def test_a_follow_up_quotes_the_previous_answer_in_words(db, llm, scripted_llm):
    scripted_llm.push(SQL, WORDS)
    first = _run(db, llm)
    follow = follow_up_of(first)
    assert follow.answer == WORDS
    assert f"Its answer in words: {WORDS}" in follow.lines()
    scripted_llm.push(SQL)
    plain = run_to_end(start_run(get_pipeline("baseline"), "Which?", db, llm,
                                 limits=ExecLimits()))
    assert follow_up_of(plain).answer == "" and len(follow_up_of(plain).lines()) == 4
