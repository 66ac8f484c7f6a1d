"""Which of the vote's own rules a run has on, read once for the vote and for the early stop
(``stop_when_decided``), so both decide under the same rules.

- ``data_first``: results holding no data are set aside while another holds some;
- ``shape_first``: results whose shape does not fit the question ("how many": one value; "the
  top 5": five rows; :mod:`agents.answer.shape`) are set aside while another's fits;
- ``empty_not_decisive``: a leading result holding no data is not decisive while some
  candidates did not run.
"""

from __future__ import annotations

from agents.answer.shape import fits_question
from agents.core.engine import StepContext


def vote_rules(ctx: StepContext) -> dict:
    """The rules as :func:`agents.runs.candidates.vote` and ``settled`` take them."""
    params = ctx.params
    return {"data_first": bool(params.get("data_first")),
            "fits": fits_question(ctx.question) if params.get("shape_first") else None,
            "empty_not_decisive": bool(params.get("empty_not_decisive"))}
