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
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.error_hints import is_name_error  # noqa: E402
from agents.evaluation.resume_recorded import leading_option, main as resume_main  # noqa: E402
from agents.events import Run  # noqa: E402
from agents.pipelines import get_pipeline  # noqa: E402

REPAIR_STEPS = {"macsql": "refiner", "r3": "fix", "deasql": "execution_check",
                "csma": "check"}
# A repair step that reads the error from the execution step before it resumes from that one.
READS_ERROR_FROM = {"fix": "execute"}


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


def first_name_error_repair(step: str):
    """The finder of a run's first ``step`` that repaired a name error."""
    def find(run: Run) -> int | None:
        index = next((i for i, event in enumerate(run.events)
                      if event.step.partition(":")[0] == step  # CSMA's check:2 is a check
                      and is_name_error(repaired_error(event))), None)
        source = READS_ERROR_FROM.get(step)
        if index is not None and source and index > 0 and run.events[index - 1].step == source:
            return index - 1
        return index
    return find


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
    step = REPAIR_STEPS[pipeline]
    return resume_main(rest, get_pipeline(pipeline), first_name_error_repair(step),
                       prompts_of(step), __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
