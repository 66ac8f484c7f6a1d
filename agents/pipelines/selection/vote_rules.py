"""Which of the vote's own rules a run has on, read once for the vote and for the early stop
(``stop_when_decided``), so both decide under the same rules.

- ``data_first``: results holding no data are set aside while another holds some;
- ``shape_first``: results of several rows where the question asks for one value ("how
  many", "what is the total"; :func:`agents.answer.shape.fits_question`) are set aside while
  another's has one;
- ``empty_not_decisive``: a leading result holding no data is not decisive while some
  candidates did not run;
- ``doubt_last``: results a lint of the answer review doubts (a NULL group on top, a unit not
  converted, a sum over repeated rows; :func:`agents.answer.review.lint_doubts`) are set aside
  while another's is not doubted -- the doubts the review would show on the answer, used
  before the answer is chosen instead of after.
"""

from __future__ import annotations

import time

from agents.answer.review import BUDGET_SECONDS, QUERY_SECONDS, lint_doubts
from agents.answer.shape import fits_question
from agents.core.engine import StepContext


RULES = ("data_first", "shape_first", "empty_not_decisive", "doubt_last")  # one switch each


def vote_rules(ctx: StepContext) -> dict:
    """The rules as :func:`agents.runs.candidates.vote` and ``settled`` take them."""
    return rules_for(ctx.params, ctx.question, ctx.db,
                     timeout=min(float(ctx.limits.timeout), QUERY_SECONDS))


def rules_for(params: dict, question: str, db=None, *, timeout: float = QUERY_SECONDS) -> dict:
    """The same from a run's parameters and question (a recorded run's vote held again);
    ``doubt_last`` needs the database the candidates ran on (without it, the rule is off)."""
    return {"data_first": bool(params.get("data_first")),
            "fits": fits_question(question) if params.get("shape_first") else None,
            "empty_not_decisive": bool(params.get("empty_not_decisive")),
            "doubted": doubter(question, db, timeout)
            if params.get("doubt_last") and db is not None else None}


def doubter(question: str, db, timeout: float, budget: float = BUDGET_SECONDS):
    """A candidate -> whether a lint doubts its result; each SQL is judged once, and the lints
    together take at most ``budget`` seconds (the answer review's own): one not begun by
    then does not doubt."""
    seen: dict[str, bool] = {}
    deadline = time.monotonic() + budget

    def doubted(candidate) -> bool:
        if not candidate.ok:
            return False
        if candidate.sql not in seen:
            try:
                seen[candidate.sql] = next(iter(lint_doubts(
                    question, candidate.sql, candidate.result, db, timeout=timeout,
                    deadline=deadline)), None) is not None
            except Exception:  # noqa: BLE001 -- a lint that cannot judge does not doubt
                seen[candidate.sql] = False
        return seen[candidate.sql]

    return doubted
