"""Units in the schema: the note telling the writers what unit a column stores its values in.

The note is read from the schema alone (names, declared types, example values), it reaches
every prompt of a pipeline that turns it on through the evidence, retrieval still ranks tables
by the run's own evidence, and a schema that says no unit changes no prompt.
"""

from __future__ import annotations

import sqlite3

import pytest

from agents.core.engine import run_to_end, start_run
from agents.db.database import open_database
from agents.db.units import column_unit
from agents.pipelines import get_pipeline, list_pipelines
from agents.retrieval.unit_notes import HEADING, unit_notes, with_unit_notes
from agents.rules.registry import SCHEMA_CONTEXT, acting_at
from first_request import first_request
from scripted_llm import prompt_text

SQL = """
CREATE TABLE track (track_id INTEGER PRIMARY KEY, title TEXT, duration_ms INTEGER,
                    price_cents INTEGER, size_mb TEXT, played_ts INTEGER, hours REAL,
                    min_rating INTEGER);
INSERT INTO track VALUES (1, 'Ode', 215000, 99, '3 MB', 1724758553, 1.5, 2),
                         (2, 'Elegy', 183000, 129, '2 MB', 1677912640, 0.5, 1);
"""
PLAIN = """
CREATE TABLE team (team_id INTEGER PRIMARY KEY, name TEXT, founded INTEGER);
INSERT INTO team VALUES (1, 'Owls', 1901), (2, 'Foxes', 1884);
"""


def _db(tmp_path, script, name="music"):
    path = tmp_path / f"{name}.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()
    return open_database(path)


@pytest.mark.parametrize("name, unit", [
    ("duration_ms", "milliseconds"), ("Milliseconds", "milliseconds"), ("distance_m", "metres"),
    ("weight_g", "grams"), ("SizeMB", "megabytes"), ("charge_cents", "cents"),
    ("total_secs", "seconds"), ("volume_ml", "millilitres"),
    ("m", None), ("ms_flag", None), ("min_salary", None), ("price", None), ("secs", None)])
def test_a_column_name_says_its_unit_only_where_it_is_clear(name, unit):
    found = column_unit(name)
    assert (found.name if found else None) == unit


def test_the_note_names_units_factors_and_unix_times_from_the_schema(tmp_path):
    note = unit_notes(_db(tmp_path, SQL).schema)
    lines = note.splitlines()
    assert lines[0] == HEADING
    assert "- track.duration_ms: milliseconds (1 second = 1000 milliseconds, 1 minute = 60000 " \
           "milliseconds, 1 hour = 3600000 milliseconds)" in lines
    assert "- track.price_cents: cents (1 unit of the currency = 100 cents)" in lines
    assert any(line.startswith("- track.played_ts: Unix time in seconds") and
               "date(played_ts, 'unixepoch')" in line for line in lines)
    text = "\n".join(lines)
    # a unit in a text column is a label; hours are what questions ask in; min_ is the least
    assert "size_mb" not in text and "track.hours" not in text and "min_rating" not in text


def test_a_schema_that_says_no_unit_gets_no_note_and_keeps_its_evidence(tmp_path):
    schema = _db(tmp_path, PLAIN, "league").schema
    assert unit_notes(schema) is None
    assert with_unit_notes("founded is a year", schema) == "founded is a year"
    assert with_unit_notes("", schema) == ""


def test_the_note_follows_the_runs_own_evidence(tmp_path):
    schema = _db(tmp_path, SQL).schema
    text = with_unit_notes("a hit is a track played 1000 times", schema)
    assert text.startswith("a hit is a track played 1000 times\n" + HEADING)


def test_the_rule_acts_only_where_its_switch_is_on():
    names = get_pipeline("selection").rules
    assert [r.name for r in acting_at(SCHEMA_CONTEXT, names, {"unit_notes": True})] == \
        ["unit_notes"]
    assert acting_at(SCHEMA_CONTEXT, names, {"unit_notes": False}) == []
    users = {p.name for p in list_pipelines() if "unit_notes" in p.rules}
    assert users == {"macsql", "deasql", "r3", "csma", "selection"}


def _ask(pipeline, db, llm, scripted_llm, on: bool):
    scripted_llm.clear()
    scripted_llm.when(lambda req: True, "```sql\nSELECT title FROM track\n```")
    run = run_to_end(start_run(pipeline, "Which tracks are longer than 3 minutes?", db, llm,
                               params={"unit_notes": on}))
    return run, [prompt_text(r) for r in scripted_llm.requests]


@pytest.mark.parametrize("name", ["macsql", "selection"])
def test_every_prompt_of_a_run_reads_the_note_when_it_is_on(tmp_path, llm, scripted_llm,
                                                            name):
    db = _db(tmp_path, SQL)
    pipeline = get_pipeline(name)
    run, prompts = _ask(pipeline, db, llm, scripted_llm, True)
    writers = [p for p in prompts if "Which tracks are longer" in p]
    assert writers and all("track.duration_ms: milliseconds" in p for p in writers)
    assert run.evidence == ""  # the run's own evidence is unchanged; the trace says the rule
    assert any("unit_notes" in note for e in run.events for note in e.notes)
    run, prompts = _ask(pipeline, db, llm, scripted_llm, False)
    assert not any(HEADING in p for p in prompts)
    assert not any("unit_notes" in note for e in run.events for note in e.notes)


@pytest.mark.parametrize("name", ["macsql", "deasql", "r3", "csma", "selection"])
def test_each_pipeline_s_first_prompt_carries_the_note_when_it_is_on(tmp_path, name):
    db = _db(tmp_path, SQL)
    for on in (True, False):
        messages = first_request(get_pipeline(name), db, "Which tracks are longer than 3 "
                                 "minutes?", params={"unit_notes": on})
        text = "\n".join(m["content"] for m in messages)
        assert ("track.duration_ms: milliseconds" in text) is on
