"""Comparing pipelines: result agreement as multisets of rows, in any column order."""

from __future__ import annotations

import sqlite3

import pytest

from agents.runs.compare import PipelineOutcome, agreement_groups, compare
from agents.db.sqltext import results_equal as results_agree
from agents.db.database import open_database
from agents.core.events import RunFinished, StepEvent


def result(rows, columns=None, **extra):
    rows = [list(r) for r in rows]
    width = len(rows[0]) if rows else len(columns or [])
    return {"ok": True, "columns": columns or [f"c{i}" for i in range(width)], "rows": rows,
            "row_count": len(rows), "truncated": False, **extra}


@pytest.mark.parametrize("a, b, agree", [
    ([(1, "x"), (2, "y")], [(2, "y"), (1, "x")], True),            # row order
    ([(1, "x"), (2, "y")], [("x", 1), ("y", 2)], True),            # column order
    ([(1, 2), (2, 1)], [(2, 1), (1, 2)], True),
    ([(1, "x"), (2, "y")], [("y", 1), ("x", 2)], False),           # values re-paired
    ([(1,), (1,), (2,)], [(1,), (2,), (2,)], False),               # multisets, not sets
    ([(1,), (2,)], [(1,), (2,), (2,)], False),                     # row counts
    ([(1, "x")], [(1,)], False),                                   # widths
    ([(2,)], [(2.0,)], True),                                      # 2 == 2.0
    ([(0.1 + 0.2,)], [(0.3,)], True),                              # float noise
    ([(0.3,)], [(0.31,)], False),
    ([(None, "a")], [("a", None)], True),
])
def test_results_agree(a, b, agree):
    assert results_agree(result(a), result(b)) is agree
    assert results_agree(result(b), result(a)) is agree


def test_empty_results_agree_when_they_have_the_same_width():
    assert results_agree(result([], ["a"]), result([], ["b"]))
    assert not results_agree(result([], ["a"]), result([], ["a", "b"]))


def test_agreement_groups_leave_out_failed_results():
    outcomes = [
        PipelineOutcome("one", "done", result=result([(1,)])),
        PipelineOutcome("two", "done", result=result([(2,)])),
        PipelineOutcome("three", "done", result=result([(2.0,)])),
        PipelineOutcome("four", "done", result={"ok": False, "error": "no such table"}),
        PipelineOutcome("five", "failed", result=None),
    ]
    assert agreement_groups(outcomes) == [["two", "three"], ["one"]]


SQL = """
CREATE TABLE city (city_id INTEGER PRIMARY KEY, name TEXT, population INTEGER);
INSERT INTO city VALUES (1, 'Oslo', 700000), (2, 'Bergen', 290000), (3, 'Molde', 32000);
"""


@pytest.fixture
def db(tmp_path):
    path = tmp_path / "cities.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript(SQL)
    conn.close()
    return open_database(path)


def test_compare_runs_each_pipeline_and_groups_equal_results(db, llm, scripted_llm):
    scripted_llm.when("You are a SQLite expert",
                      "```sql\nSELECT name, population FROM city WHERE population > 100000\n```")
    scripted_llm.when("thinking step by step",
                      "Sub question 1: big cities\nSQL\n```sql\n"
                      "SELECT population, name FROM city WHERE population >= 290000\n```")
    seen = []
    comparison = compare(["baseline", "macsql"], "Which cities have over 100,000 people?", db,
                         llm, on_item=lambda name, item: seen.append((name, type(item))))

    assert [o.pipeline for o in comparison.outcomes] == ["baseline", "macsql"]
    assert all(o.status == "done" and o.result_ok for o in comparison.outcomes)
    assert comparison.groups == [["baseline", "macsql"]] and comparison.all_agree
    assert comparison.outcome("baseline").calls == 1
    assert comparison.outcome("macsql").calls == 1  # Selector skipped on a 3-column schema
    assert (("baseline", RunFinished) in seen and ("macsql", StepEvent) in seen)
    data = comparison.to_dict()
    assert data["all_agree"] is True and data["outcomes"][1]["run"]["pipeline"] == "macsql"


def test_compare_reports_disagreement_and_failures_without_stopping(db, llm, scripted_llm):
    scripted_llm.when("You are a SQLite expert", "```sql\nSELECT COUNT(*) FROM city\n```")
    scripted_llm.when("thinking step by step", "no SQL here")
    comparison = compare(["baseline", "macsql", "baseline"], "How many cities?", db, llm,
                         params_by_pipeline={"macsql": {"max_refine": 0}})
    baseline, macsql, again = comparison.outcomes
    assert baseline.result_ok and macsql.status == "failed" and "parsed" in macsql.error
    assert comparison.groups == [["baseline", "baseline"]]
    assert not comparison.all_agree and macsql.group is None


def test_compare_turns_bad_parameters_into_an_outcome(db, llm, scripted_llm):
    scripted_llm.when("You are a SQLite expert", "```sql\nSELECT COUNT(*) FROM city\n```")
    comparison = compare(["macsql", "baseline"], "How many cities?", db, llm,
                         params_by_pipeline={"macsql": {"max_refine": "lots"}})
    assert comparison.outcomes[0].status == "error" and comparison.outcomes[0].error
    assert comparison.outcomes[1].result["rows"] == [[3]]
