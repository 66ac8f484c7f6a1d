"""The generators: the studio's own writers, each asked once for a candidate query.

A generator is another pipeline's writing agent, called through that pipeline's own prompt
files and parsers (never a copy of them), so a candidate here is what that agent writes there:

- ``writer``: the baseline's one prompt (commented CREATE TABLE schema, question, SQL out);
- ``sample1``, ``sample2``, ...: the same prompt sampled at a higher temperature. Its bytes are
  the writer's, so the local server processes it once per question and a sample costs only its
  few dozen output tokens;
- ``decomposer``: MAC-SQL's Decomposer (sub-questions with SQL; the last one answers), with
  the prompt this pipeline's ``decomposer_prompt`` names (MAC-SQL's choices; ``graded`` by
  default, as in MAC-SQL);
- ``cot``: R³'s SQL-Writer (chain of thought, with related examples from the example bank);
- ``fewshot``: DEA-SQL's SQL generation with examples by question template, given the paper's
  fixed JOIN hint (its "w/o classification" setting: the classification step is not run here),
  in the paper's prompt whichever variant is DEA-SQL's default.

Values the grounding step found enter every generator as part of the question's evidence (the
writer's ``Hint:``, MAC-SQL's ``[Evidence]``, R³'s ``### EVIDENCE:``, DEA-SQL's ``hint:``),
after the schema, so the long schema prefix of each prompt stays the same for every question on
a database. Functions of R³ and DEA-SQL read their own parameters and state from the step
context; :class:`Borrowed` hands them a view of this run's context with that pipeline's defaults.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from agents.core.engine import ParamSpec, StepContext
from agents.llm.parsing import extract_sql
from agents.llm.prompts import load, render
from .. import baseline
from ..common import evidence_text, macsql_schema, user_message
from ..deasql import PIPELINE as DEASQL
from ..deasql import sql_generation
from ..deasql.shared import PAPER, SQL_ANSWER_SCHEMA, hint_text, main_metric, table_info
from ..deasql.shared import prompt as deasql_prompt
from ..macsql import decomposer
from ..r3 import PIPELINE as R3
from ..r3 import steps as r3_steps
from ..r3.replies import parse_writer_reply

WRITER_MAX_TOKENS = 400  # the one-prompt writer answers in about 40 tokens; a sample may ramble
DECOMPOSER_MAX_TOKENS = 700
_SAMPLE = re.compile(r"sample(\d+)\Z")


class WithParams:
    """The step context with some of its parameters replaced: a repair rebuilding the prompt
    its candidate was written with. Everything not set here is the context's."""

    def __init__(self, ctx: StepContext, **params: Any):
        self._ctx = ctx
        self.params = {**ctx.params, **params}

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ctx, name)


class Borrowed(WithParams):
    """The step context as another pipeline's functions expect it: that pipeline's parameters
    (its defaults, with the overrides given), a state of its own, and the grounded evidence;
    everything else (question, schema, database, services, notes) is this run's."""

    def __init__(self, ctx: StepContext, pipeline, params: dict, evidence: str,
                 data: dict | None = None):
        super().__init__(ctx)
        self.params = pipeline.resolve_params(params)
        self.evidence = evidence
        self.data = data or {}


@dataclass(frozen=True)
class Generator:
    """How one writer is asked: its prompt, its parser, its output limit and its examples.

    ``messages(ctx, evidence, examples)`` builds the prompt; ``parse(text)`` returns
    ``{"sql", "sub_questions"?, "reasoning"?}``; ``examples(ctx)`` retrieves few-shot examples
    (None: the writer takes none); ``prompt_param`` is the parameter choosing among the writer's
    prompts when it has more than one: the candidate records its value, so the trace says which
    ran and a repair rebuilds that prompt even in a run resumed with another value. The prompt
    is a pure function of its inputs, so a repair step rebuilds exactly the conversation the
    candidate came from.
    """

    name: str
    method: str
    messages: Callable[[StepContext, str, list], list[dict]]
    parse: Callable[[str], dict]
    max_tokens: int | None = None
    json_schema: dict | None = None
    examples: Callable[[StepContext], list[dict]] | None = None
    sampled: bool = False
    prompt_param: str | None = None


def _writer_messages(ctx: StepContext, evidence: str, examples: list) -> list[dict]:
    prompt = render(load(str(baseline.HERE), "writer"), schema=schema_text(ctx),
                    question=baseline.question_text(ctx.question, evidence))
    return user_message(prompt)


def schema_text(ctx: StepContext) -> str:
    """The schema as the writer and the selection agent see it (the same bytes in both)."""
    return baseline.schema_text(ctx.schema, "ddl")


def _decomposer_messages(ctx: StepContext, evidence: str, examples: list) -> list[dict]:
    desc_str, fk_str = macsql_schema(ctx.schema)
    variant = decomposer.PROMPTS[ctx.params["decomposer_prompt"]]
    prompt = render(load(str(decomposer.HERE), variant), desc_str=desc_str, fk_str=fk_str,
                    query=ctx.question.strip(), evidence=evidence_text(evidence))
    return user_message(prompt)


def _example_params(ctx: StepContext, count_name: str) -> dict:
    return {count_name: ctx.params["examples"],
            "exclude_same_db_examples": ctx.params["exclude_same_db_examples"]}


def _cot_examples(ctx: StepContext) -> list[dict]:
    return r3_steps.related_examples(Borrowed(ctx, R3, _example_params(ctx, "k"), ctx.evidence))


def _cot_messages(ctx: StepContext, evidence: str, examples: list) -> list[dict]:
    # R³'s paper writer (chain of thought), whatever R³'s own default is
    view = Borrowed(ctx, R3, {"writer_style": "cot"}, evidence, {"examples": examples})
    return [{"role": "user", "content": r3_steps.first_writer_prompt(view)}]


def _cot_parse(text: str) -> dict:
    reply = parse_writer_reply(text)
    return {"sql": reply.sql, "reasoning": reply.text}


def _fewshot_examples(ctx: StepContext) -> list[dict]:
    view = Borrowed(ctx, DEASQL, {**_example_params(ctx, "few_shot"), "variant": PAPER},
                    ctx.evidence)
    return sql_generation.retrieve_examples(view, None)


def _fewshot_messages(ctx: StepContext, evidence: str, examples: list) -> list[dict]:
    view = Borrowed(ctx, DEASQL, {"variant": PAPER}, evidence)
    return deasql_prompt(
        sql_generation.template_for(None, PAPER), few_shot=sql_generation.few_shot_text(examples),
        table_info=table_info(ctx.schema), main_metric=main_metric(view),
        link_info=sql_generation.link_info(view, ctx.schema, None), key_info="",
        question=ctx.question.strip(), hint=hint_text(evidence))


def _sql_only(parse: Callable[[str], str]) -> Callable[[str], dict]:
    return lambda text: {"sql": parse(text).strip()}


GENERATORS: dict[str, Generator] = {g.name: g for g in [
    Generator("writer", "the baseline's one prompt", _writer_messages, _sql_only(extract_sql),
              WRITER_MAX_TOKENS),
    Generator("decomposer", "MAC-SQL's Decomposer (sub-questions)", _decomposer_messages,
              decomposer.parse_answer, DECOMPOSER_MAX_TOKENS, prompt_param="decomposer_prompt"),
    Generator("cot", "R³'s SQL-Writer (chain of thought)", _cot_messages, _cot_parse,
              r3_steps.WRITER_MAX_TOKENS, examples=_cot_examples),
    Generator("fewshot", "DEA-SQL's generation (few-shot, JOIN hint)", _fewshot_messages,
              _sql_only(sql_generation.parse_answer), sql_generation.MAX_TOKENS,
              json_schema=SQL_ANSWER_SCHEMA, examples=_fewshot_examples),
]}
SAMPLE = Generator("sample", "the baseline's one prompt, sampled", _writer_messages,
                   _sql_only(extract_sql), WRITER_MAX_TOKENS, sampled=True)


def sample_number(candidate: str) -> int:
    """``sample2`` -> 2: the seed that keeps a run's samples of one prompt apart and repeatable
    (0 for a name that is not a sample)."""
    found = _SAMPLE.match(candidate)
    return int(found.group(1)) if found else 0


def generator_for(candidate: str) -> Generator:
    """The generator behind a candidate name (``writer``, ``sample2``, ...)."""
    if candidate in GENERATORS:
        return GENERATORS[candidate]
    if _SAMPLE.match(candidate):
        return SAMPLE
    raise ValueError(f"{candidate!r} is not a generator; choose from "
                     f"{', '.join(GENERATORS)} or sample<N>")


@dataclass
class GeneratorList(ParamSpec):
    """A parameter naming generators, comma-separated, in order of trust (ties go to the
    first); unknown names are refused when the parameter is set, not in the middle of a run."""

    def coerce(self, value: Any) -> str:
        names = [n.strip().lower() for n in re.split(r"[,;\s]+", str(value)) if n.strip()]
        unknown = [n for n in names if n not in GENERATORS]
        if unknown:
            raise ValueError(f"{self.name}: unknown generator {unknown[0]!r}; choose from "
                             f"{', '.join(GENERATORS)}")
        return ",".join(dict.fromkeys(names))


def plan(params: dict) -> tuple[list[str], list[str]]:
    """``(run order, priority)`` of the candidates.

    The samples run right after the writer, whose prompt they repeat, so the server still holds
    it; in the vote's priority they come after every named generator. With ``draft_first`` the
    writer, the cheapest candidate (one short prompt, a few seconds), runs first, so the page
    has a draft answer while the others are written; only the order of execution changes, the
    order of trust (ties, the selection agent's options) stays as ``generators`` says.
    """
    named = [n for n in str(params["generators"]).split(",") if n]
    samples = [f"sample{i}" for i in range(1, int(params["samples"]) + 1)]
    if params.get("draft_first") and "writer" in named:
        return ["writer", *samples, *[n for n in named if n != "writer"]], named + samples
    at = named.index("writer") + 1 if "writer" in named else 0
    return named[:at] + samples + named[at:], named + samples


def priority(params: dict, ran: list[str] = ()) -> list[str]:
    """The vote's tie order, most trusted first, read from the run's parameters when it is
    needed (not kept in the state), so a run resumed with another ``generators`` order votes
    in that order on the candidates it already has. Candidates of the run's plan (``ran``)
    that the parameters no longer name come last, in plan order."""
    order = plan(params)[1]
    return order + [name for name in ran if name not in order]
