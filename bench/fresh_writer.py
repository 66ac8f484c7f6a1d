"""Recorded runs that ended on SQL that fails, resumed at their ending with the writer afresh.

``python bench/fresh_writer.py --pipeline deasql --results
bench/results/renamed-spider-unread-fresh-deasql --data bench/runs/spider-renamed --param
fresh_writer=true --out bench/results/fresh-writer-renamed-deasql.json``

The writer afresh (:mod:`agents.pipelines.fresh_writer`) acts only where a run's repairs end on
SQL that fails: DEA-SQL's execution check and R³'s execution step fail the run there, MAC-SQL's
Refiner gives up on its last SQL. Every other run never reaches it, so it keeps its recorded
verdict by construction. Each run whose last step is that ending, on SQL that fails, is resumed
at that step with the given parameters (:mod:`agents.evaluation.resume_recorded`): the step runs
again (DEA-SQL's repairs ask the model again, at temperature 0) and hands the failure to the
writer. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.core.events import Run  # noqa: E402
from agents.evaluation.resume_recorded import leading_option, main as resume_main  # noqa: E402
from agents.pipelines import get_pipeline  # noqa: E402

ENDINGS = {"macsql": "refiner", "deasql": "execution_check", "r3": "execute"}


def failing_ending(step: str):
    """The finder of a run's last event when it is ``step`` and the run ended on SQL that
    fails (the step failed the run, or its execution failed)."""
    def find(run: Run) -> int | None:
        if not run.events:
            return None
        last = len(run.events) - 1
        event = run.events[last]
        if event.step != step:
            return None
        failed = event.status == "error" or (event.execution or {}).get("ok") is False
        return last if failed and not (run.result or {}).get("ok") else None
    return find


def describe(run: Run, index: int) -> dict:
    """Whether the writer wrote, and whether its SQL was taken."""
    written = [e for e in run.events[index:] if e.step == "fresh_writer"]
    return {"fresh_writer": bool(written),
            "taken": bool(written and (written[-1].parsed or {}).get("taken"))}


def main(argv: list[str] | None = None) -> int:
    pipeline, rest = leading_option(argv, "--pipeline", sorted(ENDINGS), __doc__)
    return resume_main(rest, get_pipeline(pipeline), failing_ending(ENDINGS[pipeline]),
                       describe, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
