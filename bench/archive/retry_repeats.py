"""Recorded runs whose repair repeated a failing SQL, resumed with ``repeat_temperature``.

``python bench/archive/retry_repeats.py --pipeline r3 --results bench/results/seed7-r3-small --data
../shared/data/spider --param repeat_temperature=0.7 --out bench/results/retry-seed7-r3.json``

For every run of ``--pipeline`` (``r3``, ``deasql`` or ``macsql``) in an evaluation folder, the
first step whose repair answered with SQL that had already failed in that run (R³'s ``fix``,
DEA-SQL's ``execution_check``, MAC-SQL's ``refiner``) is resumed with the given parameters:
the step asks its usual question again (temperature 0 in an evaluation) and, when the answer
repeats a failure again, once more sampled (:mod:`agents.rules.repeat_retry`), then the
run goes on as the pipeline goes. Runs without such a step do not reach the retry and keep
their recorded verdict (:mod:`agents.evaluation.resume_recorded`). It prints, and writes to
``--out``, EX before and after, the questions that changed, and the resumed steps' calls and
seconds.
Nothing is asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.evaluation.resume_recorded import leading_option, main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines import get_pipeline  # noqa: E402
from agents.rules.repeat_retry import RETRY_NOTE, repeats

PIPELINES = ("r3", "deasql", "macsql")


def repairs_of(event) -> list[dict]:
    """The repairs an event records: DEA-SQL's execution check lists them, the others' repair
    steps are one ``sql_repair`` each."""
    parsed = event.parsed or {}
    if isinstance(parsed.get("repairs"), list):
        return parsed["repairs"]
    return [parsed] if event.kind == "sql_repair" and parsed.get("sql_before") else []


def first_repeat(run: Run) -> int | None:
    """The index of the first step whose repair repeats SQL that failed to run earlier in the
    run (an empty result is not a failure here, as in the retry itself)."""
    failed: list[str] = []
    for index, event in enumerate(run.events):
        for repair in repairs_of(event):
            if repair.get("error_class") != "EmptyResult":
                failed.append(repair.get("sql_before"))
            if repeats(repair.get("sql_after"), failed):
                return index
    return None


def retried(run: Run, index: int) -> dict:
    notes = [n for e in run.events[index:] for n in e.notes]
    return {"retries": sum(RETRY_NOTE in n for n in notes)}


def main(argv: list[str] | None = None) -> int:
    pipeline, rest = leading_option(argv, "--pipeline", list(PIPELINES), __doc__)
    return resume_main(rest, get_pipeline(pipeline), first_repeat, retried,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    raise SystemExit(main())
