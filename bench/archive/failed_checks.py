"""Recorded DEA-SQL runs whose execution check gave up, resumed there with other parameters.

``python bench/archive/failed_checks.py --results bench/results/seed7-deasql-compact --data
../shared/data/spider --param repair_attempts=2 --out
bench/results/checks-seed7-deasql-compact.json``

DEA-SQL's last step runs the SQL and, when it fails, asks the model for a repair up to
``repair_attempts`` times (1 by default). For every ``deasql`` run in an evaluation folder whose
execution check ended on SQL that does not run, that step is resumed with the given parameters:
the SQL it checks is the recorded one, the first repair is asked again (temperature 0 in an
evaluation) and, with ``repair_attempts=2``, a second one from the error the first left. Runs
whose check passed keep their recorded verdict (:mod:`agents.evaluation.resume_recorded`). It
prints, and writes to ``--out``, EX before and after, the questions that changed, and the
resumed step's repairs, calls and seconds. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines import get_pipeline  # noqa: E402

STEP = "execution_check"


def failed_check(run: Run) -> int | None:
    """The index of the run's execution check when it ended on SQL that does not run."""
    return next((i for i, event in enumerate(run.events)
                 if event.step == STEP and (event.parsed or {}).get("ok") is False), None)


def repairs_made(run: Run, index: int) -> dict:
    """How many repairs the resumed check asked for, and the errors they were shown."""
    repairs = (run.events[index].parsed or {}).get("repairs") or []
    return {"repairs": len(repairs),
            "errors": [str(r.get("error", "")).split("\n")[0] for r in repairs]}


def main(argv: list[str] | None = None) -> int:
    return resume_main(argv, get_pipeline("deasql"), failed_check, repairs_made,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
