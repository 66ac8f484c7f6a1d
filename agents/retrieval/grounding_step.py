"""Value grounding as a step any pipeline can take before its writers: the question's words and
literals looked up, within a time budget, among the values stored in the database
(:mod:`agents.retrieval.value_grounding`), and the matches handed to the writers' prompts -- as a list
beside the question's evidence (:func:`grounded_evidence`), or as the first value examples of
their columns in a schema text that lists examples (:func:`schema_with_values`).

A small model copies a value it is shown more reliably than it spells one it guesses (shown
``country.GovernmentForm = 'US Territory'``, it stops taking the first of the column's examples
for "US territory"); but a list of matches also reads to it as conditions to add, so MAC-SQL,
whose schema text lists value examples, takes them there (``bench/README.md``).
"""

from __future__ import annotations

import copy

from agents.core.engine import StepContext
from agents.outputs import ValueMatches
from agents.db.schema import Schema
from agents.core.step_context import RETRIEVED_SCHEMA
from agents.retrieval.value_grounding import Grounding, ground_question

STATE_KEY = "grounding"


def ground(ctx: StepContext, shown_to: str, tables: dict[str, list[str]] | None = None) -> None:
    """Look the question up and keep what was found in ``ctx.data``; the step's output lists it.

    The lookup searches the tables the writers see: ``tables`` when given (a schema selection),
    else those the Schema Retriever kept when the schema was cut to fit, else the whole
    database."""
    if tables is None and ctx.data.get(RETRIEVED_SCHEMA) is not None:
        tables = {t.name: t.column_names() for t in ctx.schema.tables}
    grounding = ground_question(ctx.db, ctx.question, tables=tables)
    ctx.data[STATE_KEY] = grounding.to_dict()
    ctx.set_inputs(phrases=grounding.phrases, **({"tables": list(tables)} if tables is not None
                                                 else {}))
    ctx.set_output(ValueMatches(matches=[m.to_dict() for m in grounding.matches],
                                phrases=grounding.phrases, skipped=grounding.skipped,
                                columns_searched=grounding.columns_searched,
                                dropped=grounding.dropped, seconds=round(grounding.seconds, 3),
                                tables_kept=len(tables) if tables is not None else None,
                                shown_to=shown_to))


def grounded_evidence(evidence: str | None, grounding: dict | None) -> str:
    """The user's evidence followed by the values grounding found (either may be empty)."""
    section = Grounding.from_dict(grounding).prompt_section() if grounding else ""
    return "\n".join(part for part in ((evidence or "").strip(), section) if part)


def schema_with_values(schema: Schema, grounding: dict | None) -> Schema:
    """``schema`` with each matched value leading its column's value examples.

    A prompt whose schema lists value examples (MAC-SQL's) can take the matches there rather
    than as a list of its own: the column then shows the value as it is stored, and a small
    model has no list of conditions to copy whole. A column keeps as many examples as it had
    (at least its matches); ``schema`` itself is not changed."""
    matches = (grounding or {}).get("matches") or []
    if not matches:
        return schema
    wanted: dict[tuple[str, str], list] = {}
    for m in matches:
        values = wanted.setdefault((m["table"].casefold(), m["column"].casefold()), [])
        if m["value"] not in values:
            values.append(m["value"])
    shown = copy.deepcopy(schema)
    for table in shown.tables:
        for column in table.columns:
            values = wanted.get((table.name.casefold(), column.name.casefold()))
            if values:
                rest = [v for v in column.examples if v not in values]
                column.examples = (values + rest)[:max(len(column.examples), len(values))]
    return shown
