"""Recorded runs asked on a merged file run again, from schema retrieval, where retrieval now
finds other stored values for the question.

``python bench/retrieval_reruns.py --results bench/results/merged-seed7-selection --data
../shared/data/spider --out bench/results/valuecap-merged-seed7-selection.json``

The Schema Retriever ranks tables by the question's words and by the stored values the question
names (:mod:`agents.retrieval.ranking`); the ranking and the fit to the budget are deterministic
given those values, so a run whose question finds the same values as recorded keeps the same
tables, the same prompts and, at temperature 0, the same answer. Only the runs whose retrieval
step would now be shown other values are run again, from that step, on the file the folder was
asked on (its manifest's ``ask_db``); a change to how values are found (the value index's caps,
say) is measured that way at the cost of the runs it touches. Nothing is asserted: it is a
measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.evaluation.resume_recorded import _manifest, main as resume_main  # noqa: E402
from agents.events import Run  # noqa: E402
from agents.pipelines import get_pipeline  # noqa: E402
from agents.retrieval import RETRIEVE  # noqa: E402
from agents.retrieval.stage import GROUNDING  # noqa: E402
from agents.value_grounding import ground_question  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from csma_rewrites import _database  # noqa: E402
from first_drafts import read_answers  # noqa: E402


def values_changed(asked_on: str):
    """The finder of runs to resume: a run's retrieval step, when the question's values found
    now on ``asked_on`` (the file the folder was asked on) differ from those recorded."""
    def find(run: Run) -> int | None:
        index = next((i for i, e in enumerate(run.events) if e.step == RETRIEVE), None)
        db = _database(asked_on)
        if index is None or db is None:
            return None
        recorded = (run.events[index].parsed or {}).get("values") or []
        now = [m.condition() for m in ground_question(db, run.question, GROUNDING).matches]
        return index if now != recorded else None
    return find


def retrieval_after(run: Run, index: int) -> dict:
    """What the resumed run's retrieval kept and the values it ranked with."""
    parsed = run.events[index].parsed or {}
    return {"kept": [row.get("table") for row in parsed.get("kept") or []],
            "values": parsed.get("values") or []}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    folder = argv[argv.index("--results") + 1] if "--results" in argv else "."
    asked_on = (argv[argv.index("--ask-db") + 1] if "--ask-db" in argv
                else _manifest(folder).get("ask_db"))
    if not asked_on:
        raise SystemExit(f"{folder} was asked on each question's own database: retrieval runs "
                         "only on a merged file (give --ask-db for a folder without a manifest)")
    pipeline, _ = read_answers(folder, None)
    return resume_main(argv, get_pipeline(pipeline), values_changed(asked_on),
                       retrieval_after, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
