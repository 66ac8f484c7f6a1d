"""SQL generation (Section 2.3, Appendix B.3) with few-shot examples by question template.

The prompt follows the paper's structure <F, D, H-FK, I, Q, H, S>: few-shot examples, the
database (the filtered sub-schema), the foreign-key "link info", the instruction, the question,
and the hint and specification of the question type. EASY questions get neither link info nor a
join hint; JOIN questions the join hint; NESTED and JOIN-NESTED the nested-query hint. With
classification off, every question gets the JOIN prompt (the paper's fixed-hint ablation).

Few-shot examples come from the example bank in ``ctx.services["examples"]``, searched by
question skeleton (entities and schema mentions masked) within the question type; when the type
has too few examples the rest come from the other types. Without a bank the step runs zero-shot.

The ``compact`` variant keeps the type's hint and the examples but orders the prompt for reuse
and for a small model: the instructions and the hint first, then the schema and its foreign keys,
then the examples (said to come from other databases: their tables were copied), the key
information and the question. Its specification says to use only the schema's names and to join
a table only for a column the query needs. It never mentions LIMIT: on a 1.5B model, the
LIMITs no question asked for (LIMIT 10, LIMIT 1) all came from the JOIN prompt, whose "LIMIT
just is used when ..." rule names it; the EASY prompt, which has no such rule, drew none.
"""

from __future__ import annotations

import json

from agents.core.engine import ParseError, StepContext
from .outputs import FewShotGeneration
from ...example_bank import EASY, JOIN
from agents.llm.parsing import extract_json
from agents.llm.prompts import load
from .shared import (COMPACT, HERE, PAPER, SQL_ANSWER_SCHEMA, foreign_key_lines, hint_text,
                     main_metric, parse_sql, prompt, table_info, variant, working_schema)

MAX_TOKENS = 400
FEW_SHOT_HEADER = ("Some example questions and corresponding SQL queries are provided based on "
                   "similar problems:\n")
COMPACT_FEW_SHOT_HEADER = ("Examples from other databases (follow their form, not their table or "
                           "column names):\n")


def template_for(qtype: str | None, style: str = PAPER) -> str:
    """The prompt file for a question type (None: classification off, the fixed hint) and
    variant."""
    if qtype == EASY:
        name = "generation_easy"
    elif qtype in (JOIN, None):
        name = "generation_join"
    else:
        name = "generation_nested"
    return f"{name}_compact" if style == COMPACT else name


def prompt_hint(qtype: str | None, style: str | None = PAPER) -> tuple[str, str | None]:
    """``(prompt name, its "### HINT:" line or None)`` for a question type, so a view can say
    which hint the generation was given without reading the prompt file itself."""
    template = template_for(qtype, style or PAPER)
    for line in load(str(HERE), template).splitlines():
        if line.startswith("### HINT:"):
            return template, line[len("### HINT:"):].strip()
    return template, None


def parse_answer(text: str) -> str:
    """``{"sql": "..."}`` as asked; a bare or fenced SELECT is accepted too."""
    try:
        value = extract_json(text)
    except ParseError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("sql"), str) and value["sql"].strip():
        return parse_sql(value["sql"])
    try:
        return parse_sql(text)
    except ParseError:
        raise ParseError('answer with a JSON object {"sql": "SELECT ..."}') from None


def retrieve_examples(ctx: StepContext, qtype: str | None) -> list[dict]:
    """Up to ``few_shot`` examples of the question's type, most similar template first."""
    k = ctx.params["few_shot"]
    bank = ctx.services.get("examples")
    if k <= 0:
        ctx.note("few-shot examples are off (few_shot=0): zero-shot generation")
        return []
    if bank is None or not hasattr(bank, "search"):
        ctx.note("no example bank available: zero-shot generation")
        return []
    if not len(bank):
        ctx.note("the example bank is empty: zero-shot generation")
        return []
    exclude = ctx.db.name if ctx.params["exclude_same_db_examples"] else None
    query = dict(k=k, exclude_db=exclude, entities=ctx.data.get("entities") or [],
                 schema=ctx.schema)
    found = bank.search(ctx.question, qtype=qtype, **query)
    if qtype is not None and len(found) < k:
        chosen = {(e.question, e.sql) for e in found}
        extra = [e for e in bank.search(ctx.question, **query)
                 if (e.question, e.sql) not in chosen]
        if extra[:k - len(found)]:
            ctx.note(f"only {len(found)} {qtype} example(s) matched; "
                     f"{len(extra[:k - len(found)])} of other types added")
        found += extra[:k - len(found)]
    if not found:
        ctx.note("no similar example in the bank: zero-shot generation")
    return [{"question": e.question, "sql": " ".join(e.sql.split()), "qtype": e.qtype,
             "db_id": e.db_id, "source": e.source, "score": e.score,
             **({"author": e.author} if e.author else {})} for e in found]


def few_shot_text(examples: list[dict], header: str = FEW_SHOT_HEADER) -> str:
    if not examples:
        return ""
    body = "".join(f"{e['question']}\n{json.dumps({'sql': e['sql']}, ensure_ascii=False)}\n\n"
                   for e in examples)
    return header + body


def link_info(ctx: StepContext, schema, qtype: str | None) -> str:
    """The H-FK block: join conditions among the kept tables (not for EASY questions)."""
    if qtype == EASY or not ctx.params["foreign_key_hint"]:
        return ""
    lines = foreign_key_lines(schema)
    return "Foreign keys:\n" + "\n".join(lines) + "\n" if lines else ""


def key_info_text(ctx: StepContext) -> str:
    info = ctx.data.get("key_info") or []
    return "Key information:\n" + "".join(f"- {line}\n" for line in info) if info else ""


def run(ctx: StepContext) -> str:
    qtype = ctx.data.get("qtype")
    schema = working_schema(ctx)
    examples = retrieve_examples(ctx, qtype)
    ctx.data["examples"] = examples
    style = variant(ctx)
    template = template_for(qtype, style)
    ctx.set_inputs(question_type=qtype or "fixed hint", template=template,
                   tables=schema.table_names(), examples=len(examples), variant=style)
    header = COMPACT_FEW_SHOT_HEADER if style == COMPACT else FEW_SHOT_HEADER
    sql = ctx.ask(prompt(template, few_shot=few_shot_text(examples, header),
                         table_info=table_info(schema),
                         link_info=link_info(ctx, schema, qtype), main_metric=main_metric(ctx),
                         key_info=key_info_text(ctx), question=ctx.question.strip(),
                         hint=hint_text(ctx.evidence)),
                  parse=parse_answer, json_schema=SQL_ANSWER_SCHEMA, max_tokens=MAX_TOKENS)
    ctx.data["sql"] = sql
    ctx.data["generated_sql"] = sql
    result = ctx.execute(sql)
    if not result.ok:
        ctx.note(f"the SQL fails ({result.error}); the later steps may fix it")
    ctx.set_output(FewShotGeneration(
        question_type=qtype, template=template,
        examples=[{k: e[k] for k in ("question", "sql", "qtype", "score")} for e in examples]),
        sql=sql)
    return "self_correction"
