"""R³'s revision gates: a revision the execution or the aggregate check refuses leaves the SQL
before it final (``revision_gate``, ``aggregate_gate``)."""

from __future__ import annotations

from agents.core.engine import StepContext
from agents.rules.arbitrary_rows import arbitrary_row_aggregate
from ...outputs import ExecutionCheck


def reject_revision(ctx: StepContext, result, revised_from: dict) -> bool:
    """Whether a revision is refused, the SQL before it staying final (the loop ends).
    ``revision_gate="execution"``: a revision that fails to run, or returns no rows where the SQL
    before it returned some. ``aggregate_gate``: a revision that runs but takes columns from an
    arbitrary row (an aggregate beside an ungrouped column, :mod:`agents.rules.arbitrary_rows`) where
    the SQL before it did not -- in the traces, a revision "simplifying" away the GROUP BY of a
    per-group count."""
    data = ctx.data
    why, judge = None, "Execution decides"
    if ctx.params["revision_gate"] == "execution":
        if not result.ok:
            why = f"the revised SQL fails ({result.error})"
        elif result.row_count == 0 and revised_from.get("rows"):
            why = (f"the revised SQL returns no rows where the SQL before it returned "
                   f"{revised_from['rows']}")
    if why is None and result.ok and ctx.params["aggregate_gate"]:
        found = arbitrary_row_aggregate(revised_from["revision"])
        if found and not arbitrary_row_aggregate(revised_from["sql"]):
            why = (f"the revised SQL takes its other columns from an arbitrary row ({found}), "
                   "which the SQL before it did not")
            judge = "The aggregate check"
    if why is None:
        return False
    data["sql"] = revised_from["sql"]
    data["round"] = max(1, data["round"] - 1)
    data["stop_reason"] = "revision_rejected"
    if data.get("rounds"):
        data["rounds"][-1] = {**data["rounds"][-1], "adopted": False}
    ctx.set_output(ExecutionCheck(ok=result.ok, rows=result.row_count if result.ok else None,
                                  error=result.error, error_class=result.error_class,
                                  round=data["round"], refused=why), sql=revised_from["sql"])
    ctx.note(f"{judge}: {why}, so the revision is not adopted and the SQL before it is final.")
    return True
