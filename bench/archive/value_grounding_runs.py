"""Recorded runs of a paper pipeline run again, from their first step, with ``value_grounding``
on.

``python bench/archive/value_grounding_runs.py --pipeline macsql --results
bench/results/seed8-macsql-fresh --data ../shared/data/spider --param value_grounding=true
--out bench/results/grounding-seed8-macsql.json``

Value grounding (:mod:`agents.retrieval.grounding_step`) looks the question's words up among the
stored values before the writers write and adds what it finds to their prompts beside the
evidence. Where it finds nothing the prompts are the ones recorded, byte for byte, so only the
runs of questions with a match are run again, from their first step (after schema retrieval,
which Spider's databases never need; a run is then the run the option makes). The lookup is the
pipeline's own, on the database the question was asked on, searching the whole database (a run
whose MAC-SQL Selector prunes it, with ``use_selector=auto``, searches only what the Selector
kept, so pass today's ``use_selector`` too for an older folder). Pass the folder's other
changed defaults with ``--param`` as well. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.evaluation.resume_recorded import leading_option, main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines import get_pipeline  # noqa: E402
from agents.retrieval import RETRIEVE  # noqa: E402
from agents.retrieval.value_grounding import ground_question

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for csma_rewrites
from csma_rewrites import _database  # noqa: E402

PIPELINES = ["macsql"]


def first_step_if_grounded(run: Run) -> int | None:
    """The run's first step after retrieval, when its question has a value match."""
    db = _database(run.db_path) if run.db_path else None
    if db is None or not ground_question(db, run.question).matches:
        return None
    return next((i for i, e in enumerate(run.events) if e.step != RETRIEVE), None)


def grounding_after(run: Run, index: int) -> dict:
    """The values the resumed run's writers were shown."""
    ground = next((e for e in run.events[index:] if e.step == "ground"), None)
    matches = (ground.parsed or {}).get("matches", []) if ground else []
    return {"matches": [f"{m['table']}.{m['column']} = '{m['value']}'" for m in matches]}


def main(argv: list[str] | None = None) -> int:
    name, argv = leading_option(argv, "--pipeline", PIPELINES, __doc__.split("\n\n")[0])
    return resume_main(argv, get_pipeline(name), first_step_if_grounded, grounding_after,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
