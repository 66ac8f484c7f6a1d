"""MAC-SQL's value grounding (``value_grounding``, not in the paper): before the Decomposer
writes, the question's words are looked up among the values stored in the tables and columns it
will see (:mod:`..grounding`), and what matches is shown to it and to the Refiner -- as the
first value examples of the matched columns in the schema text (``examples``), or as a list
beside the evidence (``list``)."""

from __future__ import annotations

from agents.core.engine import StepContext
from agents.db.schema import Schema
from agents.retrieval import grounding_step as grounding

MODES = {"off": "", "examples": "the Decomposer and the Refiner, first among their columns' "
         "value examples", "list": "the Decomposer and the Refiner, beside the evidence"}


def shown_schema(ctx: StepContext) -> Schema:
    """The schema as the Decomposer and the Refiner see it: with ``value_grounding=examples``
    each matched value leads its column's value examples."""
    if ctx.params["value_grounding"] != "examples":
        return ctx.schema
    return grounding.schema_with_values(ctx.schema, ctx.data.get(grounding.STATE_KEY))


def shown_evidence(ctx: StepContext) -> str:
    """The question's evidence, followed with ``value_grounding=list`` by the stored values
    grounding found (no match leaves the prompt as it was)."""
    found = ctx.data.get(grounding.STATE_KEY) if ctx.params["value_grounding"] == "list" else None
    return grounding.grounded_evidence(ctx.evidence, found)


def ground(ctx: StepContext) -> str:
    """The lookup, in the tables and columns the Selector kept (all of them when it did not
    prune), before the Decomposer."""
    selection = ctx.data.get("selection")  # table -> "keep_all" or the columns kept
    tables = None
    if selection:
        tables = {name: (kept if isinstance(kept, list) else ctx.schema.table(name).column_names())
                  for name, kept in selection.items()}
    grounding.ground(ctx, shown_to=MODES[ctx.params["value_grounding"]], tables=tables)
    return "decomposer"
