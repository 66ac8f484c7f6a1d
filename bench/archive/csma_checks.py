"""Recorded CSMA runs resumed at their first check of SQL that runs, with another check method.

``python bench/archive/csma_checks.py --results bench/results/seed7-csma-compact --data
../shared/data/spider --param check_method=agreement --out bench/results/checks-seed7-csma.json``

``check_method=agreement`` changes only how an agent checks a query that runs (it writes its
own SQL and compares the results, where the paper's check asks the model for a verdict), so
every step before the first ``check:<agent>`` step whose checked SQL ran is the recorded one:
each such run is resumed there with the given parameters
(:mod:`agents.evaluation.resume_recorded`), and the rounds after it run as the pipeline goes.
Runs without such a check (every checked query failed, or no query was ever checked) keep
their recorded verdict. Each row lists the resumed checks: their method, verdict, and whether
the checker's own SQL returned the same result. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.csma import PIPELINE  # noqa: E402


def first_check_of_running_sql(run: Run) -> int | None:
    """The first check step whose checked SQL ran: where an agreement check would differ."""
    return next((i for i, event in enumerate(run.events)
                 if event.step.startswith("check:") and event.status == "ok"
                 and (event.execution or {}).get("ok") is True), None)


def checks_after(run: Run, index: int) -> dict:
    """The resumed checks: method, verdict, whether the checker's own SQL agreed."""
    checks = [{"step": e.step, "method": (e.parsed or {}).get("method"),
               "verdict": (e.parsed or {}).get("verdict"),
               "agrees": (e.parsed or {}).get("agrees")}
              for e in run.events[index:] if e.step.startswith("check:")]
    return {"checks": checks, "stop_reason": (run.events[-1].data or {}).get("stop_reason")
            if run.events else None}


def main(argv: list[str] | None = None) -> int:
    return resume_main(argv, PIPELINE, first_check_of_running_sql, checks_after,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
