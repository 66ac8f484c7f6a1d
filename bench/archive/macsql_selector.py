"""Recorded MAC-SQL runs whose Selector pruned the schema, resumed at the Selector with another
``use_selector`` mode.

``python bench/archive/macsql_selector.py --results bench/results/seed8-macsql-fresh --data
../shared/data/spider --param use_selector=never --out bench/results/selector-seed8-macsql.json``

The Selector is MAC-SQL's first agent (after schema retrieval, which Spider's databases never
need), so a run resumed there is the run the mode makes, from its first call on. Only runs whose
Selector answer was used are resumed: where the Selector was skipped (a small schema) or its
answer could not be used (the Decomposer then got the whole schema), a mode that does not run it
gives the Decomposer the very prompt it had, so those runs keep their recorded verdict. Pass the
folder's other changed defaults with ``--param`` too (an older folder recorded with the paper's
Refiner prompt: ``--param refiner_prompt=tables --param name_rewrite=true``). Nothing is
asserted: it is a measurement.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository

from agents.evaluation.resume_recorded import main as resume_main  # noqa: E402
from agents.core.events import Run
from agents.pipelines.macsql import PIPELINE  # noqa: E402


def pruning_selector(run: Run) -> int | None:
    """The Selector step, when its answer cut the schema the Decomposer saw (an answer that
    dropped every table is not used: the Decomposer then gets the whole schema)."""
    steps = [event.step for event in run.events]
    if "selector" not in steps or "decomposer" not in steps:
        return None
    decomposer = run.events[steps.index("decomposer")]
    return steps.index("selector") if (decomposer.inputs or {}).get("selected") else None


def selector_after(run: Run, index: int) -> dict:
    """Whether the resumed run's Selector ran and what the Decomposer was given."""
    events = {e.step: e for e in run.events[index:]}
    selector, decomposer = events.get("selector"), events.get("decomposer")
    return {"selector_status": selector.status if selector else None,
            "decomposer_selected": bool(decomposer and (decomposer.inputs or {}).get("selected"))}


def main(argv: list[str] | None = None) -> int:
    return resume_main(argv, PIPELINE, pruning_selector, selector_after,
                       __doc__.split("\n\n")[0])


if __name__ == "__main__":
    sys.exit(main())
