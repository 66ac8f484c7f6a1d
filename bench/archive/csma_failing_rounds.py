"""Recorded CSMA runs that stopped at ``max_rounds`` on SQL that fails, resumed with rounds
past it (``rounds_while_failing``).

``python bench/archive/csma_failing_rounds.py --results bench/results/seed8-csma-fresh --data
../shared/data/spider --param rounds_while_failing=2 --out
bench/results/failing-rounds-seed8-csma.json``

``rounds_while_failing`` changes only what happens where a run would stop at ``max_rounds``
with its last SQL failing to execute: it goes on to more rounds (each agent in turn extracts,
checks the failing SQL, writes anew) until SQL runs or those rounds are spent. Every step up
to the last round's generation is the recorded one, so each such run is resumed at that
generation (its model call asked again, temperature 0; the row keeps the SQL it wrote, beside
the recorded final SQL) and the rounds after it run as the pipeline goes
(:mod:`agents.evaluation.resume_recorded`). A run that ended on SQL that runs, or stopped
otherwise, keeps its recorded verdict: SQL that fails is never a right answer, so the option
can gain answers and cannot lose one. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.csma import PIPELINE  # noqa: E402


def stopped_failing(run: Run) -> int | None:
    """The index of the last round's generation where the run stopped at ``max_rounds`` on
    SQL that fails to execute, else None."""
    if run.status != "done" or not run.events:
        return None
    last = run.events[-1]
    if not last.step.startswith("generate:") or last.status != "ok":
        return None
    stop = str((last.data or {}).get("stop_reason") or "")
    if not stop.startswith("reached max_rounds") or (last.execution or {}).get("ok") is not False:
        return None
    return len(run.events) - 1


def rounds_after(run: Run, index: int) -> dict:
    """What the resumed steps did: the SQL of the resumed generation (after any rewrite; the
    row's ``sql_before`` is the recorded one), the rounds added, and why the run stopped."""
    last = run.events[-1].data or {}  # the resumed generation is at least there
    return {"generation_sql": run.events[index].sql,
            "rounds_added": max(0, (last.get("round") or 0) - int(run.params["max_rounds"])),
            "stop_reason": last.get("stop_reason")}


def main(argv: list[str] | None = None) -> int:
    return resume_main(argv, PIPELINE, stopped_failing, rounds_after,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
