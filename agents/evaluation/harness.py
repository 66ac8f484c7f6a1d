"""Runs pipelines over evaluation questions, scores each answer and writes it down at once.

Work items are (question, pipeline) pairs, interleaved question by question so that an
interrupted evaluation still compares the pipelines on the same questions. Each finished item is
appended to ``results.jsonl`` before the next is reported, and items already in that file are
skipped, so re-running with the same output folder continues where it stopped.

Scoring executes the gold and the predicted SQL through the project's read-only execution layer
with a high row cap (a capped result is flagged in the record, never silently compared) and
applies :func:`~agents.evaluation.metric.result_eq`.

A model endpoint that stops answering would otherwise turn every remaining question into a
"wrong" line that a resume would never retry; so runs that failed on a model call are held back,
written only once a later item succeeds, and a streak of them aborts the evaluation unwritten.
"""

from __future__ import annotations

import threading
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from agents.db.database import open_database
from agents.core.outcome import run_outcome
from agents.core.engine import ExecLimits, Pipeline, run_to_end, start_run
from agents.core.events import Run
from agents.runs.draft import draft_seconds
from .dataset import Question
from .metric import order_matters, result_eq, scoring_sql
from .records import RESULTS_FILE, ResultsFile, record_key, utc_now

PREVIEW_ROWS = 20
MODEL_FAILURE_PREFIX = "model call failed"


class EvaluationAborted(RuntimeError):
    """The evaluation stopped early (e.g. the model endpoint keeps failing); resumable."""


@dataclass
class EvalOptions:
    exec_timeout: float = 30.0  # seconds per scoring query (gold or predicted)
    max_rows: int = 100_000  # row cap for scoring; a capped result is flagged
    keep_distinct: bool = False  # official default: DISTINCT is removed before comparing
    workers: int = 1
    params: dict[str, dict] = field(default_factory=dict)  # pipeline name -> parameter overrides
    step_limits: ExecLimits = field(default_factory=ExecLimits)  # for the pipelines' own queries
    max_model_failures: int = 3  # consecutive model-call failures that abort the evaluation
    # Ask every question against this database instead of its own (e.g. all of Spider's dev
    # databases merged into one, bench/merge_spider.py); the gold SQL still runs on its own.
    ask_db: str | None = None
    # the answerability check before a run (agents.answer.opening): its "no" ends the run
    # without SQL, which is scored wrong; recorded in the manifest as ``answer_checks``
    answer_checks: bool = True


@dataclass
class EvalOutcome:
    written: int = 0  # new records this time
    already_done: int = 0  # items found in the results file and skipped
    total: int = 0  # items in this evaluation (questions x pipelines)
    held_back: int = 0  # model-call failures not written (retried on the next run)
    repaired: bool = False  # a torn last line was cut off


class DatabasePool:
    """One read-only handle per (thread, database file): handles are never shared by threads."""

    def __init__(self, opener: Callable[[str], Any] | None = None):
        if opener is None:
            opener = open_database
        self._open = opener
        self._local = threading.local()

    def get(self, path: str):
        handles = self._local.__dict__.setdefault("handles", {})
        if path not in handles:
            handles[path] = self._open(path)
        return handles[path]


def score(db, gold_sql: str, pred_sql: str | None, options: EvalOptions,
          pred_db=None) -> dict:
    """Execute gold and prediction and compare them; the verdict plus result previews.
    The prediction runs on ``pred_db`` when given (the database the question was asked on)."""
    gold = db.execute(scoring_sql(gold_sql, options.keep_distinct),
                      timeout=options.exec_timeout, max_rows=options.max_rows)
    verdict: dict[str, Any] = {"order_matters": order_matters(gold_sql),
                               "gold": gold.preview(rows=PREVIEW_ROWS)}
    if not gold.ok:
        verdict.update(correct=False, gold_error=gold.error, pred=None, pred_error=None,
                       pred_error_class=None, truncated=gold.truncated)
        return verdict
    if not pred_sql or not pred_sql.strip():
        verdict.update(correct=False, pred=None, pred_error="the pipeline produced no SQL",
                       pred_error_class="NoSQL", truncated=gold.truncated)
        return verdict
    pred = (pred_db or db).execute(scoring_sql(pred_sql, options.keep_distinct),
                      timeout=options.exec_timeout, max_rows=options.max_rows)
    verdict["pred"] = pred.preview(rows=PREVIEW_ROWS)
    verdict["truncated"] = bool(gold.truncated or pred.truncated)
    if not pred.ok:
        verdict.update(correct=False, pred_error=pred.error,
                       pred_error_class=pred.error_class or "Error")
        return verdict
    verdict.update(correct=result_eq(gold.rows, pred.rows, verdict["order_matters"]),
                   pred_error=None, pred_error_class=None)
    return verdict


def evaluate_one(question: Question, pipeline: Pipeline, llm, pool: DatabasePool,
                 options: EvalOptions, services: dict | None = None,
                 cancel: threading.Event | None = None) -> tuple[dict, Run | None]:
    """Run one pipeline on one question and build its results line (and the run, if any)."""
    base = {**question.to_dict(), "pipeline": pipeline.name}
    try:
        db = pool.get(question.db_path)
        asked = pool.get(options.ask_db) if options.ask_db else db
    except Exception as exc:  # a corrupt or unreadable database file fails this item only
        return {**base, "correct": False, "status": "failed", "pred_sql": None,
                "error": f"database could not be opened: {exc}",
                "pred_error": "database could not be opened", "pred_error_class": "Database",
                "metrics": _metrics(None), "finished_at": utc_now()}, None
    run = run_to_end(start_run(pipeline, question.question, asked, llm, evidence=question.evidence,
                               params=options.params.get(pipeline.name),
                               limits=options.step_limits, cancel=cancel, services=services,
                               answer_checks=options.answer_checks))
    verdict = score(db, question.gold_sql, run.final_sql, options, pred_db=asked)
    review = run.review or {}
    record = {**base, "pred_sql": run.final_sql, **verdict, "status": run.status,
              "outcome": run_outcome(run), "answerable": review.get("answerable", True),
              "doubtful": bool(review.get("doubt")),
              "error": run.error, "model": run.model, "metrics": _metrics(run),
              "finished_at": utc_now(), "run": run.to_dict()}
    return record, run


def model_failed(run: Run | None) -> bool:
    """True when the run ended because a model call failed (endpoint down, timeout, ...)."""
    if run is None or run.status != "failed" or not run.events:
        return False
    last = run.events[-1]
    return last.status == "error" and (last.error or "").startswith(MODEL_FAILURE_PREFIX)


def run_evaluation(questions: list[Question], pipelines: list[Pipeline], llm, out_dir: str | Path,
                   options: EvalOptions | None = None, *, services: dict | None = None,
                   open_db: Callable[[str], Any] | None = None,
                   on_record: Callable[[dict, Run | None], None] | None = None,
                   log: Callable[[str], None] | None = None) -> EvalOutcome:
    """Evaluate every (question, pipeline) pair not yet in ``out_dir/results.jsonl``.

    ``on_record(record, run)`` is called after each line is written (the CLI saves runs to the
    store there). Raises :class:`EvaluationAborted` after ``max_model_failures`` consecutive
    model-call failures; an exception from ``on_record`` or a KeyboardInterrupt stops the
    evaluation too -- in every case what was written stays, and a re-run continues.
    """
    options = options or EvalOptions()
    log = log or _print_now
    results = ResultsFile(Path(out_dir) / RESULTS_FILE)
    outcome = EvalOutcome(repaired=results.repair())
    done = {record_key(r) for r in results.read()}
    todo = []
    for q in questions:
        for p in pipelines:
            if (q.qid, p.name) in done:
                outcome.already_done += 1
            else:
                todo.append((q, p))
    outcome.total = outcome.already_done + len(todo)
    if outcome.repaired:
        log("note: the last line of the results file was incomplete and has been removed")
    if outcome.already_done:
        log(f"resuming: {outcome.already_done} of {outcome.total} items already done")

    pool = DatabasePool(open_db)
    cancel = threading.Event()
    writer = _Writer(results, outcome, options.max_model_failures, on_record, log)

    def work(item):
        q, p = item
        return evaluate_one(q, p, llm, pool, options, services, cancel)

    try:
        if options.workers <= 1:
            for item in todo:
                writer.take(item, *work(item))
        else:
            with ThreadPoolExecutor(max_workers=options.workers,
                                    thread_name_prefix="eval") as executor:
                pending = {executor.submit(work, item): item for item in todo}
                try:
                    while pending:
                        finished, _ = wait(pending, return_when=FIRST_COMPLETED)
                        for future in finished:
                            writer.take(pending.pop(future), *future.result())
                finally:
                    cancel.set()
                    executor.shutdown(wait=True, cancel_futures=True)
        writer.flush_held()
    finally:
        cancel.set()
        outcome.held_back = len(writer.held)
    return outcome


class _Writer:
    """Writes finished items in the calling thread and tracks the model-failure streak."""

    def __init__(self, results: ResultsFile, outcome: EvalOutcome, max_failures: int,
                 on_record, log):
        self.results = results
        self.outcome = outcome
        self.max_failures = max(1, max_failures)
        self.on_record = on_record
        self.log = log
        self.held: list[tuple[dict, Run | None]] = []

    def take(self, item, record: dict, run: Run | None) -> None:
        if run is not None and run.status == "stopped":
            return  # cancelled mid-way by an abort: retried on the next run
        if model_failed(run):
            self.held.append((record, run))
            self.log(f"model call failed on question {record['question_id']} "
                     f"({record['pipeline']}): {run.error}")
            if len(self.held) >= self.max_failures:
                raise EvaluationAborted(
                    f"the model failed {len(self.held)} times in a row (last: {run.error}); "
                    "nothing was recorded for these questions -- fix the model endpoint and "
                    "re-run with the same --out to continue")
            return
        self.flush_held()
        self._write(record, run)

    def flush_held(self) -> None:
        held, self.held = self.held, []
        for record, run in held:
            self._write(record, run)

    def _write(self, record: dict, run: Run | None) -> None:
        self.results.append(record)
        self.outcome.written += 1
        position = self.outcome.already_done + self.outcome.written
        verdict = "correct" if record.get("correct") else (
            "no SQL" if record.get("pred_error_class") == "NoSQL" else
            "error" if record.get("pred_error") else "wrong")
        seconds = record.get("metrics", {}).get("seconds") or 0.0
        self.log(f"[{position}/{self.outcome.total}] {record['pipeline']} "
                 f"q{record['question_id']} ({record.get('hardness') or '-'}): {verdict} "
                 f"in {seconds:.1f}s")
        if self.on_record is not None:
            self.on_record(record, run)


def _print_now(line: str) -> None:
    """Progress lines reach a log file or a pipe at once, not when a buffer fills."""
    print(line, flush=True)


def _metrics(run: Run | None) -> dict:
    if run is None:
        return {"llm_calls": 0, "cached_calls": 0, "prompt_tokens": 0, "completion_tokens": 0,
                "llm_seconds": 0.0, "seconds": 0.0, "steps": 0}
    totals = run.totals()
    totals["cached_calls"] = sum(1 for e in run.events for c in e.calls if c.cached)
    draft = draft_seconds(run)
    if draft is not None:  # the time to the draft answer (candidate selection)
        totals["draft_seconds"] = round(draft, 3)
    return totals

