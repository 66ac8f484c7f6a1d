"""MAC-SQL's value grounding step (``value_grounding``, not in the paper): before the Decomposer
writes, the question's words are looked up among the values stored in the tables and columns it
will see, and what matches is shown to it and to the Refiner beside the evidence
(:mod:`..grounding`)."""

from __future__ import annotations

from ...engine import StepContext
from .. import grounding
from .selector import KEEP_ALL


def ground(ctx: StepContext) -> str:
    selection = ctx.data.get("selection")
    tables = None
    if selection:
        tables = {name: (ctx.schema.table(name).column_names() if kept == KEEP_ALL else kept)
                  for name, kept in selection.items()}
    grounding.ground(ctx, shown_to="the Decomposer and the Refiner", tables=tables)
    return "decomposer"
