"""The Benchmark page on a small synthetic evaluation: summary, charts, wrong answers with gold
and predicted SQL, upload of a results file, and opening an answer as a run in History."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from agents.core.engine import Pipeline, Step, StepContext
from agents.evaluation.dataset import load_dataset
from agents.evaluation.harness import EvalOptions, run_evaluation
from agents.evaluation.report import run_metadata, write_report
from agents.store import Store, default_path

from app_helpers import errors

QUESTIONS = [
    ("How many birds are there?", "SELECT count(*) FROM birds", "easy"),
    ("List every bird name.", "SELECT name FROM birds", "easy"),
    ("Which birds weigh more than 2?", "SELECT name FROM birds WHERE weight > 2", "medium"),
    ("Names by weight, heaviest first.", "SELECT name FROM birds ORDER BY weight DESC", "hard"),
]


class Fixed(Pipeline):
    """Test-only pipeline: the same SQL for every question."""

    title = "Fixed"

    def __init__(self, name: str, sql: str):
        self.name, self.sql = name, sql
        self.steps = [Step("write", "SQL Writer", self.write)]

    def write(self, ctx: StepContext) -> None:
        ctx.data["sql"] = self.sql
        ctx.set_output(parsed={"sql": self.sql}, sql=self.sql)


@pytest.fixture
def evaluation(tmp_path) -> Path:
    return evaluated(tmp_path, [Fixed("names", "SELECT name FROM birds"),
                                Fixed("typo", "SELECT nme FROM birds")])


def evaluated(tmp_path, pipelines: list) -> Path:
    data = tmp_path / "data"
    (data / "database" / "aviary").mkdir(parents=True)
    conn = sqlite3.connect(data / "database" / "aviary" / "aviary.sqlite")
    conn.execute("CREATE TABLE birds (id INTEGER PRIMARY KEY, name TEXT, weight REAL)")
    conn.executemany("INSERT INTO birds (name, weight) VALUES (?, ?)",
                     [("owl", 1.5), ("swan", 9.0), ("crow", 0.5)])
    conn.commit()
    conn.close()
    items = [{"db_id": "aviary", "question": q, "query": sql, "hardness": h}
             for q, sql, h in QUESTIONS] + [
        {"db_id": "gone", "question": "Lost?", "query": "SELECT 1", "hardness": "easy"}]
    (data / "dev.json").write_text(json.dumps(items))
    ds = load_dataset(data)
    out = tmp_path / "bench-out"
    run_evaluation(ds.questions, pipelines, None, out, EvalOptions(), log=lambda line: None)
    write_report(out, run_metadata(
        model="synthetic-model",
        dataset={"name": "data", "root": str(data), "total": ds.total,
                 "executable": len(ds.questions), "missing_by_db": ds.missing_by_db()},
        sample={"mode": "stratified", "seed": 0, "limit": None, "size": 4}))
    return out


def test_one_pipeline_has_no_trade_off_chart(app, tmp_path):
    """A single point is no trade-off between accuracy and tokens: that chart is left out."""
    at = open_page(app, evaluated(tmp_path, [Fixed("names", "SELECT name FROM birds")]))
    assert errors(at) == [] and len(at.get("plotly_chart")) == 3


def open_page(app, folder: Path):
    app.switch_page("pages/benchmark.py").run()
    assert not app.exception, app.exception
    app.text_input(key="bench_path").input(str(folder)).run()
    assert not app.exception, app.exception
    return app


def test_summary_charts_and_wrong_answers(app, evaluation):
    at = open_page(app, evaluation)
    assert errors(at) == []
    summary = at.dataframe[0].value.set_index("pipeline")
    assert summary.loc["names", "EX %"] == 25.0  # only "List every bird name."
    assert summary.loc["typo", "EX %"] == 0.0
    assert summary.loc["typo", "exec errors %"] == 100.0
    assert summary.loc["names", "easy %"] == 50.0
    assert any("1 skipped (database missing: gone)" in c.value for c in at.caption)
    assert any("synthetic-model" in c.value for c in at.caption)
    assert len(at.get("plotly_chart")) == 4

    at.selectbox(key="bench_pipeline").select("names").run()
    wrong = at.dataframe[1].value
    assert sorted(wrong["id"]) == [0, 2, 3]
    assert set(wrong["outcome"]) == {"wrong result"}

    at.selectbox(key="bench_question").select(3).run()
    assert not at.exception, at.exception
    codes = [c.value for c in at.code]
    assert any("ORDER BY weight DESC" in c for c in codes)  # gold
    assert any(c.strip().endswith("FROM birds") for c in codes)  # predicted
    assert any("row order matters" in c.value for c in at.caption)
    gold_rows, pred_rows = at.dataframe[2].value, at.dataframe[3].value
    assert list(gold_rows["name"]) == ["swan", "owl", "crow"]
    assert list(pred_rows["name"]) == ["owl", "swan", "crow"]

    at.selectbox(key="bench_pipeline").select("typo").run()
    at.selectbox(key="bench_question").select(0).run()
    assert any("no such column: nme" in m.value for m in at.markdown)


def test_the_sittings_of_an_evaluation_are_listed(app, evaluation):
    """A folder evaluated in two sittings says when each ran, with which code and load."""
    report = json.loads((evaluation / "report.json").read_text())
    report["sittings"] = [
        {"started": "2026-11-26 05:00:00 UTC", "ended": "2026-11-26 05:30:00 UTC",
         "code": "abc1234", "results": 3, "ended_as": "interrupted", "load_start": 1.9,
         "load_max": 4.2, "load_end": 2.1},
        {"started": "2026-11-26 06:00:00 UTC", "ended": "2026-11-26 06:10:00 UTC",
         "code": "abc1234+changes", "results": 5, "ended_as": "done", "load_start": None,
         "load_max": 2.3, "load_end": "?"}, "not a sitting"]
    (evaluation / "report.json").write_text(json.dumps(report))
    at = open_page(app, evaluation)
    assert errors(at) == []
    assert any(e.label.startswith("Sittings: 2") for e in at.expander)
    frame = next(d.value for d in at.dataframe if "ended as" in d.value.columns)
    assert list(frame["code"]) == ["abc1234", "abc1234+changes"]
    assert list(frame["ended as"]) == ["interrupted", "done"]
    assert list(frame["highest load"]) == [4.2, 2.3]
    assert frame["load at end"].isna().tolist() == [False, True]   # unreadable: blank


def test_open_an_answer_as_a_run_in_history(app, evaluation):
    at = open_page(app, evaluation)
    at.selectbox(key="bench_pipeline").select("typo").run()
    at.selectbox(key="bench_question").select(1).run()
    at.button(key="bench_open_run").click().run()
    assert not at.exception, at.exception
    with Store(default_path()) as store:
        (saved,) = store.list_runs(source="eval")
    assert saved["pipeline"] == "typo" and saved["question"] == QUESTIONS[1][0]
    assert at.session_state["hist_open"] == saved["run_id"]
    assert any(t.value == "History & annotation" for t in at.title)
    assert any("Replay" in h.value for h in at.subheader)


def test_an_uploaded_results_file(app, evaluation):
    app.switch_page("pages/benchmark.py").run()
    app.radio(key="bench_source").set_value("Upload results.jsonl").run()
    data = (evaluation / "results.jsonl").read_bytes()
    app.file_uploader(key="bench_file").set_value(
        ("results.jsonl", data, "application/jsonl")).run()
    assert not app.exception, app.exception
    summary = app.dataframe[0].value.set_index("pipeline")
    assert summary.loc["names", "questions"] == 4


def test_a_folder_without_results_is_reported(app, tmp_path):
    app.switch_page("pages/benchmark.py").run()
    app.text_input(key="bench_path").input(str(tmp_path)).run()
    assert not app.exception
    assert any("No results.jsonl" in e for e in errors(app))


def test_an_upload_that_is_not_a_results_file(app):
    app.switch_page("pages/benchmark.py").run()
    app.radio(key="bench_source").set_value("Upload results.jsonl").run()
    app.file_uploader(key="bench_file").set_value(
        ("results.jsonl", b"\x00\xffnot json\n{\"a\": 1}\n", "application/jsonl")).run()
    assert not app.exception, app.exception
    assert any("is not an evaluation's results.jsonl: none of its 2 line(s) is an answer "
               "record" in w.value for w in app.warning)
    # an empty file is one that holds no answers yet
    app.file_uploader(key="bench_file").set_value(
        ("empty.jsonl", b"\n", "application/jsonl")).run()
    assert not app.exception, app.exception
    assert any("holds no answers yet" in w.value for w in app.warning)
