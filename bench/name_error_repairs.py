"""Recorded runs resumed at their first repair of a name error, with other repair parameters.

``python bench/name_error_repairs.py --pipeline macsql --results
bench/results/spider-dev-stratified-seed7 --data ../shared/data/spider --param
refiner_prompt=tables --out bench/results/name-errors-seed7-macsql.json``

For every run of ``--pipeline`` (``macsql``, ``r3``, ``deasql`` or ``csma``) in an evaluation
folder, the first repair step that was shown a name error (``no such column``, ``no such
table``, ``ambiguous column name``: MAC-SQL's ``refiner``, R³'s ``fix``, DEA-SQL's
``execution_check``, CSMA's ``check``, whose agent is told the error and then writes anew)
is resumed with the given parameters, and the run goes on as the pipeline goes. R³'s ``fix``
reads the error and its hint from the execution step before it, so that step is where an R³ run
resumes (it runs the same SQL again): the hint shown is then always the one today's code writes,
as it is for the other steps, which execute the SQL themselves. Every step before it is the
recorded one, so the measurement shows what a repair prompt changes on the same failing SQL, at
the cost of the repairs only; runs that never met a name error keep their recorded verdict
(:mod:`agents.evaluation.resume_recorded`). It reads the repair from the step's inputs and
parsed output, so runs recorded before steps had output kinds are found too. Nothing is
asserted: it is a measurement.

``--pipeline selection`` resumes at the ``candidate`` step before the first ``repair`` shown a
name error (the repair reads the error and its hint from the candidate's execution).

``--changed-hint`` narrows it to the runs whose recorded hint for that repair differs from the
one today's code writes for the same SQL and error (say, a rewrite that is no longer offered),
resumed at the first such repair: the runs a change to the hint can change, and no others.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.db.database import open_database
from agents.rules.error_hints import is_name_error
from agents.evaluation.resume_recorded import leading_option, main as resume_main  # noqa: E402
from agents.rules.name_rewrite import hint_with_rewrite
from agents.core.events import Run
from agents.pipelines import get_pipeline  # noqa: E402

REPAIR_STEPS = {"macsql": "refiner", "r3": "fix", "deasql": "execution_check",
                "csma": "check", "selection": "repair"}
# A repair step that reads the error from the execution step before it resumes from that one.
READS_ERROR_FROM = {"fix": "execute", "repair": "candidate"}


def repaired_error(event) -> str:
    """The error a repair step was asked to repair ("" when it asked for no repair: a
    Refiner pass that found the SQL running, or one that gave up)."""
    parsed = event.parsed or {}
    if parsed.get("sql_before") and parsed.get("error"):
        return str(parsed["error"])
    execution = parsed.get("execution")  # CSMA's check: what running the SQL told the agent
    if isinstance(execution, str) and execution.startswith("failed: "):
        return execution[len("failed: "):]
    repairs = parsed.get("repairs") or []  # DEA-SQL's execution check: its repair attempts
    if repairs and isinstance(repairs[0], dict):
        return str(repairs[0].get("error") or "")
    return str((event.inputs or {}).get("error") or "")


def first_name_error_repair(step: str, changed_hint: bool = False):
    """The finder of a run's first ``step`` that repaired a name error (with ``changed_hint``,
    the first whose recorded hint is not the one today's code writes)."""
    def find(run: Run) -> int | None:
        repairs = (i for i, event in enumerate(run.events)
                   if event.step.partition(":")[0] == step  # CSMA's check:2 is a check
                   and is_name_error(repaired_error(event)))
        if changed_hint:
            repairs = (i for i in repairs if hint_changed(run, run.events[i]))
        index = next(repairs, None)
        source = READS_ERROR_FROM.get(step)
        if (index is not None and source and index > 0
                and run.events[index - 1].step.partition(":")[0] == source):
            return index - 1
        return index
    return find


def hint_changed(run: Run, event) -> bool:
    """Whether today's hint for the SQL and error ``event`` repaired differs from the one it
    recorded (checked on the run's database, read-only)."""
    parsed = event.parsed or {}
    sql, error = parsed.get("sql_before"), parsed.get("error")
    if not sql or not error or not run.db_path:
        return False
    with open_database(run.db_path) as db:
        return hint_with_rewrite(db, error, sql, db.schema) != parsed.get("hint")


def prompts_of(step: str):
    """What the resumed repair steps record as their prompt variant (other steps' prompts,
    such as R³'s reviewers', left out)."""
    def describe(run: Run, index: int) -> dict:
        return {"prompts": sorted({str(e.inputs.get("prompt") or e.inputs.get("variant"))
                                   for e in run.events[index:] if e.step == step and
                                   ((e.inputs or {}).get("prompt") or
                                    (e.inputs or {}).get("variant"))})}
    return describe


def main(argv: list[str] | None = None) -> int:
    pipeline, rest = leading_option(argv, "--pipeline", sorted(REPAIR_STEPS), __doc__)
    changed_hint = "--changed-hint" in rest
    rest = [arg for arg in rest if arg != "--changed-hint"]
    step = REPAIR_STEPS[pipeline]
    return resume_main(rest, get_pipeline(pipeline), first_name_error_repair(step, changed_hint),
                       prompts_of(step), __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
