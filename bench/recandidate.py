"""Recorded `selection` runs with one candidate written again under new parameters, and voted on.

``python bench/recandidate.py --candidate decomposer --results bench/results/seed7-selection
--data ../shared/data/spider --param decomposer_prompt=graded --param
generators=cot,writer,decomposer --out bench/results/recandidate-seed7-decomposer-graded.json``
(``generators`` here only sets the vote's order of trust to today's default, so the result
compares with the recorded candidates re-voted in that order, ``bench/reselect.py``).

Every `selection` run of an evaluation folder is resumed at its ``candidate:<name>`` step with
the given parameters (:mod:`agents.evaluation.resume_recorded`): the candidates written before
it are the recorded ones; it, its repair, any candidate after it in the run's plan, the vote and
(on an open vote) the selection agent run again on the embedded model, with the example bank the
folder was evaluated with (a later ``cot`` candidate looks its examples up again). A later
candidate at temperature 0 is expected to come out as recorded; each row names the later
candidates whose SQL did change, so a difference can be told from the regenerated candidate's.
Each row also has that candidate's SQL before and after and the prompt variant it ran with. Why
a resume rather than a new evaluation: the candidates before it (one sampled above temperature
0) stay the same, so the measurement shows what the one generator's change does to the vote.
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.evaluation.resume_recorded import leading_option, main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.selection import PIPELINE  # noqa: E402
from agents.pipelines.selection.generators import GENERATORS, generator_for  # noqa: E402


def candidate_sql(run: Run, name: str, start: int = 0) -> str | None:
    """The candidate's SQL as the run left it: after its repair when it had one."""
    sql = None
    for event in run.events[start:]:
        if event.step in (f"candidate:{name}", f"repair:{name}"):
            sql = event.sql if event.sql is not None else sql
    return sql


def regenerating(name: str):
    """The finder of a run's ``candidate:<name>`` step and the describer of its resumed run.
    The finder keeps each recorded run it is given, by id, for the describer to compare the
    resumed run (whose parent it is) with."""
    recorded: dict[str, Run] = {}

    def find(run: Run) -> int | None:
        steps = [e.step for e in run.events]
        if f"candidate:{name}" not in steps:
            return None
        recorded[run.run_id] = run
        return steps.index(f"candidate:{name}")

    def describe(run: Run, index: int) -> dict:
        before = recorded.pop(run.parent_run_id)
        later = {e.step.split(":", 1)[1] for e in run.events[index:]
                 if e.step.startswith("candidate:") and e.step != f"candidate:{name}"}
        first = run.events[index]
        vote = next((e.parsed for e in run.events[index:] if e.step == "vote"), None) or {}
        final = run.events[-1].data if run.events else {}
        return {"candidate": name, "prompt": (first.inputs or {}).get("prompt"),
                "candidate_sql_before": candidate_sql(before, name, index),
                "candidate_sql_after": candidate_sql(run, name, index),
                "later_changed": sorted(n for n in later if candidate_sql(run, n, index)
                                        != candidate_sql(before, n, index)),
                "vote": vote.get("outcome"), "chosen": (final or {}).get("chosen")}
    return find, describe


def main(argv: list[str] | None = None) -> int:
    candidate, rest = leading_option(argv, "--candidate", [*GENERATORS, "sample<N>"], __doc__,
                                     check=generator_for)
    find, describe = regenerating(candidate)
    return resume_main(rest, PIPELINE, find, describe, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
