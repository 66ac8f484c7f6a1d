"""The run store: full-trace round trips, filters, annotations, accepted answers, export and
concurrent writers."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
import threading

import pytest

from agents.core.events import Run
from agents.store import ERROR_TYPES, SCHEMA_VERSION, UNANNOTATED, Store, StoreError
from run_records import make_run


@pytest.fixture
def store(tmp_path):
    with Store(tmp_path / "studio.db") as s:
        yield s


def test_run_round_trips_with_its_full_trace(store):
    run = make_run()
    assert store.save_run(run, source="cli", db_label="shop.sqlite") == run.run_id
    back = store.get_run(run.run_id)
    assert back.to_dict() == run.to_dict()
    assert back.events[1].calls[0].error == "no SQL found"
    assert back.events[1].prompt_tokens == 430 and back.llm_calls == 3
    row = store.run_info(run.run_id)
    assert row["source"] == "cli" and row["db_label"] == "shop.sqlite"
    assert (row["llm_calls"], row["prompt_tokens"], row["completion_tokens"]) == (3, 550, 59)
    assert row["seconds"] == pytest.approx(4.2) and row["result_rows"] == 1 and row["steps"] == 2
    assert store.get_run("nope") is None


def test_save_run_updates_in_place(store):
    run = make_run(status="running")
    run.finished_at = None
    store.save_run(run)
    assert store.run_info(run.run_id)["seconds"] is None
    run.status, run.finished_at, run.final_sql = "done", run.started_at + 3, "SELECT 1"
    store.save_run(run)
    rows = store.list_runs()
    assert len(rows) == 1 and rows[0]["status"] == "done" and rows[0]["final_sql"] == "SELECT 1"
    assert store.get_run(run.run_id).final_sql == "SELECT 1"


def test_save_run_rejects_unknown_source(store):
    with pytest.raises(ValueError, match="source must be one of app, cli, eval"):
        store.save_run(make_run(), source="web")


def test_list_runs_filters_and_orders(store):
    a = make_run("Top customers by revenue", started_at=1000.0)
    b = make_run("Students per major", db_name="university", pipeline="dea_sql", started_at=2000.0)
    c = make_run("Open loans", db_name="library", status="failed", sql="SELECT * FROM Loans",
                 started_at=3000.0)
    for run, source in ((a, "app"), (b, "eval"), (c, "app")):
        store.save_run(run, source=source)
    store.annotate(a.run_id, "incorrect", "join", notes="Forgot the CUSTOMERS join")
    store.annotate(b.run_id, "correct")

    ids = lambda rows: [r["run_id"] for r in rows]  # noqa: E731
    assert ids(store.list_runs()) == [c.run_id, b.run_id, a.run_id]
    assert ids(store.list_runs(db_name="university")) == [b.run_id]
    assert ids(store.list_runs(pipeline="mac_sql")) == [c.run_id, a.run_id]
    assert ids(store.list_runs(status="failed")) == [c.run_id]
    assert ids(store.list_runs(source="eval")) == [b.run_id]
    assert ids(store.list_runs(verdict="incorrect")) == [a.run_id]
    assert ids(store.list_runs(verdict=UNANNOTATED)) == [c.run_id]
    assert ids(store.list_runs(error_type="join")) == [a.run_id]
    assert ids(store.list_runs(search="customers join")) == [a.run_id]  # in the notes
    assert ids(store.list_runs(search="from loans")) == [c.run_id]  # in the SQL, any case
    assert ids(store.list_runs(search="100%")) == []  # wildcards are literal
    assert ids(store.list_runs(limit=2)) == [c.run_id, b.run_id]
    assert ids(store.list_runs(limit=2, offset=2)) == [a.run_id]
    assert store.list_runs(db_name="shop")[0]["notes"] == "Forgot the CUSTOMERS join"
    assert store.distinct_values("db_name") == ["library", "shop", "university"]
    with pytest.raises(ValueError):
        store.distinct_values("run_json")


def test_annotation_validation_messages(store):
    run = make_run()
    store.save_run(run)
    with pytest.raises(ValueError,
                       match="verdict must be one of correct, incorrect, unsure; got 'wrong'"):
        store.annotate(run.run_id, "wrong")
    with pytest.raises(ValueError, match="unknown error type 'typo'; choose one of schema_linking"):
        store.annotate(run.run_id, "incorrect", "typo")
    with pytest.raises(ValueError, match="judged correct cannot have an error type"):
        store.annotate(run.run_id, "correct", "join")
    with pytest.raises(ValueError, match="no stored run with id 'missing'"):
        store.annotate("missing", "correct")
    with pytest.raises(ValueError, match="its steps are select, generate"):
        store.annotate(run.run_id, "incorrect", "join", faulty_step="refine")
    with pytest.raises(ValueError, match="steps 0-1"):
        store.annotate(run.run_id, "incorrect", "join", faulty_step=5)
    assert store.get_annotation(run.run_id) is None


def test_latest_annotation_wins_and_history_is_kept(store):
    run = make_run()
    store.save_run(run)
    first = store.annotate(run.run_id, "unsure", notes="check later", author="ana")
    second = store.annotate(run.run_id, "incorrect", "aggregation_grouping", faulty_step=1,
                            corrected_sql="  SELECT COUNT(*) FROM orders  ", author="ben")
    third = store.annotate(run.run_id, "incorrect", "schema_linking", faulty_step="select")
    assert first < second < third
    latest = store.get_annotation(run.run_id)
    assert (latest["verdict"], latest["error_type"]) == ("incorrect", "schema_linking")
    assert (latest["faulty_step"], latest["faulty_step_index"]) == ("select", 0)
    history = store.annotation_history(run.run_id)
    assert [h["verdict"] for h in history] == ["unsure", "incorrect", "incorrect"]
    assert history[1]["faulty_step"] == "generate"
    assert history[1]["corrected_sql"] == "SELECT COUNT(*) FROM orders"
    assert history[0]["author"] == "ana" and history[0]["notes"] == "check later"
    row = store.run_info(run.run_id)
    assert row["annotation_id"] == third and row["error_type"] == "schema_linking"


def test_error_taxonomy_is_complete():
    assert list(ERROR_TYPES) == [
        "schema_linking", "join", "aggregation_grouping", "nesting_set_operation", "value_mismatch",
        "extra_missing_columns", "logic", "question_ambiguity", "syntax_execution", "other"]
    for key, et in ERROR_TYPES.items():
        assert et.key == key and et.label and len(et.description) > 20


def test_wal_mode_and_busy_timeout(store):
    assert store.journal_mode == "wal"
    assert store.db.execute("PRAGMA busy_timeout").fetchone()[0] == 5000
    raw = sqlite3.connect(store.path)
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    raw.close()


def test_everything_survives_reopening(tmp_path):
    path = tmp_path / "studio.db"
    run = make_run()
    with Store(path) as first:
        first.save_run(run, source="eval")
        first.annotate(run.run_id, "incorrect", "value_mismatch",
                       notes="'Cancelled' vs 'cancelled'")
        first.accept(run.run_id, run.question, run.final_sql, "shop", {"rows": [[93]]})
    with Store(path) as again:
        assert again.get_run(run.run_id).to_dict() == run.to_dict()
        assert again.get_annotation(run.run_id)["error_type"] == "value_mismatch"
        assert again.list_accepted()[0]["result_preview"] == {"rows": [[93]]}
        version = again.db.execute("SELECT value FROM meta WHERE key='schema_version'")
        assert version.fetchone()[0] == str(SCHEMA_VERSION)


def test_an_empty_store_file_is_never_silently_a_new_store(tmp_path):
    empty = tmp_path / "studio.db"
    empty.write_bytes(b"")
    with pytest.raises(StoreError, match=r"is empty \(0 bytes\).*restore it from a copy"):
        Store(empty)
    assert empty.read_bytes() == b""  # nothing written


def test_a_read_only_folder_gets_advice_about_the_folder_not_the_file(tmp_path):
    import os

    folder = tmp_path / "home"
    folder.mkdir()
    os.chmod(folder, 0o500)
    try:
        if os.access(folder, os.W_OK):  # running as a user no permission stops
            pytest.skip("this user can write to a read-only folder")
        with pytest.raises(StoreError, match="writable") as caught:
            Store(folder / "studio.db")
        assert "move the file away" not in str(caught.value).lower()
    finally:
        os.chmod(folder, 0o700)


def test_default_path_is_in_studio_home(isolated_studio):
    with Store() as s:
        assert s.path == isolated_studio / "studio.db"
        assert s.path.is_file()


def test_unusable_files_give_a_clear_error(tmp_path):
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="cannot be opened.*damaged: move the file away"):
        Store(junk)
    newer = tmp_path / "newer.db"
    with Store(newer) as s:
        s.db.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        s.db.conn.commit()
    with pytest.raises(StoreError, match="newer version"):
        Store(newer)


def _hammer(store: Store, run_id: str, author: str, errors: list) -> None:
    try:
        for i in range(50):
            store.annotate(run_id, "unsure", notes=f"{author} #{i}", author=author)
    except Exception as exc:  # reported to the main thread, which fails the test
        errors.append(exc)


@pytest.mark.parametrize("shared", [False, True], ids=["two-stores", "one-shared-store"])
def test_concurrent_writers_lose_nothing(tmp_path, shared):
    path = tmp_path / "studio.db"
    run = make_run()
    stores = [Store(path)]
    stores.append(stores[0] if shared else Store(path))
    stores[0].save_run(run)
    errors: list = []
    threads = [threading.Thread(target=_hammer, args=(s, run.run_id, f"user{i}", errors))
               for i, s in enumerate(stores)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    with Store(path) as check:
        history = check.annotation_history(run.run_id)
    assert len(history) == 100
    assert {h["notes"] for h in history} == {f"user{u} #{i}" for u in (0, 1) for i in range(50)}
    for s in {id(s): s for s in stores}.values():
        s.close()


def test_export_csv_and_jsonl_parse_back(store):
    a = make_run("Revenue, by \"category\"\nper year", started_at=1.0)
    b = make_run("Plain", started_at=2.0)
    store.save_run(a)
    store.save_run(b)
    store.annotate(a.run_id, "incorrect", "logic", faulty_step="generate",
                   notes="comma, quote \" newline\n")

    rows = list(csv.DictReader(io.StringIO(store.export_runs(fmt="csv"))))
    assert [r["run_id"] for r in rows] == [b.run_id, a.run_id]
    assert rows[1]["question"] == a.question and rows[1]["notes"] == "comma, quote \" newline\n"
    assert rows[1]["error_type"] == "logic" and rows[0]["verdict"] == ""

    lines = store.export_runs(fmt="jsonl").splitlines()
    records = [json.loads(line) for line in lines]
    assert Run.from_dict(records[1]["run"]).to_dict() == a.to_dict()
    assert records[1]["annotation"]["faulty_step"] == "generate"
    assert records[0]["annotation"] is None

    only_logic = store.export_runs(fmt="jsonl", error_type="logic").splitlines()
    assert len(only_logic) == 1
    shown = store.list_runs(search="plain")
    exported = csv.DictReader(io.StringIO(store.export_runs(shown)))
    assert [r["run_id"] for r in exported] == [b.run_id]
    with pytest.raises(ValueError, match="'csv' or 'jsonl'"):
        store.export_runs(fmt="xlsx")


def test_accepted_answers(store):
    run = make_run()
    store.save_run(run)
    preview = {"columns": ["n"], "rows": [[93]], "row_count": 1}
    first = store.accept(run.run_id, run.question, run.final_sql, "shop", preview)
    assert store.accept(run.run_id, f" {run.question} ", run.final_sql, "shop", preview) == first
    store.accept(None, "How many students?", "SELECT COUNT(*) FROM students", "university")
    assert [r["db_name"] for r in store.list_accepted()] == ["university", "shop"]
    shop = store.list_accepted("shop")
    assert len(shop) == 1 and shop[0]["result_preview"] == preview
    assert shop[0]["sql"] == run.final_sql
    with pytest.raises(ValueError, match="needs a question, its SQL"):
        store.accept(None, "  ", "SELECT 1", "shop")
    assert store.delete_run(run.run_id) is True
    assert store.get_run(run.run_id) is None and store.annotation_history(run.run_id) == []
    assert len(store.list_accepted("shop")) == 1  # curated answers outlive the run
    assert store.remove_accepted(first) is True and store.list_accepted("shop") == []
    assert store.delete_run(run.run_id) is False


def test_delete_run_removes_its_annotations(store):
    run = make_run()
    store.save_run(run)
    store.annotate(run.run_id, "correct")
    assert store.delete_run(run.run_id)
    assert store.list_runs() == [] and store.get_annotation(run.run_id) is None


def test_the_runs_csv_never_starts_a_spreadsheet_formula(store):
    store.save_run(make_run('=HYPERLINK("http://x.example","click")', started_at=1.0))
    [row] = list(csv.DictReader(io.StringIO(store.export_runs(fmt="csv"))))
    assert row["question"] == '\'=HYPERLINK("http://x.example","click")'
    [line] = store.export_runs(fmt="jsonl").splitlines()  # JSONL keeps the text as it is
    assert json.loads(line)["run"]["question"].startswith("=HYPERLINK")


def test_csv_cells_never_start_a_spreadsheet_formula():
    import pandas as pd

    from agents.store.export import safe_cell
    from ui.widgets.result import csv_bytes

    assert [safe_cell(v) for v in ("=HYPERLINK(\"x\")", "+1", "-cmd", "@SUM(A1)", "\tx", "ok",
                                   -3, 2.5, None)] == [
        "'=HYPERLINK(\"x\")", "'+1", "'-cmd", "'@SUM(A1)", "'\tx", "ok", -3, 2.5, None]
    frame = pd.DataFrame({"=name": ["=1+1", "Ada", None], "n": [-1, 2, 3]})
    assert csv_bytes(frame).decode().splitlines() == ["'=name,n", "'=1+1,-1", "Ada,2", ",3"]


def test_the_advice_names_the_cause_a_person_can_fix():
    import sqlite3
    from pathlib import Path

    from agents.store.connection import _advice

    path = Path("/home/ana/.text2sql-studio/studio.db")
    errors = [_advice(path, sqlite3.OperationalError("attempt to write a readonly database")),
              _advice(path, sqlite3.OperationalError("database or disk is full")),
              _advice(path, sqlite3.DatabaseError("file is not a database"))]
    assert [e.kind for e in errors] == ["unwritable", "unwritable", "damaged"]
    readonly, full, damaged = (str(e) for e in errors)
    assert "writable" in readonly and "move the file" not in readonly.lower()
    assert "Free some disk space" in full and "move the file" not in full.lower()
    assert "damaged: move the file away" in damaged
