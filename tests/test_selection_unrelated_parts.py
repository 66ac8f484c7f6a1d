"""Candidate selection with ``unrelated_parts``: a candidate reading parts of the schema that no
foreign key connects is told so and repaired, keeps its SQL when the repair does not help,
and a run told so is reproduced when resumed from any step."""

from __future__ import annotations

import pytest

from agents.db.database import open_database
from agents.core.engine import resume_run, run_to_end, start_run
from agents.pipelines.selection import PIPELINE
from dbfactory import TWO_APPLICATIONS_SQL, make_db
from prompt_markers import R3_EXEC_ERROR, SELECT_PARTS
from scripted_llm import last_user_message
from selection_script import _stable, choice, decomposition, script, sql_block


# -- a candidate reading unrelated parts of the schema ----------------------------------------

SURFACE = "What is the total surface area of the continents Asia and Europe?"
ACROSS = ("SELECT SUM(T2.SurfaceArea) FROM continents AS T1 JOIN country AS T2 "
          "ON T1.Continent = T2.Continent WHERE T1.Continent IN ('asia', 'europe')")
ACROSS_AGAIN = ("SELECT SUM(T2.SurfaceArea) FROM countries AS T1 JOIN country AS T2 "
                "ON T1.CountryName = T2.Name")
WITHIN = "SELECT SUM(SurfaceArea) FROM country WHERE Continent IN ('Asia', 'Europe')"


@pytest.fixture
def world(tmp_path):
    database = open_database(make_db(tmp_path / "world.sqlite", TWO_APPLICATIONS_SQL))
    yield database
    database.close()


def told_of_parts(req: dict) -> bool:
    return SELECT_PARTS in last_user_message(req)


def ask_surface(db, llm, **params):
    params = {"generators": "writer,decomposer", "samples": 0, "unrelated_parts": True,
              **params}
    return run_to_end(start_run(PIPELINE, SURFACE, db, llm, params=params))


def test_a_candidate_reading_unrelated_parts_is_told_so_and_takes_a_repair_within_one(
        world, llm, scripted_llm):
    scripted_llm.when(told_of_parts, sql_block(WITHIN))
    script(scripted_llm, writer=sql_block(ACROSS), decomposer=decomposition(WITHIN))
    result = ask_surface(world, llm)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "candidate:decomposer", "vote"]
    assert result.events[1].execution["ok"]  # it ran: SQLite had nothing to say
    assert any("It gets a repair told so" in n for n in result.events[1].notes)
    repair = result.events[2]
    assert repair.parsed["error_class"] == "UnrelatedParts"
    assert repair.parsed["error"].startswith("it reads tables of 2 parts of the database that "
                                             "no foreign key connects (continents and country)")
    assert repair.parsed["sql_after"] == WITHIN and repair.sql == WITHIN
    # told in the writer's own conversation, after its answer
    request = [r for r in scripted_llm.requests if told_of_parts(r)][0]
    assert [m["role"] for m in request["messages"]] == ["user", "assistant", "user"]
    assert request["messages"][-1]["content"].startswith(f"This SQL:\n```sql\n{ACROSS}\n```\n"
                                                         "runs, but it reads tables of 2 parts")
    vote = result.events[-1].parsed
    assert vote["outcome"] == "decisive" and vote["groups"][0]["size"] == 2
    assert result.final_sql == WITHIN


@pytest.mark.parametrize("reply", [ACROSS_AGAIN, "SELECT SUM(area) FROM country", ACROSS])
def test_a_repair_that_does_not_read_one_part_leaves_the_candidate_as_it_was(
        world, llm, scripted_llm, reply):
    scripted_llm.when(told_of_parts, sql_block(reply))
    script(scripted_llm, writer=sql_block(ACROSS), decomposer=decomposition(WITHIN),
           select=choice("B"))
    result = ask_surface(world, llm)

    assert result.status == "done", result.error
    repair = result.events[2]
    assert repair.step == "repair:writer" and repair.sql == ACROSS
    if reply == ACROSS:  # the same SQL again: nothing new to run
        assert repair.execution is None
    else:  # the step ends on the SQL the candidate keeps
        assert repair.execution["ok"] and repair.execution["sql"] == ACROSS
    assert any("keeps" in n for n in repair.notes)
    assert len([r for r in scripted_llm.requests if told_of_parts(r)]) == 1  # told once
    vote = next(e for e in result.events if e.step == "vote").parsed
    assert {g["sql"] for g in vote["groups"]} == {ACROSS, WITHIN}  # the writer's own SQL votes


def test_a_repaired_candidate_that_then_reads_unrelated_parts_is_told_so_too(
        world, llm, scripted_llm):
    failing = "SELECT SUM(T2.SurfaceArea) FROM continent AS T1 JOIN country AS T2 USING (Continent)"
    scripted_llm.when(told_of_parts, sql_block(WITHIN))
    script(scripted_llm, writer=sql_block(failing), decomposer=decomposition(WITHIN),
           repair=sql_block(ACROSS))
    result = ask_surface(world, llm)

    assert result.status == "done", result.error
    assert [e.step for e in result.events] == [
        "ground", "candidate:writer", "repair:writer", "repair:writer", "candidate:decomposer",
        "vote"]
    first, second = result.events[2], result.events[3]
    assert first.parsed["error_class"] != "UnrelatedParts" and first.sql == ACROSS
    assert second.parsed["error_class"] == "UnrelatedParts" and second.parsed["attempt"] == 2
    # the second repair continues the conversation: the error, the first reply, then the parts
    request = [r for r in scripted_llm.requests if told_of_parts(r)][0]
    assert [m["role"] for m in request["messages"]] == [
        "user", "assistant", "user", "assistant", "user"]
    assert R3_EXEC_ERROR in request["messages"][2]["content"]
    assert result.final_sql == WITHIN


def test_off_a_candidate_reading_unrelated_parts_votes_as_written(world, llm, scripted_llm):
    scripted_llm.when(told_of_parts, sql_block(WITHIN))
    script(scripted_llm, writer=sql_block(ACROSS), decomposer=decomposition(WITHIN),
           select=choice("A"))
    for params in ({"unrelated_parts": False}, {"repair": False}):
        result = ask_surface(world, llm, **params)
        assert result.status == "done", result.error
        assert not any(e.step.startswith("repair") for e in result.events)
        vote = next(e for e in result.events if e.step == "vote").parsed
        assert {g["sql"] for g in vote["groups"]} == {ACROSS, WITHIN}
    assert not [r for r in scripted_llm.requests if told_of_parts(r)]


def test_the_parts_repair_is_off_by_default_and_for_recorded_runs():
    assert PIPELINE.resolve_params({})["unrelated_parts"] is False
    assert PIPELINE.resolve_recorded({})["unrelated_parts"] is False
    assert PIPELINE.resolve_recorded({"unrelated_parts": True})["unrelated_parts"] is True


FAILING_SURFACE = ("SELECT SUM(T2.SurfaceArea) FROM continent AS T1 JOIN country AS T2 "
                   "USING (Continent)")


@pytest.mark.parametrize("writer, repair, parts_reply", [
    (ACROSS, None, WITHIN),                 # told, and the repair reads one part
    (ACROSS, None, ACROSS_AGAIN),           # told, and the candidate keeps its SQL
    (FAILING_SURFACE, ACROSS, WITHIN),      # a repaired candidate told after its repair
])
def test_resuming_from_any_step_reproduces_a_run_told_of_unrelated_parts(
        world, llm, scripted_llm, writer, repair, parts_reply):
    scripted_llm.when(told_of_parts, sql_block(parts_reply))
    script(scripted_llm, writer=sql_block(writer), decomposer=decomposition(WITHIN),
           repair=sql_block(repair) if repair else None, select=choice("A"))
    first = ask_surface(world, llm)
    assert first.status == "done", first.error
    assert any((e.parsed or {}).get("error_class") == "UnrelatedParts" for e in first.events)
    for index in range(len(first.events) + 1):
        again = run_to_end(resume_run(PIPELINE, first, index, world, llm))
        assert again.status == "done" and again.final_sql == first.final_sql
        assert [_stable(e) for e in again.events] == [_stable(e) for e in first.events]
        assert _candidates_state(again) == _candidates_state(first)


def _candidates_state(run) -> list[dict]:
    """The candidates as a run ends with them, without the timings of their results."""
    keys = ("name", "sql", "answer", "repaired_from", "repair_turns", "parts_told")
    return [{k: c.get(k) for k in keys} for c in run.events[-1].data["candidates"]]
