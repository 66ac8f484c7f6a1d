"""Recorded `selection` runs whose candidate's repair failed on another error, resumed there.

``python bench/archive/second_repairs.py --results bench/results/seed7-selection-fresh --data
../shared/data/spider --param repair_attempts=2 --out bench/results/repairs2-seed7.json``

For every `selection` run of an evaluation folder, the first ``repair:<name>`` step whose
repaired SQL failed with an error other than the one it repaired (a column moved to the table
the hint named, which lacks the next column) is resumed with the given parameters
(:mod:`agents.evaluation.resume_recorded`): that repair asks its question again (temperature 0,
so its answer is expected as recorded; each row says whether it was), and with
``repair_attempts=2`` the still-failing SQL gets a second repair in the same conversation; the
later candidates, the vote and the selection agent run as the pipeline goes. Runs without such a
repair keep their recorded verdict. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.selection import PIPELINE  # noqa: E402


def failed_on_another_error(event) -> bool:
    """A selection repair whose repaired SQL ran and failed with a new error."""
    parsed, execution = event.parsed or {}, event.execution or {}
    return (event.step.startswith("repair:") and execution.get("ok") is False
            and bool(execution.get("error")) and execution.get("error") != parsed.get("error"))


RECORDED: dict[tuple, str | None] = {}  # (database, question) -> the recorded repair's SQL


def first_repair_failing_anew(run: Run) -> int | None:
    index = next((i for i, event in enumerate(run.events) if failed_on_another_error(event)),
                 None)
    if index is not None:
        RECORDED[(run.db_name, run.question)] = (run.events[index].parsed or {}).get("sql_after")
    return index


def repairs_after(run: Run, index: int) -> dict:
    """The resumed repairs (each one's attempt, SQL and whether it ran), and whether the first
    one answered as recorded."""
    repairs = [{"step": e.step, "attempt": (e.parsed or {}).get("attempt"),
                "sql_after": (e.parsed or {}).get("sql_after"),
                "runs": (e.execution or {}).get("ok")}
               for e in run.events[index:] if e.step.startswith("repair:")]
    recorded = RECORDED.get((run.db_name, run.question))
    return {"repairs": repairs,
            "first_repair_as_recorded": bool(repairs) and repairs[0]["sql_after"] == recorded}


def main(argv: list[str] | None = None) -> int:
    return resume_main(argv, PIPELINE, first_repair_failing_anew, repairs_after,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
