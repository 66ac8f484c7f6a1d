"""Recorded CSMA runs resumed where an agent's SQL failed on a column name that one clear change
would make run, with ``name_rewrite`` on.

``python bench/csma_rewrites.py --results bench/results/seed8-csma-agreement --data
../shared/data/spider --param name_rewrite=true --out bench/results/rewrites-seed8-csma.json``

``name_rewrite`` changes only what an agent's SQL is when it fails on a column name and a
rewrite within the agent's extracted tables runs (:mod:`agents.rules.name_rewrite`): a round's
``generate:<agent>`` SQL, or the agent's own SQL in an agreement ``check:<agent>``. Every step
before the first such step is the recorded one, so each run is resumed there (its model call is
asked again, temperature 0) and the rounds after it run as the pipeline goes
(:mod:`agents.evaluation.resume_recorded`). Whether a rewrite exists is decided from the
recorded SQL, error and extracted tables on the run's own database file, by the step's own
:func:`~agents.pipelines.csma.context.rewrite_within`; runs without such a step keep their recorded verdict. Each row lists the resumed steps'
rewrites. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.db.database import DatabaseError, open_database
from agents.rules.error_hints import NO_SUCH_COLUMN
from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.csma import PIPELINE  # noqa: E402
from agents.pipelines.csma.context import rewrite_within  # noqa: E402

_OPEN: dict[str, object] = {}


def failing_sql(event) -> tuple[str, str] | None:
    """The agent's SQL of a generate or check step that failed on a column name, with its
    error: a round's SQL from the step's execution, a check's own SQL from its parsed output."""
    parsed = event.parsed or {}
    if event.step.startswith("generate:"):
        execution = event.execution or {}
        if execution.get("ok") is False and NO_SUCH_COLUMN.search(execution.get("error") or ""):
            return event.sql or parsed.get("sql") or "", execution["error"]
    elif event.step.startswith("check:") and parsed.get("own_sql"):
        text = str(parsed.get("own_execution") or "")
        if text.startswith("failed: ") and NO_SUCH_COLUMN.search(text):
            return parsed["own_sql"], text[len("failed: "):].split("\n")[0]
    return None


def _database(path: str):
    if path not in _OPEN:
        try:
            _OPEN[path] = open_database(path)
        except DatabaseError:
            _OPEN[path] = None
    return _OPEN[path]


def first_rewritable_step(run: Run) -> int | None:
    """The first step whose agent's SQL failed on a column name that a rewrite within the
    agent's extracted tables makes run: where ``name_rewrite`` changes the run."""
    db = _database(run.db_path) if run.db_path else None
    if db is None:
        return None
    for index, event in enumerate(run.events):
        if event.status != "ok":
            continue
        found = failing_sql(event)
        if found is None:
            continue
        sql, error = found
        extracted = (event.data or {}).get("extracted") or {}
        if rewrite_within(db, db.schema, error, sql, extracted) is not None:
            return index
    return None


def rewrites_after(run: Run, index: int) -> dict:
    """The resumed steps' rewrites, and why the run stopped."""
    rewrites = []
    for event in run.events[index:]:
        parsed = event.parsed or {}
        change = parsed.get("rewrite") or parsed.get("own_rewrite")
        if change:
            rewrites.append({"step": event.step, "rewrite": change})
    return {"rewrites": rewrites,
            "stop_reason": (run.events[-1].data or {}).get("stop_reason") if run.events else None}


def main(argv: list[str] | None = None) -> int:
    return resume_main(argv, PIPELINE, first_rewritable_step, rewrites_after,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
