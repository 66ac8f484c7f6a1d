"""A repair that repeats SQL that already failed is asked once more, sampled.

A small model asked at temperature 0 to correct a failing query often answers with the same
query, even when the error and its hint name the column it should use and the prompt says the
query failed before; asked again with the same messages it can only repeat itself, so the
repair loop ends on the error (in the traces this ended 7 of 54 R³ runs with its small-model
options, and 5 of 76 DEA-SQL runs with its compact prompts). Asking the same messages once more
at a temperature above 0 gives the model another chance to follow the hint; it costs one call
only when the first answer repeated a failure, and changes nothing otherwise.

Pipelines with a repair loop offer it as the ``repeat_temperature`` parameter (0: off, the
loop as before); the retry is a second call of the same step, and the step's note says why.
Only SQL that failed to run counts as a failure here: MAC-SQL's Refiner also repairs SQL that
returns no rows, and a model that answers an empty result with the same SQL is often right.
"""

from __future__ import annotations

from typing import Callable, Iterable, TypeVar

from agents.core.engine import STUDIO, ParamSpec, StepContext, UnparseableAnswer
from agents.db.sqltext import same_sql

T = TypeVar("T")

PARAM = "repeat_temperature"
RETRY_NOTE = "asked once more at temperature"


def param_spec(default: float = 0.0) -> ParamSpec:
    return ParamSpec(PARAM, default, min=0.0, max=2.0, origin=STUDIO,
                     help="when a repair repeats SQL that already failed, ask once more at "
                          "this temperature (0: off)")


def repeats(sql: str | None, failed: Iterable[str | None]) -> bool:
    """Whether ``sql`` is (up to layout) one of the ``failed`` queries."""
    return bool(sql) and any(f and same_sql(sql, f) for f in failed)


def failed_before(sql: str | None, failed: Iterable[str | None]) -> bool:
    """Whether ``sql``, failing now and listed once in ``failed`` for that, had failed before
    too: what a repair prompt can tell a model that is going round in circles."""
    return bool(sql) and sum(1 for f in failed if f and same_sql(sql, f)) > 1


def retried(ctx: StepContext) -> bool:
    """Whether this step has asked its repair a second time."""
    return any(RETRY_NOTE in note for note in ctx.event.notes)


def ask_unrepeated(ctx: StepContext, ask: Callable[[float | None], T],
                   sql_of: Callable[[T], str | None], failed: Iterable[str | None],
                   keep_first: Callable[[], None] | None = None) -> T:
    """``ask(None)`` (the step's usual call, at the run's temperature); when its SQL repeats one
    of ``failed`` and the run's ``repeat_temperature`` is above 0, ``ask(temperature)`` once
    more and return that. A second answer that cannot be used (not parseable even after the
    usual retry) leaves the first one in place: ``keep_first()`` restores whatever the second
    call changed in the step's state, and the note says so."""
    failed = list(failed)
    answer = ask(None)
    temperature = float(ctx.params.get(PARAM) or 0)
    if temperature <= 0 or not repeats(sql_of(answer), failed):
        return answer
    ctx.note(f"The repair repeated SQL that already failed; {RETRY_NOTE} {temperature:g} "
             f"({PARAM}).")
    try:
        return ask(temperature)
    except UnparseableAnswer as exc:
        if keep_first is not None:
            keep_first()
        ctx.note(f"The sampled answer could not be used ({exc}); the first answer stands.")
        return answer
