"""Which of the vote's own rules a run has on, read once for the vote and for the early stop
(``stop_when_decided``), so both decide under the same rules.

- ``data_first``: results holding no data are set aside while another holds some;
- ``shape_first``: results of several rows where the question asks for one value ("how
  many", "what is the total"; :func:`agents.answer.shape.fits_question`) are set aside while
  another's has one;
- ``empty_not_decisive``: a leading result holding no data is not decisive while some
  candidates did not run.
"""

from __future__ import annotations

from agents.answer.shape import fits_question
from agents.core.engine import StepContext


RULES = ("data_first", "shape_first", "empty_not_decisive")  # the switches, one per rule


def vote_rules(ctx: StepContext) -> dict:
    """The rules as :func:`agents.runs.candidates.vote` and ``settled`` take them."""
    return rules_for(ctx.params, ctx.question)


def rules_for(params: dict, question: str) -> dict:
    """The same from a run's parameters and question (a recorded run's vote held again)."""
    return {"data_first": bool(params.get("data_first")),
            "fits": fits_question(question) if params.get("shape_first") else None,
            "empty_not_decisive": bool(params.get("empty_not_decisive"))}
