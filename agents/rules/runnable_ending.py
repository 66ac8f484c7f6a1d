"""A repair loop that ends on SQL failing on a column name ends on the version that runs.

MAC-SQL's Refiner, DEA-SQL's execution check and R³'s corrections show the model the error, its
hint and, where one clear change makes the query run, that query (:mod:`agents.rules.name_rewrite`).
In the benchmark traces a 1.5B model still ended some runs on the very SQL that had failed, its
repairs spent. With ``name_rewrite`` on (the default), the loop then goes on with the version
that runs instead, computed from the schema the run has (R³ goes on to its reviews with it;
MAC-SQL and DEA-SQL end on it); the trace shows the SQL as written, its error and the change.
Whether that version answers the question is not judged by anyone, but SQL that fails is never
a right answer, so nothing is lost. Off: the failing SQL is kept, as in the papers.
"""

from __future__ import annotations

from agents.core.engine import STUDIO, ParamSpec, StepContext
from agents.rules.name_rewrite import rewrite_or_none, take_rewrite

PARAM = "name_rewrite"


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
