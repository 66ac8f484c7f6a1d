"""Recorded CSMA runs resumed at their first check of SQL whose subquery selects an outer
query's column, with ``outer_column_check`` on.

``python bench/archive/csma_outer_columns.py --results bench/results/seed8-csma-rewrite --data
../shared/data/spider --param outer_column_check=true --out
bench/results/outer-columns-seed8-csma.json``

``outer_column_check`` changes only how an agent checks SQL that runs and whose subquery selects
a column of the outer query (:mod:`agents.rules.outer_columns`): such SQL is checked as SQL that
fails. Every step before the first ``check:<agent>`` step with such checked SQL is the recorded
one, so each run is resumed there (:mod:`agents.evaluation.resume_recorded`) and the rounds
after it run as the pipeline goes; runs without such a check keep their recorded verdict. SQL
with that defect that no check saw (the last round's) is not changed by the option either.

``--with-rewrites`` is for a folder recorded before ``name_rewrite`` (seed 7's agreement
evaluation, whose figure is that folder with the runs ``bench/csma_rewrites.py`` resumed laid
over it): a run with such a check is then resumed at the earlier of that step and the first
step where ``name_rewrite`` acts (:func:`csma_rewrites.first_rewritable_step`), so pass
``--param name_rewrite=true`` too. Runs that are not resumed carry the folder's own verdict in
the report, so to compare with a figure laid over the folder, take that measurement's verdict
for them (``bench/README.md`` does); a run whose rewritten rounds would only then meet such a
check is not found. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bench/, for csma_rewrites

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.rules.outer_columns import outer_column_in_subquery
from agents.pipelines.csma import PIPELINE  # noqa: E402
from csma_rewrites import _database, first_rewritable_step  # noqa: E402


def first_outer_column_check(run: Run) -> int | None:
    """The first check step whose checked SQL ran and selects an outer query's column in a
    subquery: where ``outer_column_check`` changes the run."""
    db = _database(run.db_path) if run.db_path else None
    if db is None:
        return None
    for index, event in enumerate(run.events):
        execution = event.execution or {}
        if (event.step.startswith("check:") and event.status == "ok"
                and execution.get("ok") is True
                and outer_column_in_subquery(execution.get("sql"), db.schema)):
            return index
    return None


def first_outer_or_rewrite(run: Run) -> int | None:
    """With ``--with-rewrites``: the earlier of the two steps, when the run has an outer-column
    check at all (other runs keep the figure's verdict)."""
    outer = first_outer_column_check(run)
    if outer is None:
        return None
    rewrite = first_rewritable_step(run)
    return outer if rewrite is None else min(outer, rewrite)


def checks_after(run: Run, index: int) -> dict:
    """The resumed checks: verdict, and whether the outer-column check acted."""
    checks = [{"step": e.step, "verdict": (e.parsed or {}).get("verdict"),
               "outer_column": "; but the subquery" in str((e.parsed or {}).get("execution"))}
              for e in run.events[index:] if e.step.startswith("check:")]
    return {"checks": checks, "stop_reason": (run.events[-1].data or {}).get("stop_reason")
            if run.events else None}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    find = first_outer_column_check
    if "--with-rewrites" in argv:
        argv.remove("--with-rewrites")
        find = first_outer_or_rewrite
    return resume_main(argv, PIPELINE, find, checks_after, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
