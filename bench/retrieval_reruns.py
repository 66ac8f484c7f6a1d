"""Recorded runs asked on a merged file run again, from schema retrieval, where retrieval now
keeps other tables or finds other stored values for the question.

``python bench/retrieval_reruns.py --results bench/results/merged-seed7-selection --data
../shared/data/spider --out bench/results/valuecap-merged-seed7-selection.json``

The Schema Retriever ranks tables by the question's words and by the stored values the question
names (:mod:`agents.retrieval.ranking`); the ranking and the fit to the budget are deterministic
given those values, so a run whose question finds the same values and keeps the same tables as
recorded has the same prompts and, at temperature 0, the same answer. Only the runs whose
retrieval step would now keep other tables or columns, or be shown other values, are run again,
from that step, on the file the folder was asked on (its manifest's ``ask_db``); a change to how
values are found (the value index's caps, say) or to which tables are kept (the part floor) is
measured that way at the cost of the runs it touches. With ``--every-named`` each run named by
``--question`` runs again from its retrieval step whether or not retrieval changed: a change
after retrieval (a candidate's repair, say) is measured on the runs whose traces show it would
act. A resumed run keeps its recorded parameters (a parameter it predates takes its earlier
default, often off), so name with ``--param`` every default it should run with, the new rule's
too. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.evaluation.resume_recorded import _manifest, main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines import get_pipeline  # noqa: E402
from agents.retrieval import RETRIEVE, whole_part  # noqa: E402
from agents.core.step_context import RETRIEVED_FIRST, RETRIEVED_SCHEMA
from agents.retrieval.fit import NothingFits, form_cost  # noqa: E402
from agents.retrieval.stage import candidates  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from csma_rewrites import _database  # noqa: E402
from first_drafts import read_answers  # noqa: E402


def retrieval_changed(asked_on: str):
    """The finder of runs to resume: a run's retrieval step, when what retrieval keeps now on
    ``asked_on`` (the file the folder was asked on), within the recorded budget and with the
    recorded parameters, or the question's values it finds, differ from those recorded (a
    ``--param`` that changes how the schema is rendered is not seen here)."""
    def find(run: Run) -> int | None:
        index = next((i for i, e in enumerate(run.events) if e.step == RETRIEVE), None)
        db = _database(asked_on)
        if index is None or db is None:
            return None
        event = run.events[index]
        if event.status != "ok":
            return None           # it failed before choosing (no room at all): it would again
        pipeline = get_pipeline(run.pipeline)
        params = pipeline.resolve_recorded(run.params)
        cost = form_cost(pipeline.retrieval.forms(params))
        budget = int(event.inputs["budget"])
        found = candidates(db, run.question, run.evidence)
        try:
            kept_now, first = found.chosen(cost, budget, bool(params.get(whole_part.PARAM)))
        except NothingFits:
            return index          # it kept tables then and would fail now
        values = [m.condition() for m in found.grounding.matches]
        data = event.data or {}
        recorded = (event.parsed or {}).get("values") or []
        changed = (values != recorded or kept_now.selection != data.get(RETRIEVED_SCHEMA)
                   or first != (data.get(RETRIEVED_FIRST) or []))
        return index if changed else None
    return find


def any_retrieval(run: Run) -> int | None:
    """The finder of ``--every-named``: a run's retrieval step, unless it failed."""
    index = next((i for i, e in enumerate(run.events) if e.step == RETRIEVE), None)
    return index if index is not None and run.events[index].status == "ok" else None


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
    find = retrieval_changed(asked_on)
    if "--every-named" in argv:
        argv.remove("--every-named")
        if not any(a == "--question" or a.startswith("--question=") for a in argv):
            raise SystemExit("--every-named needs --question: name the runs to run again")
        find = any_retrieval
    pipeline, _ = read_answers(folder, None)
    return resume_main(argv, get_pipeline(pipeline), find, retrieval_after,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
