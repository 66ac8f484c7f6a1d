"""The Schema Retriever step every pipeline starts with when its schema is over the budget.

A pipeline declares how its prompts show the schema and how many tokens of its longest prompt
are not schema (:class:`RetrievalSpec`); the schema budget is the model's context less that,
less the answer's share and the question. A schema within the budget goes to the pipeline
untouched -- no step, no change to a single prompt byte. A larger one makes ``retrieve`` the
first step: it ranks the tables for the question (:mod:`.ranking`, stored values included),
keeps what fits (:mod:`.fit`) and stores the selection in the run's state under
:data:`STATE_KEY`, where :attr:`StepContext.schema <agents.core.step_context.StepContext.schema>`
picks it up, so every later agent -- MAC-SQL's Selector, CSMA's partition, a writer -- sees the
kept part as its whole schema. Being a declared step, it is drawn in each pipeline's graph,
shown in the trace and resumable like any other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from agents.core.engine import Step, StepContext, StepError
from agents.db.schema import Schema
from agents.core.step_context import RETRIEVED_FIRST as FIRST_KEY
from agents.core.step_context import RETRIEVED_SCHEMA as STATE_KEY
from agents.llm.token_budget import answer_tokens, context_setting, context_size, estimate_tokens
from agents.retrieval.value_grounding import Grounding, GroundingLimits, ground_question
from .fit import Fit, NothingFits, fit, form_cost
from .outputs import SchemaRetrieval
from .parts import Parts, covering_parts, schema_parts, strong_parts
from .ranking import Ranking, rank
from .whole_part import PARAM as WHOLE_PART
from .whole_part import whole_part

RETRIEVE = "retrieve"
QUESTION_COPIES = 2      # a prompt may hold the question twice (asked, then restated)
# A table scoring under this share of the best one is left out even when it would fit: a word
# as common as "name" matches hundreds of tables, and every table kept costs the model time and
# is one more look-alike to take for the right one (measurements: bench/parameter-notes.md).
RELATIVE_FLOOR = 0.35
# A table over the floor is still left out when the best table of its part of the schema (the
# tables its foreign keys connect it to, :mod:`.parts`) scores under this share of the best:
# the look-alikes of another application in the same file (bench/parameter-notes.md).
PART_FLOOR = 0.5
# A part over the part floor is still left out when its tables over the floor cover fewer than
# this share of the question's words (and stored values) that the best-covering part's cover
# (:func:`.parts.covering_parts`): a look-alike whose one table matches a word of the question
# well (a films schema's ``language`` for "each language and the number of TV channels") while
# the right part matches the question's other words too (bench/parameter-notes.md).
PART_COVERAGE = 0.8
SHOWN_DROPPED = 30       # best-ranked dropped tables named in the output
GROUNDING = GroundingLimits(budget_seconds=1.5)

Forms = Callable[[dict], list[Callable[[Schema], str]]]


@dataclass(frozen=True)
class RetrievalSpec:
    """How a pipeline's prompts hold the schema.

    ``forms(params)`` gives the renderings of a schema its prompts use (the longest counts);
    ``reserve`` is the most tokens any one of its prompts holds besides the schema and the
    question: instructions, few-shot examples, a dialogue's later turns, a result preview --
    a number, or a function of the run's parameters when a prompt variant is longer.
    """

    forms: Forms
    reserve: int | Callable[[dict], int]

    def reserve_for(self, params: dict) -> int:
        return self.reserve(params) if callable(self.reserve) else self.reserve


def schema_budget(ctx: StepContext, spec: RetrievalSpec) -> int:
    """Tokens the schema text may take in this run's prompts."""
    asked = estimate_tokens(f"{ctx.question}\n{ctx.evidence or ''}")
    return (context_size(ctx.llm) - answer_tokens(ctx.llm) - spec.reserve_for(ctx.params)
            - QUESTION_COPIES * asked)


def schema_tokens(ctx: StepContext, spec: RetrievalSpec, schema: Schema) -> int:
    return form_cost(spec.forms(ctx.params))(schema)


def whole_schema_fit(ctx: StepContext, spec: RetrievalSpec) -> tuple[int, int]:
    """``(tokens, budget)``: what the database's whole schema takes in this run's prompts, and
    what they can give it."""
    return schema_tokens(ctx, spec, ctx.db.schema), schema_budget(ctx, spec)


def over_budget(ctx: StepContext, spec: RetrievalSpec) -> bool:
    """Whether the database's whole schema is too long for this run's prompts."""
    tokens, budget = whole_schema_fit(ctx, spec)
    return tokens > budget


class Retrieving:
    """Mixed into a :class:`~agents.core.engine.Pipeline` whose ``steps`` start with
    :func:`retrieval_step`: the run starts there only when the schema is over the budget, and
    otherwise at :meth:`start_step`, exactly as the pipeline would without retrieval."""

    retrieval: RetrievalSpec

    def first_step(self, ctx: StepContext) -> str:
        return RETRIEVE if over_budget(ctx, self.retrieval) else self.start_step(ctx)

    def start_step(self, ctx: StepContext) -> str:
        """The pipeline's own first step (after retrieval)."""
        return next(s.name for s in self.steps if s.name != RETRIEVE)


def retrieval_step(then: tuple[str, ...]) -> Step:
    """The ``retrieve`` step, followed by one of ``then`` (the pipeline's possible starts)."""
    return Step(RETRIEVE, "Schema Retriever", retrieve,
                "Keep the tables the question needs within the prompt budget", then=then)


def retrieve(ctx: StepContext) -> str:
    spec: RetrievalSpec = ctx.pipeline.retrieval
    schema = ctx.db.schema
    budget = schema_budget(ctx, spec)
    whole = schema_tokens(ctx, spec, schema)
    ctx.set_inputs(tables=len(schema.tables), columns=sum(len(t.columns) for t in schema.tables),
                   budget=budget, schema_tokens=whole)
    if budget <= 0:
        raise StepError(f"the prompts leave no room for any schema: the model's context of "
                        f"{context_size(ctx.llm):,} tokens is taken by the instructions, the "
                        f"answer and the question; raise the context ({context_setting(ctx.llm)})")
    ranked = candidates(ctx.db, ctx.question, ctx.run.evidence)
    if not ranked.matched:
        ctx.note("no table matches the question's words or values: tables kept in "
                 "database order")
    cost = form_cost(spec.forms(ctx.params))
    try:
        result, first = ranked.chosen(cost, budget, bool(ctx.params.get(WHOLE_PART)))
    except NothingFits as exc:
        raise StepError(f"the schema is too large for the model's context: {exc}. Raise the "
                        f"context ({context_setting(ctx.llm)}) or ask about a smaller "
                        f"database") from None
    ranking = ranked.ranking
    best = max(ranking.scores.values(), default=0.0)
    ctx.data[STATE_KEY] = result.selection
    ctx.data.pop(FIRST_KEY, None)
    if first:
        ctx.data[FIRST_KEY] = first
    kept = schema.subset(result.selection)
    ctx.set_output(SchemaRetrieval(
        kept=[_row(schema, kept, name, result.reasons[name], ranking, best) for name in
              sorted((t.name for t in kept.tables), key=ranking.order.index)],
        dropped=len(schema.tables) - len(kept.tables),
        dropped_best=[n for n in ranking.order if n not in result.selection
                      and ranking.own.get(n, 0.0) > 0][:SHOWN_DROPPED],
        apart=[n for n in ranked.apart if n not in result.selection],
        tables=len(schema.tables), columns=sum(len(t.columns) for t in schema.tables),
        budget=budget, tokens=result.tokens, schema_tokens=whole,
        context=context_size(ctx.llm), values=[m.condition() for m in ranked.grounding.matches],
        first=first))
    return ctx.pipeline.start_step(ctx)


@dataclass
class Candidates:
    """The tables retrieval would keep for a question, best first (``order``), before the
    budget: the ranking, the stored values it ranked with, and the tables over the floor that
    :data:`PART_FLOOR` set apart; ``matched`` is False when no table matched at all and the
    tables are taken in database order."""

    schema: Schema
    ranking: Ranking
    grounding: Grounding
    order: list[str]
    apart: list[str]
    matched: bool
    parts: Parts

    def fitted(self, cost, budget: int) -> Fit:
        """What of ``order`` fits ``budget`` (measured by ``cost``). Raises
        :class:`NothingFits`."""
        return fit(self.schema, self.order, self.ranking.columns, cost, budget)

    def chosen(self, cost, budget: int, keep_whole_part: bool) -> tuple[Fit, list[str]]:
        """What fits ``budget``, completed with the best table's whole part when
        ``keep_whole_part``, and the tables to write first (``[]`` for none). Raises
        :class:`NothingFits`."""
        result = self.fitted(cost, budget)
        return self.completed(result, cost, budget) if keep_whole_part else (result, [])

    def completed(self, result: Fit, cost, budget: int) -> tuple[Fit, list[str]]:
        """``result`` with its best table's whole part, and that part's tables to write
        first (:func:`.whole_part.whole_part`)."""
        return whole_part(self.schema, self.parts, result, self.ranking.order,
                          self.ranking.scores, cost, budget)


def candidates(db, question: str, evidence: str | None, floor: float = RELATIVE_FLOOR,
               part_floor: float = PART_FLOOR,
               part_coverage: float = PART_COVERAGE) -> Candidates:
    """Rank ``db``'s tables for the question and apply the floors and the part rules
    (``part_floor`` or ``part_coverage`` 0: that rule off)."""
    schema = db.schema
    grounding = ground_question(db, question, GROUNDING)
    ranking = rank(schema, question, evidence or "", grounding.matches)
    over = over_floor(ranking, floor)
    parts = schema_parts(schema)
    order = part_rules(over, ranking, parts, part_floor, part_coverage)
    return Candidates(schema=schema, ranking=ranking, grounding=grounding,
                      order=order or list(ranking.order),
                      apart=[n for n in over if n not in order], matched=bool(over),
                      parts=parts)


def choose(db, question: str, evidence: str | None, cost, budget: int,
           floor: float = RELATIVE_FLOOR, part_floor: float = PART_FLOOR,
           part_coverage: float = PART_COVERAGE) -> tuple[Candidates, Fit]:
    """The Schema Retriever's choice, with no run around it (benchmarks replay it): the
    candidates for the question, and what of them fits ``budget`` (measured by ``cost``;
    :meth:`Candidates.completed` adds the best table's whole part). Raises
    :class:`NothingFits`."""
    found = candidates(db, question, evidence, floor, part_floor, part_coverage)
    return found, found.fitted(cost, budget)


def over_floor(ranking, floor: float = RELATIVE_FLOOR, parts=None,
               part_floor: float = PART_FLOOR, part_coverage: float = PART_COVERAGE) -> list[str]:
    """The ranked tables, best first, that match at all and score at least ``floor`` times
    the best one; given the schema's ``parts``, less those the part rules leave out
    (:func:`part_rules`)."""
    best = max(ranking.scores.values(), default=0.0)
    over = [name for name in ranking.order
            if ranking.scores[name] > 0 and ranking.scores[name] >= floor * best]
    if parts is None:
        return over
    return part_rules(over, ranking, parts, part_floor, part_coverage)


def part_rules(over: list[str], ranking, parts: Parts, part_floor: float = PART_FLOOR,
               part_coverage: float = PART_COVERAGE) -> list[str]:
    """``over`` less the tables of a part whose best table scores under ``part_floor`` of the
    best (:func:`.parts.strong_parts`), then of a part that covers under ``part_coverage`` of
    the question's words the best-covering part covers (:func:`.parts.covering_parts`); 0
    turns a rule off."""
    order = strong_parts(over, ranking.scores, parts, part_floor) if part_floor else over
    if part_coverage:
        order = covering_parts(order, ranking.matched, ranking.valued, parts, part_coverage)
    return order


def _row(schema: Schema, kept: Schema, name: str, reason: str, ranking, best: float) -> dict:
    """One kept table for the trace; ``linked`` names the neighbour only when its share is
    what lifted the table over the floor."""
    lifted = ranking.own.get(name, 0.0) < RELATIVE_FLOOR * best <= ranking.scores.get(name, 0.0)
    return {"table": name, "reason": reason, "score": round(ranking.scores.get(name, 0.0), 3),
            "columns": len(kept.table(name).columns), "of": len(schema.table(name).columns),
            "words": ranking.matched.get(name, []), "value": name in ranking.valued,
            "linked": ranking.linked.get(name, "") if lifted else ""}
