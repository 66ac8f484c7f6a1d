"""The `selection` pipeline's vote and selection agent again, on the candidates of a recorded run.

``python bench/reselect.py --results bench/results/seed7-selection --data ../shared/data/spider
--param select_orders=2 --out bench/results/reselect-seed7-orders2.json``

Every `selection` run of an evaluation folder is resumed from its ``vote`` step with the given
parameters (the engine's ``resume_run``, as the app's "resume from here" does): the candidates
and their repairs are the recorded ones, so only the vote and the selection agent run again,
on the embedded model (temperature 0, no response cache). Each new final SQL is scored with the
evaluation's own scoring on the question's database. It prints, and writes to ``--out``, EX
before and after, the questions that changed, and the selection agent's calls and seconds.

Why a resume rather than a new evaluation: the candidates cost 90% of the pipeline's time, and
one of them is sampled at a temperature above 0, so a new evaluation would change the
candidates as well as the selection. Resuming measures the selection alone on the same inputs.
With ``--param generators=...`` the recorded candidates are voted on in the new order of trust
(the order that breaks ties and orders the selection agent's options).
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.selection import PIPELINE  # noqa: E402


def vote_step(run: Run) -> int | None:
    steps = [e.step for e in run.events]
    return steps.index("vote") if "vote" in steps else None


def selection_of(run: Run, index: int) -> dict:
    return {"selection": last_selection(run)}


def last_selection(run: Run) -> dict | None:
    """The selection agent's record, when it decided the run (a closing step may follow it)."""
    steps = [e for e in run.events if e.step in ("vote", "select")]
    return steps[-1].parsed if steps and steps[-1].step == "select" else None


def main(argv: list[str] | None = None) -> int:
    return resume_main(argv, PIPELINE, vote_step, selection_of, __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
