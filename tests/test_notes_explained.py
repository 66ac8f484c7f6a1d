"""Agent notes a reader can understand: names copied from a prompt's worked example are said to
be, R³'s reviewers are distinct and named by their expertise, and cached model calls say so."""

from __future__ import annotations

import json

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.core.events import LLMCall, StepEvent
from agents.pipelines import get_pipeline
from agents.pipelines.csma.answers import parse_extraction
from agents.pipelines.r3.replies import distinct_personas, parse_personas
from agents.runs.textview import render_event
from dbfactory import make_db
from scripted_llm import prompt_text

SQL = """
CREATE TABLE artist (artist_id INTEGER PRIMARY KEY, name TEXT, country TEXT);
CREATE TABLE album (album_id INTEGER PRIMARY KEY, title TEXT,
                    artist_id INTEGER REFERENCES artist(artist_id));
INSERT INTO artist VALUES (1, 'Ana', 'France'), (2, 'Bo', 'Chile');
INSERT INTO album VALUES (1, 'First', 1), (2, 'Second', 1);
"""
ANSWER = "SELECT name FROM artist"


@pytest.fixture
def db(tmp_path):
    with open_database(make_db(tmp_path / "music.sqlite", SQL)) as handle:
        yield handle


def test_selector_says_which_ignored_tables_came_from_its_worked_example(db, llm,
                                                                         scripted_llm):
    scripted_llm.when("Here is a new example", json.dumps(
        {"artist": "keep_all", "album": ["title", "A11"], "account": "keep_all",
         "ghost": "drop_all"}))
    scripted_llm.when("Decompose the question", f"```sql\n{ANSWER}\n```")
    scripted_llm.when(lambda req: True, f"```sql\n{ANSWER}\n```")
    run = run_to_end(start_run(get_pipeline("macsql"), "Which artists are there?", db, llm,
                               params={"use_selector": "always"}))
    notes = run.events[0].notes
    assert ("ignored table 'account': copied from the prompt's worked example, not from this "
            "database") in notes
    assert "ignored unknown table 'ghost'" in notes
    assert ("album: ignored column 'A11': copied from the prompt's worked example, not from "
            "this database") in notes


def test_csma_says_an_example_table_name_was_copied_from_the_answer_format():
    known = {"artist": ["artist_id", "name"], "album": ["album_id", "title"]}
    extracted, notes = parse_extraction(
        json.dumps({"artist": ["name"], "table_x": ["column_a"]}), known)
    assert extracted == {"artist": ["name"]}
    assert notes == ["ignored table 'table_x': copied from the prompt's worked example, not "
                     "from this database"]


def test_r3_reviewers_are_distinct_and_named_by_expertise(db, llm, scripted_llm):
    scripted_llm.push(
        f"The question asks for names.\n```sql\n{ANSWER};\n```",
        "```json\n" + json.dumps({
            "Reviewer PVsg": "Data Analyst in music catalogues",
            "Reviewer 2KtR": "Senior Database Engineer specialized in writing filters",
            "Reviewer LmN3": "senior database engineer specialized in writing filters."}) + "\n```",
        "COMMENT: fine\nVERDICT: approve", "COMMENT: fine\nVERDICT: approve")
    run = run_to_end(start_run(get_pipeline("r3"), "Which artists are there?", db, llm,
                               params={"n_reviewers": 3, "k": 0}))
    invite = run.events[2]
    assert [r["name"] for r in invite.parsed["reviewers"]] == [
        "Data Analyst in music catalogues",
        "Senior Database Engineer specialized in writing filters"]
    assert any("same expertise more than once" in n for n in invite.notes)
    assert "3 reviewers were asked for, the model invited 2." in invite.notes
    reviews = [e for e in run.events if e.step == "review"]
    assert [e.agent for e in reviews] == ["Reviewer: Data Analyst in music catalogues",
                                          "Reviewer: Senior Database Engineer specialized in "
                                          "writing filters"]
    assert not any("2KtR" in prompt_text(r) for r in scripted_llm.requests[2:])


def test_long_expertise_gets_a_short_unique_name():
    personas = parse_personas(json.dumps({
        "A": "Data Analyst in the music industry with a long focus on sales by genre",
        "B": "Data Analyst in the music industry with a long focus on sales by country"}))
    kept, repeated = distinct_personas(personas)
    assert repeated == [] and len({p["name"] for p in kept}) == 2
    assert all(len(p["name"]) <= 64 for p in kept)


def test_cached_calls_are_labelled_in_the_trace_and_the_cli():
    call = LLMCall(messages=[{"role": "user", "content": "q"}], raw="x", prompt_tokens=10,
                   completion_tokens=2, seconds=0.0, cached=True)
    fresh = LLMCall(messages=[{"role": "user", "content": "q"}], raw="x", seconds=2.0)
    all_cached = StepEvent(index=0, step="writer", agent="SQL Writer", calls=[call], seconds=0.01)
    some = StepEvent(index=0, step="writer", agent="SQL Writer", calls=[call, fresh], seconds=2.0)
    assert all_cached.cache_label() == "cached"
    assert some.cache_label() == "1 of 2 calls cached"
    from ui.trace import done_label

    assert done_label(all_cached) == "1. SQL Writer — 12 tokens · cached · 0.0 s"
    assert "(1 of 2 calls cached)" in render_event(some)[-1]
