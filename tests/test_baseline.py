"""The baseline pipeline: one SQL Writer call, end to end on a real SQLite file."""

from __future__ import annotations

import sqlite3

import pytest

from agents.db.database import open_database
from agents.core.engine import run_to_end, start_run
from agents.pipelines import get_pipeline
from scripted_llm import last_user_message

PIPELINE = get_pipeline("baseline")

SQL = """
CREATE TABLE team (team_id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT);
CREATE TABLE player (player_id INTEGER PRIMARY KEY, team_id INTEGER REFERENCES team(team_id),
                     name TEXT, position TEXT);
INSERT INTO team VALUES (1, 'Owls', 'Leeds'), (2, 'Foxes', 'York');
INSERT INTO player VALUES (1, 1, 'Kai', 'goalkeeper'), (2, 1, 'Lu', 'striker'),
                          (3, 2, 'Mo', 'striker');
"""


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "league.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(SQL)
    conn.close()
    return open_database(path)


def test_baseline_end_to_end(db, llm, scripted_llm):
    scripted_llm.push("```sql\nSELECT COUNT(*) FROM player WHERE position = 'striker';\n```")
    run = run_to_end(start_run(PIPELINE, "How many strikers are there?", db, llm,
                               evidence="striker is a position"))

    assert run.status == "done"
    [event] = run.events
    assert (event.agent, event.status) == ("SQL Writer", "ok")
    assert run.final_sql == "SELECT COUNT(*) FROM player WHERE position = 'striker'"
    assert run.result["rows"] == [[2]]
    prompt = last_user_message(scripted_llm.requests[0])
    # compact DDL, example values as comments (none for key columns), then the question
    assert "CREATE TABLE player (" in prompt
    assert "position TEXT, -- e.g. 'goalkeeper', 'striker'" in prompt
    assert "team_id INTEGER PRIMARY KEY," in prompt and "e.g. 1, 2" not in prompt
    assert "FOREIGN KEY (team_id) REFERENCES team(team_id)" in prompt
    assert prompt.index("Rules:") < prompt.index("CREATE TABLE") < prompt.index("strikers")
    assert prompt.rstrip().endswith("How many strikers are there?\nHint: striker is a position")
    assert "reasoning" not in prompt.lower()


def test_baseline_can_show_the_macsql_schema(db, llm, scripted_llm):
    scripted_llm.push("```sql\nSELECT name FROM team\n```")
    run = run_to_end(start_run(PIPELINE, "Team names?", db, llm,
                               params={"schema_format": "macsql"}))
    prompt = last_user_message(scripted_llm.requests[0])
    assert "# Table: team" in prompt and "player.`team_id` = team.`team_id`" in prompt
    assert "Hint:" not in prompt
    assert sorted(run.result["rows"]) == [["Foxes"], ["Owls"]]


def test_baseline_without_sql_in_the_answer_fails_the_step_after_one_retry(db, llm,
                                                                          scripted_llm):
    scripted_llm.push("I do not know.", "Still no idea.")
    run = run_to_end(start_run(PIPELINE, "Team names?", db, llm))
    assert run.status == "failed"
    assert "could not be parsed" in run.events[0].error and len(run.events[0].calls) == 2
    assert run.final_sql is None and run.result is None


@pytest.mark.real_model
def test_baseline_answers_a_simple_count_with_the_embedded_model(real_llm, sample_dbs):
    db = open_database(sample_dbs / "library.sqlite")
    reference = db.execute("SELECT COUNT(*) FROM members")
    run = run_to_end(start_run(PIPELINE, "How many members are there?", db, real_llm))
    assert run.status == "done", run.error
    assert run.result["ok"] and run.result["rows"] == [list(r) for r in reference.rows]
