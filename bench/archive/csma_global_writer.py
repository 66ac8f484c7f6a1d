"""Recorded CSMA runs that stopped at ``max_rounds`` on SQL that fails, resumed with the
global writer (``global_writer``).

``python bench/archive/csma_global_writer.py --results bench/results/seed8-csma-fresh --data
../shared/data/spider --param global_writer=true --out
bench/results/global-writer-seed8-csma.json``

``global_writer`` changes only what happens where a run would end at ``max_rounds`` with its
last SQL failing to execute: one writer starts afresh from the global schema (what the agents
shared), and its SQL is the answer when it runs. Every step of such a run is the recorded one,
so the run is resumed after its last step, the recorded generation, which with the option on
goes on to the global writer (that generation's decision depends only on the run's state and
parameters, so its routing is set as the option sets it and nothing is asked again); the Final
check follows as in any run (:mod:`agents.evaluation.resume_recorded`). A run that ended on SQL
that runs, or stopped otherwise, keeps its recorded verdict: the global writer's SQL replaces
only SQL that fails, which is never a right answer, so the option can gain answers and cannot
lose one. Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository
sys.path.insert(0, str(Path(__file__).resolve().parent))  # its sibling, loaded by path too

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.csma import PIPELINE  # noqa: E402
from agents.pipelines.csma.global_writer import STEP  # noqa: E402
from csma_failing_rounds import stopped_failing  # noqa: E402


def after_failing_end(run: Run) -> int | None:
    """The index after the last step of a run that stopped at ``max_rounds`` on SQL that fails
    to execute, its last step then routed on to the global writer; else None."""
    if stopped_failing(run) is None:
        return None
    run.events[-1].next_step = STEP
    return len(run.events)


def after_max_rounds(run: Run) -> int | None:
    """The index after the last round of a run that stopped at ``max_rounds`` (on SQL that
    fails or on SQL that runs, unchecked), that round's generation then routed on to the global
    writer; a Final check recorded after it is left out, to run again after the writer. Else
    None. The options passed decide whether the writer acts on each kind of ending."""
    if run.status != "done" or not run.events:
        return None
    if run.events[-1].step == "final_check":
        ending = run.events[-2] if len(run.events) > 1 else None
        if ending is None or not ending.step.startswith("generate:"):
            return None
        run.events.pop()
    last = run.events[-1]
    stop = str((last.data or {}).get("stop_reason") or "")
    if not last.step.startswith("generate:") or last.status != "ok" \
            or not stop.startswith("reached max_rounds"):
        return None
    last.next_step = STEP
    return len(run.events)


def written(run: Run, index: int) -> dict:
    """What the global writer did: its SQL, whether it ran and became the answer."""
    step = next((e for e in run.events[index:] if e.step == STEP), None)
    parsed = step.parsed if step is not None and isinstance(step.parsed, dict) else {}
    return {"writer_sql": parsed.get("sql"), "taken": parsed.get("taken"),
            "writer_tables": parsed.get("tables"), "writer_rewrite": parsed.get("rewrite"),
            "mode": parsed.get("mode"), "agreed_sql": parsed.get("agreed_sql"),
            "agrees_with_last": parsed.get("agrees_with_last")}


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    find = after_failing_end
    if "--unchecked-too" in argv:  # the runs that ended on SQL that runs, for global_check
        argv.remove("--unchecked-too")
        find = after_max_rounds
    return resume_main(argv, PIPELINE, find, written, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
