"""A pipeline that answers every question with its own gold SQL.

Run through the harness it must score 100% execution accuracy, which checks the scoring end to
end on a real dataset, and since it makes no model call, its seconds are the harness's own cost
per question (``bench/scoring_speed.py``).
"""

from __future__ import annotations

from agents.core.engine import Pipeline, Step, StepContext


class GoldPipeline(Pipeline):
    """Answers with the gold SQL of the question: execution accuracy must then be 100%."""

    name = "gold"
    title = "Gold lookup"

    def __init__(self, questions):
        self.lookup = {(q.db_id, q.question): q.gold_sql for q in questions}
        self.steps = [Step("lookup", "Gold Lookup", self.answer)]

    def answer(self, ctx: StepContext) -> None:
        ctx.data["sql"] = self.lookup[(ctx.run.db_name, ctx.question)]
