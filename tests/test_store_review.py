"""The review loop's record in the store: outcome, the accepted answer linked to its run, the
lists and exports that carry both, and the version 1 -> 2 migration of older files."""

from __future__ import annotations

import csv
import io
import json

import pytest
import sqlite_utils

from agents.core.outcome import (DONE_DOUBTFUL, DONE_EMPTY, DONE_FAILS, DONE_NO_SQL, DONE_RUNS,
    NOT_ANSWERABLE, outcome)
from agents.store import Store, blamed_step_label
from agents.store.schema import MIGRATIONS

from run_records import make_run

FAILING = {"ok": False, "error": "no such column: nme", "error_class": "OperationalError"}


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "studio.db") as s:
        yield s


def test_outcome_tells_running_sql_from_failing_sql():
    assert outcome("done", "SELECT 1", {"ok": True}) == DONE_RUNS
    assert outcome("done", "SELECT nme FROM t", FAILING) == DONE_FAILS
    assert outcome("done", None, None) == DONE_NO_SQL
    assert outcome("failed", "SELECT 1", {"ok": True}) == "failed"
    assert outcome("stopped", None, None) == "stopped"
    # the answer's review tells a doubtful, an empty and an unanswerable one apart
    assert outcome("done", "SELECT 1", {"ok": True, "row_count": 0}) == DONE_EMPTY
    assert outcome("done", "SELECT 1", {"ok": True, "row_count": 5},
                   {"doubt": "the question asks for one value"}) == DONE_DOUBTFUL
    assert outcome("done", None, None, {"answerable": False}) == NOT_ANSWERABLE
    assert outcome("done", "SELECT 'x'", {"ok": True}, {"answerable": False}) == NOT_ANSWERABLE


def test_runs_are_listed_and_filtered_by_outcome(store):
    good = make_run(question="good")
    bad = make_run(question="bad", sql="SELECT nme FROM products")
    bad.result = FAILING
    store.save_run(good)
    store.save_run(bad)
    rows = {r["question"]: r for r in store.list_runs()}
    assert rows["good"]["outcome"] == DONE_RUNS and rows["bad"]["outcome"] == DONE_FAILS
    assert [r["question"] for r in store.list_runs(outcome=DONE_FAILS)] == ["bad"]
    assert store.distinct_values("outcome") == [DONE_FAILS, DONE_RUNS]


def test_an_accepted_answer_is_part_of_its_runs_record(store):
    run = make_run(question="How many cancelled?")
    other = make_run(question="Something else")
    store.save_run(run)
    store.save_run(other)
    accepted_id = store.accept(run.run_id, run.question, "SELECT COUNT(order_id) FROM orders", "shop",
                               result_preview={"ok": True, "rows": [[4]]}, author="dana")
    row = store.run_info(run.run_id)
    assert (row["accepted"], row["accepted_sql"], row["accepted_by"]) == (
        "yes", "SELECT COUNT(order_id) FROM orders", "dana")
    assert row["accepted_at"] and row["final_sql"] != row["accepted_sql"]
    assert store.run_info(other.run_id)["accepted"] == "no"
    assert [r["run_id"] for r in store.list_runs(accepted=True)] == [run.run_id]
    assert [r["run_id"] for r in store.list_runs(accepted=False)] == [other.run_id]
    assert [r["run_id"] for r in store.list_runs(search="count(order_id)")] == [run.run_id]
    # saving the run again (e.g. after a replay) keeps the link
    store.save_run(run)
    assert store.run_info(run.run_id)["accepted_id"] == accepted_id
    # the same pair accepted from another run is stored once and linked to both
    assert store.accept(other.run_id, run.question, "SELECT COUNT(order_id) FROM orders",
                        "shop") == accepted_id
    assert store.run_info(other.run_id)["accepted"] == "yes"
    assert len(store.list_accepted("shop")) == 1
    assert store.remove_accepted(accepted_id)
    assert store.list_accepted() == []
    assert {r["accepted"] for r in store.list_runs()} == {"no"}


def test_exports_carry_outcome_and_accepted_sql_beside_the_models(store):
    run = make_run(question="Which?")
    store.save_run(run)
    store.accept(run.run_id, run.question, "SELECT 42", "shop", result_preview={"ok": True},
                 author="lee")
    [row] = list(csv.DictReader(io.StringIO(store.export_runs(fmt="csv"))))
    assert row["outcome"] == DONE_RUNS and row["final_sql"] == run.final_sql
    assert (row["accepted"], row["accepted_sql"], row["accepted_by"]) == ("yes", "SELECT 42", "lee")
    [line] = store.export_runs(fmt="jsonl").splitlines()
    record = json.loads(line)
    assert record["outcome"] == DONE_RUNS
    assert record["accepted"]["sql"] == "SELECT 42" and record["accepted"]["author"] == "lee"


def test_resumed_runs_are_found_from_their_parent(store):
    parent = make_run()
    child = make_run(parent_run_id=parent.run_id, resumed_from=1, started_at=1_700_000_100.0)
    store.save_run(parent)
    store.save_run(child)
    assert store.child_runs(parent.run_id) == [
        {"run_id": child.run_id, "created_at": "2023-11-14T22:15:00Z", "resumed_from": 1}]
    assert store.child_runs(child.run_id) == []


def test_blamed_step_is_named_by_number_and_agent(store):
    run = make_run()
    store.save_run(run)
    store.annotate(run.run_id, "incorrect", faulty_step=1)
    note = store.get_annotation(run.run_id)
    assert blamed_step_label(note, run) == "step 2 · Decomposer"
    assert blamed_step_label(note) == "step 2 · generate"
    assert blamed_step_label(None) is None


def test_a_version_1_file_is_migrated_with_outcomes_and_accepted_links(tmp_path):
    path = tmp_path / "old.db"
    db = sqlite_utils.Database(path)
    db["meta"].create({"key": str, "value": str}, pk="key")
    MIGRATIONS[1](db)
    db["meta"].insert({"key": "schema_version", "value": "1"})
    good, bad = make_run(question="good"), make_run(question="bad")
    bad.result = FAILING
    for run in (good, bad):
        db["runs"].insert({"run_id": run.run_id, "created_at": "2024-01-01T00:00:00Z",
                           "started_at": run.started_at, "db_name": "shop", "pipeline": "macsql",
                           "question": run.question, "status": "done",
                           "final_sql": run.final_sql, "run_json": json.dumps(run.to_dict())})
    db["accepted"].insert({"run_id": good.run_id, "db_name": "shop", "question": "good",
                           "sql": "SELECT 1", "created_at": "2024-01-02T00:00:00Z"})
    db.close()
    with Store(path) as store:
        rows = {r["question"]: r for r in store.list_runs()}
        assert rows["good"]["outcome"] == DONE_RUNS and rows["bad"]["outcome"] == DONE_FAILS
        assert rows["good"]["accepted_sql"] == "SELECT 1" and rows["bad"]["accepted"] == "no"
