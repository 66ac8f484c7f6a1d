"""Knowledge notes and follow-ups as the engine sees them: stored, composed into the evidence,
given to every pipeline, recorded on the run, and kept by a resume."""

from __future__ import annotations

import sqlite3

import pytest

from agents.runs.conversation import FollowUpError, follow_up_of, run_context, summarize_result
from agents.core.engine import resume_run, run_to_end, start_run
from agents.core.events import Run
from agents.pipelines import get_pipeline, list_pipelines
from agents.runs.run_context import MAX_NOTES_CHARS, RunContext
from agents.store import SCHEMA_VERSION, Store
from dbfactory import two_singers_db
from scripted_llm import prompt_text

NOTE = "frenchie: a singer whose country is France"


@pytest.fixture
def db(tmp_path):
    with two_singers_db(tmp_path) as handle:
        yield handle


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "studio.db") as s:
        yield s


def test_notes_are_kept_per_database_edited_and_disabled(store):
    first = store.add_note("concerts", "a singer whose country is France", "frenchie")
    assert store.add_note("concerts", "a singer whose country is France", "frenchie") == first
    store.add_note("shop", "status = 1", "active")
    store.update_note(first, text="a singer from France", enabled=False)
    assert [n["text"] for n in store.list_notes("concerts")] == ["a singer from France"]
    assert store.list_notes("concerts", enabled_only=True) == []
    with pytest.raises(ValueError, match="needs a text"):
        store.add_note("concerts", "  ")
    with pytest.raises(ValueError, match="at most"):
        store.add_note("concerts", "x" * 5000)
    assert store.remove_note(first) and store.list_notes("concerts") == []


def test_knowledge_beyond_the_budget_is_left_out_and_counted(store):
    for i in range(40):
        store.add_note("concerts", f"definition number {i} " + "y" * 100, f"term {i}")
    context = run_context(store, "concerts")
    assert len(context.evidence()) <= MAX_NOTES_CHARS + 100
    assert context.left_out == 40 - len(context.notes) > 0
    assert context.to_dict()["left_out"] == context.left_out


@pytest.mark.parametrize("pipeline", [p.name for p in list_pipelines()])
def test_knowledge_notes_reach_every_pipeline(pipeline, db, llm, scripted_llm, store):
    store.add_note("concerts", "a singer whose country is France", "frenchie")
    scripted_llm.when(lambda req: True, "```sql\nSELECT name FROM singer\n```")
    context = run_context(store, "concerts", "")
    run = run_to_end(start_run(get_pipeline(pipeline), "How many frenchies are there?", db, llm,
                               evidence=context.evidence(), context=context.to_dict()))
    assert scripted_llm.requests, run.error
    assert any(NOTE in prompt_text(r) for r in scripted_llm.requests)
    if pipeline in ("baseline", "macsql", "selection"):  # these finish on any SQL answer
        assert all(NOTE in prompt_text(r) for r in scripted_llm.requests)
    assert run.context["notes"] == [{"id": 1, "title": "frenchie",
                                     "text": "a singer whose country is France"}]
    assert RunContext.from_run(Run.from_dict(run.to_dict())).notes[0].title == "frenchie"


def test_a_follow_up_gives_the_previous_sql_and_is_kept_by_a_resume(db, llm, scripted_llm,
                                                                    store):
    pipeline = get_pipeline("baseline")
    scripted_llm.push("```sql\nSELECT name FROM singer\n```",
                      "```sql\nSELECT name FROM singer WHERE country = 'France'\n```")
    first = run_to_end(start_run(pipeline, "Which singers are there?", db, llm))
    context = run_context(store, "concerts", "use the name column", previous=first)
    second = run_to_end(start_run(pipeline, "Only the French ones?", db, llm,
                                  evidence=context.evidence(), context=context.to_dict()))
    prompt = prompt_text(scripted_llm.requests[1])
    assert ("Hint: use the name column\nThis question follows up on the previous question of "
            "the conversation.\nPrevious question: Which singers are there?\nIts SQL: SELECT "
            "name FROM singer\nIts result: 2 row(s); columns name; first rows: Ana; Bo") in prompt
    assert second.context["thread_id"] == first.run_id
    resumed = run_to_end(resume_run(pipeline, second, 1, db, llm))
    assert resumed.context == second.context and resumed.evidence == second.evidence
    for run in (first, second):
        store.save_run(run)
        store.add_to_thread(run)
    assert [r["question"] for r in store.thread_runs(first.run_id)] == [
        "Which singers are there?", "Only the French ones?"]
    assert store.thread_of(second.run_id) == first.run_id


def test_a_run_without_sql_cannot_be_followed_up():
    with pytest.raises(FollowUpError, match="no final SQL"):
        follow_up_of(Run(pipeline="baseline", question="q", db_name="d"))


def test_result_summaries_are_short_and_say_failures():
    wide = {"ok": True, "columns": ["a", "b"], "rows": [["x" * 100, None]] * 5, "row_count": 1000,
            "truncated": True}
    text = summarize_result(wide)
    assert text.startswith("1000 or more row(s); columns a, b; first rows: ")
    assert "NULL" in text and len(text) <= 400
    assert summarize_result({"ok": False, "error": "no such\ncolumn: x"}) == (
        "the query failed: no such column: x")
    assert summarize_result(None) == "not executed"


def test_a_version_1_store_gains_the_workspace_tables(tmp_path):
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT);"
                       "INSERT INTO meta VALUES ('schema_version', '1');")
    conn.commit()
    conn.close()
    from agents.store.schema import MIGRATIONS

    conn = sqlite3.connect(path)
    import sqlite_utils
    MIGRATIONS[1](sqlite_utils.Database(conn))
    conn.commit()
    conn.close()
    with Store(path) as store:
        store.add_note("d", "text")
        assert store.saved_databases() == []
        version = store.db.execute("SELECT value FROM meta").fetchone()[0]
    assert int(version) == SCHEMA_VERSION


def test_a_follow_up_of_a_run_with_an_accepted_answer_builds_on_that_answer(db, llm,
                                                                            scripted_llm, store):
    """The user corrected the model's SQL and accepted it: the follow-up is told the accepted
    SQL and its result, not the model's, and the run's context keeps that it was the accepted
    answer; a stored run nothing was accepted from is followed up on its own SQL; an answer
    accepted as written without a stored result is told the run's own result."""
    pipeline = get_pipeline("baseline")
    scripted_llm.push("```sql\nSELECT name FROM singer\n```")
    first = run_to_end(start_run(pipeline, "Which singers are there?", db, llm))
    store.save_run(first)
    corrected = "SELECT name, country FROM singer ORDER BY name"
    preview = db.execute(corrected).preview()
    store.accept(first.run_id, first.question, corrected, "concerts", result_preview=preview)
    context = run_context(store, "concerts", previous=first)
    follow = context.follow_up
    assert follow.accepted and follow.sql == corrected and follow.answer == ""
    assert follow.summary.startswith("2 row(s); columns name, country")
    assert f"Its SQL: {corrected}" in context.evidence()
    assert "SELECT name FROM singer\n" not in context.evidence() + "\n"
    kept = RunContext.from_run(Run.from_dict({"pipeline": "baseline", "question": "q",
                                              "db_name": "concerts",
                                              "context": context.to_dict()}))
    assert kept.follow_up.accepted and kept.follow_up.sql == corrected
    # a run nothing was accepted from is followed up on its own final SQL
    scripted_llm.push("```sql\nSELECT name FROM singer\n```")
    other = run_to_end(start_run(pipeline, "Which singers are there?", db, llm))
    store.save_run(other)
    assert store.accepted_of_run(other.run_id) is None
    plain = run_context(store, "concerts", previous=other).follow_up
    assert not plain.accepted and plain.sql == other.final_sql
    store.accept(other.run_id, "Which singers, again?", other.final_sql, "concerts")
    as_written = run_context(store, "concerts", previous=other).follow_up
    assert as_written.accepted and as_written.summary == summarize_result(other.result)
