"""Elements identification, stage one of DEA-SQL's information determination (Appendix B.0.1).

The question is broken into its entities and rewritten without the unnecessary content; the
rewritten question is the ``[main_metric]`` the later prompts ask the model to think about,
and the entities guide the information filter and mask the question for few-shot retrieval.
"""

from __future__ import annotations

from agents.core.engine import ParseError, StepContext
from .outputs import Elements
from agents.llm.parsing import extract_json
from .shared import hint_text, prompt

ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"entities": {"type": "array", "items": {"type": "string"}},
                   "query": {"type": "string"}},
    "required": ["entities", "query"],
}
MAX_TOKENS = 300


def parse_answer(text: str) -> dict:
    value = extract_json(text)
    if not isinstance(value, dict):
        raise ParseError('expected a JSON object {"entities": [...], "query": "..."}')
    entities = value.get("entities", value.get("query_entities"))
    if isinstance(entities, str):
        entities = entities.split(",")
    if not isinstance(entities, list):
        raise ParseError('"entities" must be a list of strings')
    extra = value.get("hint_entities")
    if isinstance(extra, list):
        entities = entities + extra
    cleaned: list[str] = []
    for entity in entities:
        text_value = str(entity).strip() if isinstance(entity, (str, int, float)) else ""
        if text_value and text_value not in cleaned:
            cleaned.append(text_value)
    query = value.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ParseError('"query" must be the rewritten question, as a string')
    return {"entities": cleaned, "query": query.strip()}


def run(ctx: StepContext) -> str:
    ctx.set_inputs(question=ctx.question, evidence=ctx.evidence or None)
    answer = ctx.ask(prompt("elements", question=ctx.question.strip(),
                            hint=hint_text(ctx.evidence)),
                     parse=parse_answer, json_schema=ANSWER_SCHEMA, max_tokens=MAX_TOKENS)
    ctx.data["entities"] = answer["entities"]
    ctx.data["main_metric"] = answer["query"]
    ctx.set_output(Elements(entities=answer["entities"], rewritten_question=answer["query"]))
    if not answer["entities"]:
        ctx.note("no entities found; the information filter works from the question alone")
    return "information_filter"
