"""The evaluation harness: gold-as-prediction on Spider dev, resume after an interruption,
model-failure handling, parallel workers and the report (the ``eval`` command:
``test_eval_command.py``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agents.core.engine import Pipeline, Step, StepContext
from agents.evaluation.dataset import load_dataset, sample_questions
from agents.evaluation.gold import GoldPipeline
from agents.evaluation.harness import EvalOptions, EvaluationAborted, run_evaluation
from agents.evaluation.records import RESULTS_FILE, record_to_run
from agents.evaluation.report import build_report, render_markdown, run_metadata, write_report
from tiny_dataset import PEOPLE, build_tiny, raw_lines, read

# The Spider dev set lives in the shared folder beside the checkout (never in the repository).
SPIDER = Path(os.environ.get("SPIDER_DIR")
              or Path(__file__).resolve().parents[2] / "shared" / "data" / "spider")
needs_spider = pytest.mark.skipif(not (SPIDER / "dev.json").is_file(),
                                  reason="the Spider dev set is not on this machine")
QUIET = {"log": lambda line: None}


# -- test-only pipelines (never registered) ------------------------------------------------------
class FixedPipeline(Pipeline):
    """Always answers with the same SQL (wrong for most questions, or not even valid)."""

    title = "Fixed answer"

    def __init__(self, name: str, sql: str | None):
        self.name = name
        self.sql = sql
        self.steps = [Step("answer", "Fixed", self.answer)]

    def answer(self, ctx: StepContext) -> None:
        ctx.data["sql"] = self.sql


class AskingPipeline(Pipeline):
    """One model call whose answer is the SQL (to exercise model failures)."""

    name = "asking"
    title = "Ask the model"
    steps = [Step("ask", "Writer", lambda ctx: ctx.data.__setitem__("sql", ctx.ask(
        [{"role": "user", "content": f"SQL for: {ctx.question}"}]).strip()))]


# -- a tiny dataset ------------------------------------------------------------------------------
@pytest.fixture
def tiny(tmp_path) -> Path:
    return build_tiny(tmp_path / "tiny")


# -- gold as prediction ----------------------------------------------------------------------------
@needs_spider
def test_gold_as_prediction_scores_100_percent_on_spider_dev(tmp_path):
    """All 972 executable dev questions (its speed is a benchmark figure, bench/README.md)."""
    ds = load_dataset(SPIDER)
    outcome = run_evaluation(ds.questions, [GoldPipeline(ds.questions)], None, tmp_path,
                             EvalOptions(), **QUIET)
    records = read(tmp_path)
    assert outcome.written == len(records) == 972
    wrong = [(r["question_id"], r["gold_sql"], r.get("pred_error")) for r in records
             if not r["correct"]]
    assert wrong == []
    assert not any(r["truncated"] for r in records)
    summary = build_report(records, {"dataset": {"missing_by_db": ds.missing_by_db()}})
    assert summary["pipelines"]["gold"]["ex"] == 100.0


# -- verdicts, previews and traces -----------------------------------------------------------------
def test_records_hold_verdict_previews_and_the_full_trace(tiny, tmp_path):
    ds = load_dataset(tiny)
    pipelines = [GoldPipeline(ds.questions),
                 FixedPipeline("names", "SELECT name FROM people"),
                 FixedPipeline("broken", "SELECT nope FROM people"),
                 FixedPipeline("silent", None)]
    run_evaluation(ds.questions, pipelines, None, tmp_path, EvalOptions(), **QUIET)
    records = {(r["question_id"], r["pipeline"]): r for r in read(tmp_path)}
    assert len(records) == 6 * 4

    ok = records[(1, "names")]
    assert ok["correct"] and ok["pred_sql"] == "SELECT name FROM people"
    assert ok["gold"]["rows"] == [[n] for _, n, _, _ in PEOPLE]
    assert ok["pred"]["row_count"] == 5
    assert ok["run"]["pipeline"] == "names" and ok["run"]["events"][0]["step"] == "answer"

    # ORDER BY in the gold query: the same names in another order are wrong
    assert not records[(2, "names")]["correct"]
    assert records[(2, "gold")]["order_matters"] is True

    # DISTINCT is removed before comparing, as the official script does by default
    assert records[(3, "gold")]["correct"]

    broken = records[(0, "broken")]
    assert not broken["correct"] and broken["pred_error_class"] == "OperationalError"
    assert "nope" in broken["pred_error"]
    silent = records[(0, "silent")]
    assert silent["pred_error_class"] == "NoSQL" and silent["pred"] is None

    run = record_to_run(ok)
    assert run.final_sql == "SELECT name FROM people" and run.events[0].agent == "Fixed"


def test_a_capped_result_is_flagged(tiny, tmp_path):
    ds = load_dataset(tiny)
    run_evaluation(ds.questions[1:2], [GoldPipeline(ds.questions)], None, tmp_path,
                   EvalOptions(max_rows=3), **QUIET)
    (record,) = read(tmp_path)
    assert record["truncated"] is True


# -- resume ----------------------------------------------------------------------------------------
class Interrupt(Exception):
    pass


def test_resume_after_an_interruption_finishes_without_duplicates(tiny, tmp_path):
    ds = load_dataset(tiny)
    pipelines = [GoldPipeline(ds.questions), FixedPipeline("names", "SELECT name FROM people")]
    seen = []

    def stop_after_five(record, run):
        seen.append(record)
        if len(seen) == 5:
            raise Interrupt()

    with pytest.raises(Interrupt):
        run_evaluation(ds.questions, pipelines, None, tmp_path, EvalOptions(),
                       on_record=stop_after_five, **QUIET)
    assert len(raw_lines(tmp_path)) == 5
    # the items were interleaved question by question
    assert [(r["question_id"], r["pipeline"]) for r in raw_lines(tmp_path)][:4] == [
        (0, "gold"), (0, "names"), (1, "gold"), (1, "names")]

    outcome = run_evaluation(ds.questions, pipelines, None, tmp_path, EvalOptions(), **QUIET)
    assert (outcome.already_done, outcome.written, outcome.total) == (5, 7, 12)
    keys = [(r["question_id"], r["pipeline"]) for r in raw_lines(tmp_path)]
    assert len(keys) == len(set(keys)) == 12

    again = run_evaluation(ds.questions, pipelines, None, tmp_path, EvalOptions(), **QUIET)
    assert again.written == 0 and len(raw_lines(tmp_path)) == 12


def test_a_torn_last_line_is_cut_off_and_redone(tiny, tmp_path):
    ds = load_dataset(tiny)
    gold = GoldPipeline(ds.questions)
    run_evaluation(ds.questions[:3], [gold], None, tmp_path, EvalOptions(), **QUIET)
    path = tmp_path / RESULTS_FILE
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])  # died mid-write

    outcome = run_evaluation(ds.questions, [gold], None, tmp_path, EvalOptions(), **QUIET)
    assert outcome.repaired and outcome.already_done == 2 and outcome.written == 4
    records = raw_lines(tmp_path)  # every line parses again
    assert sorted(r["question_id"] for r in records) == list(range(6))


# -- model failures --------------------------------------------------------------------------------
def test_a_failing_model_aborts_unrecorded_and_a_rerun_retries(tiny, tmp_path, llm, scripted_llm):
    ds = load_dataset(tiny)
    scripted_llm.when(lambda req: True, {"status": 500, "error": "server on fire"})
    with pytest.raises(EvaluationAborted, match="failed 3 times in a row"):
        run_evaluation(ds.questions, [AskingPipeline()], llm, tmp_path, EvalOptions(), **QUIET)
    assert read(tmp_path) == []

    scripted_llm.clear()
    scripted_llm.when(lambda req: True, "SELECT count(*) FROM people")
    outcome = run_evaluation(ds.questions, [AskingPipeline()], llm, tmp_path, EvalOptions(),
                             **QUIET)
    records = read(tmp_path)
    assert outcome.written == 6 and len(records) == 6
    assert [r["question_id"] for r in records if r["correct"]] == [0]
    assert all(r["metrics"]["llm_calls"] == 1 and r["metrics"]["prompt_tokens"] > 0
               for r in records)


def test_a_single_model_failure_is_recorded_as_a_failed_run(tiny, tmp_path, llm, scripted_llm):
    ds = load_dataset(tiny)
    scripted_llm.when("How many", {"status": 400, "error": "prompt too long"})
    scripted_llm.when(lambda req: True, "SELECT name FROM people")
    run_evaluation(ds.questions, [AskingPipeline()], llm, tmp_path, EvalOptions(), **QUIET)
    records = {r["question_id"]: r for r in read(tmp_path)}
    assert len(records) == 6
    assert records[0]["status"] == "failed" and not records[0]["correct"]
    assert records[1]["correct"]


def test_services_reach_the_pipelines(tiny, tmp_path):
    class UsesExamples(Pipeline):
        name = "shots"
        steps = [Step("pick", "Example picker", lambda ctx: ctx.data.__setitem__(
            "sql", ctx.services["examples"][ctx.question]))]

    ds = load_dataset(tiny)
    bank = {q.question: q.gold_sql for q in ds.questions}
    run_evaluation(ds.questions, [UsesExamples()], None, tmp_path, EvalOptions(),
                   services={"examples": bank}, **QUIET)
    assert all(r["correct"] for r in read(tmp_path))


# -- parallel workers ------------------------------------------------------------------------------
def test_parallel_workers_reach_the_same_verdicts(tiny, tmp_path, llm, scripted_llm):
    ds = load_dataset(tiny)
    scripted_llm.when(lambda req: True, {"content": "SELECT name FROM people", "delay": 0.05})
    pipelines = [GoldPipeline(ds.questions), AskingPipeline()]
    serial, parallel = tmp_path / "serial", tmp_path / "parallel"
    run_evaluation(ds.questions, pipelines, llm, serial, EvalOptions(workers=1), **QUIET)
    run_evaluation(ds.questions, pipelines, llm, parallel, EvalOptions(workers=4), **QUIET)
    verdicts = lambda out: sorted((r["question_id"], r["pipeline"], r["correct"])  # noqa: E731
                                  for r in read(out))
    assert verdicts(serial) == verdicts(parallel)
    assert len(verdicts(parallel)) == 12


# -- report ----------------------------------------------------------------------------------------
def test_report_has_the_hardness_table_costs_and_the_skipped_count(tiny, tmp_path):
    ds = load_dataset(tiny)
    pipelines = [GoldPipeline(ds.questions), FixedPipeline("names", "SELECT name FROM people"),
                 FixedPipeline("broken", "SELECT nope")]
    questions = sample_questions(ds.questions, None)
    run_evaluation(questions, pipelines, None, tmp_path, EvalOptions(), **QUIET)
    meta = run_metadata(
        model="test-model",
        dataset={"name": ds.name, "root": ds.root, "total": ds.total,
                 "executable": len(ds.questions), "missing_by_db": ds.missing_by_db()},
        sample={"mode": "stratified", "seed": 0, "limit": None, "size": len(questions)},
        settings={"workers": 1})
    report = write_report(tmp_path, meta)

    gold, names, broken = (report["pipelines"][n] for n in ("gold", "names", "broken"))
    assert gold["ex"] == 100.0 and gold["n"] == 6
    assert names["correct"] == 1 and names["by_hardness"]["easy"] == {
        "n": 2, "correct": 1, "ex": 50.0}
    assert list(names["by_hardness"]) == ["easy", "medium", "hard", "extra"]
    assert broken["exec_error_rate"] == 100.0 and broken["ex"] == 0.0
    assert gold["llm_calls_per_q"] == 0 and gold["seconds_p95"] >= gold["seconds_p50"] >= 0
    assert report["machine"]["cpu_count"] and report["machine"]["python"]
    assert report["questions_evaluated"] == 6

    md = (tmp_path / "report.md").read_text()
    assert md == render_markdown(json.loads((tmp_path / "report.json").read_text()))
    assert "| pipeline | n | EX | easy | medium | hard | extra |" in md
    assert "| names | 6 | 16.7 | 50.0 (1/2) |" in md
    assert "1 skipped because their database is missing (lost: 1)" in md
    assert "test-model" in md and "CPUs" in md


def test_report_compares_pipelines_on_their_common_questions():
    from agents.evaluation.report import build_report, render_markdown

    def rec(qid, pipeline, correct):
        return {"question_id": qid, "pipeline": pipeline, "hardness": "easy",
                "correct": correct, "metrics": {"seconds": 2.0, "llm_seconds": 1.9,
                                                "llm_calls": 1}}

    records = [rec(1, "a", True), rec(2, "a", True), rec(3, "a", False),
               rec(1, "b", False)]  # b was stopped after one question
    report = build_report(records, {})
    assert report["pipelines"]["a"]["n"] == 3
    assert report["common"]["questions"] == 1
    assert report["common"]["pipelines"]["a"]["ex"] == 100.0
    assert report["common"]["pipelines"]["b"]["ex"] == 0.0
    text = render_markdown(report)
    assert "on the 1 questions every pipeline has answered" in text
    assert "5.00%" in text  # time outside the model, to two decimals

    same = build_report([rec(1, "a", True), rec(1, "b", True)], {})
    assert "common" not in same
