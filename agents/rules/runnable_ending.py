"""A repair loop that ends on SQL failing on a column name ends on the version that runs.

MAC-SQL's Refiner, DEA-SQL's execution check and R³'s corrections show the model the error, its
hint and, where one clear change makes the query run, that query (:mod:`agents.rules.name_rewrite`).
In the benchmark traces a 1.5B model still ended some runs on the very SQL that had failed, its
repairs spent. With ``name_rewrite`` on (the default), the loop then goes on with the version
that runs instead, computed from the schema the run has (R³ goes on to its reviews with it;
MAC-SQL and DEA-SQL end on it); the trace shows the SQL as written, its error and the change.
Whether that version answers the question is not judged by anyone, but SQL that fails is never
a right answer, so nothing is lost. Off: the failing SQL is kept, as in the papers.

The same version is also what a repair is told first (``repair_from_hint``, the rule
``repair_from_hint`` of :mod:`agents.rules.registry`). When a query fails and its execution hint
already holds the version that runs, a repair step (MAC-SQL's Refiner, DEA-SQL's execution
check, R³'s correction, a ``selection`` candidate's repair, CSMA's global writer's repair) runs
that version again under the run's limits and, if it runs, takes it as its repair without a
model call: a 1.5B model once spent 305 s writing that same fix. Only if it fails there (it
cannot: it ran when the hint was built) is the model asked, as it always is with the switch off,
the paper-faithful setting (the papers always ask the model; runs recorded before the switch
replay with it off). The repair's output says which happened (``from_hint``: True, taken from
the hint with no model call; False, the model was asked; unset with the switch off).

Its kind is *changes result*: the run goes on with the hint's SQL instead of what the model
would have written. Its hook is the *repair ending*, not the *execution hint*: the execution
hint is what a repair agent is told (a lint whose action returns a sentence), whereas this rule
tells nobody anything and decides what a repair pass ends on, as the runnable ending and the
repeat retry do; each repair step calls it itself (no ``acts``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agents.core.engine import STUDIO, ParamSpec, StepContext
from agents.rules.name_rewrite import hinted_rewrite, rewrite_or_none, take_rewrite

PARAM = "name_rewrite"
HINT_PARAM = "repair_from_hint"


def param_spec() -> ParamSpec:
    return ParamSpec(PARAM, True, origin=STUDIO,
                     help="when repairs end on SQL failing on a column name, go on with the "
                          "version one clear change makes run")


def runnable_ending(ctx: StepContext, result):
    """``(sql, result, written)``: the version of the failing SQL of ``result`` that runs (run
    and recorded with ``ctx.execute``) and what it replaced, or None where the option is off,
    the SQL runs, or no clear change makes it run."""
    if result.ok or not ctx.params.get(PARAM):
        return None
    sql, rerun, written = take_rewrite(
        rewrite_or_none(ctx.db, result.error, result.sql, ctx.schema,
                        timeout=ctx.limits.timeout), result, ctx.execute)
    return (sql, rerun, written) if written else None


def hint_param_spec(under: str | None = None) -> ParamSpec:
    """The switch of ``repair_from_hint``; ``under``: the pipeline's repair switch, if any."""
    return ParamSpec(HINT_PARAM, True, origin=STUDIO, under=under,
                     help="when a failing query's hint holds the version that runs, take it: "
                          "no model call")


@dataclass(frozen=True)
class HintRepair:
    """The version of a failing query its hint holds, run again under the run's limits, where
    it runs: ``sql``, its ``result`` and ``change``, what it changed in the hint's words."""

    sql: str
    result: object
    change: str


def asks_model(ctx: StepContext) -> bool | None:
    """The ``from_hint`` of a repair the model wrote: False with ``repair_from_hint`` on (the
    output says the model was asked), None with it off (the output as before the switch)."""
    return False if ctx.params.get(HINT_PARAM) else None


def repair_from_hint(ctx: StepContext, sql: str, error: str | None, hint: str | None, *,
                     schema=None, record: bool = False) -> HintRepair | None:
    """With ``repair_from_hint`` on, the version of ``sql`` (failing with ``error``) that
    ``hint`` holds, run with ``ctx.execute`` under the run's limits (recorded as the step's
    execution with ``record``), when it runs there; None where the option is off, the hint holds
    none, or it fails (the step's note then says so): the caller asks the model. ``schema`` is
    the one the hint was built from (default: the run's)."""
    if not ctx.params.get(HINT_PARAM) or not hint:
        return None
    rewrite = hinted_rewrite(ctx.db, error, sql, ctx.schema if schema is None else schema, hint,
                             timeout=ctx.limits.timeout)
    if rewrite is None:
        return None
    result = ctx.execute(rewrite.sql, record=False)
    if not result.ok:  # it ran when the hint was built: this should not happen
        ctx.note(f"the hint's version of the query fails under the run's limits "
                 f"({result.error}); the model is asked instead")
        return None
    if record:
        ctx.event.execution = result.preview()
    return HintRepair(sql=rewrite.sql, result=result, change="; ".join(rewrite.changes))
