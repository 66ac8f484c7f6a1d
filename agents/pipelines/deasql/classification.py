"""Classification & hint (Appendix B.2): is the question a JOIN and/or a NESTED problem?

The two labels give DEA-SQL's four question types, EASY, JOIN, NESTED and JOIN-NESTED, which
pick the SQL generation prompt (hint and specification), whether the foreign-key link info is
shown, and which few-shot examples are retrieved.

In the ``compact`` variant a JOIN label is dropped when the filtered schema holds one table
(JOIN becomes EASY, JOIN-NESTED becomes NESTED): a small model labelled single-table questions
JOIN, and the join hint and join examples then had it join a table copied from the examples.
"""

from __future__ import annotations

import re

from agents.core.engine import ParseError, StepContext
from .outputs import Classification
from ...example_bank import EASY, JOIN, JOIN_NESTED, NESTED
from .shared import COMPACT, prompt, table_info, variant, working_schema

MAX_TOKENS = 400
_JOIN = re.compile(r"\b(NON[- ]?)?JOIN\b", re.IGNORECASE)
_NESTED = re.compile(r"\b(NON[- ]?)?NESTED\b", re.IGNORECASE)
_LABEL = re.compile(r"label\s*[:：]\s*(.+)", re.IGNORECASE)


def parse_label(text: str) -> dict:
    """``{"label", "question_type", "reasoning"}`` from the model's answer.

    The "Label:" line wins; without one, the last JOIN/NESTED labels in the text are taken
    ("Thus the SQL query can be classified as JOIN, NON-NESTED").
    """
    text = (text or "").strip()
    labels = _LABEL.findall(text)
    region = labels[-1] if labels else text
    direct = re.search(r"\b(JOIN-NESTED|EASY)\b", region)
    joins, nests = _JOIN.findall(region), _NESTED.findall(region)
    if direct and not (joins and nests):
        qtype = direct.group(1)
    elif joins and nests:
        qtype = _qtype(not joins[-1], not nests[-1])
    else:
        raise ParseError("end the answer with a line 'Label: <NON-JOIN or JOIN>, "
                         "<NON-NESTED or NESTED>'")
    label = f"{'JOIN' if qtype in (JOIN, JOIN_NESTED) else 'NON-JOIN'}, " \
            f"{'NESTED' if qtype in (NESTED, JOIN_NESTED) else 'NON-NESTED'}"
    reasoning = _LABEL.split(text)[0].strip() if labels else text
    return {"label": label, "question_type": qtype, "reasoning": reasoning}


def _qtype(join: bool, nested: bool) -> str:
    if join and nested:
        return JOIN_NESTED
    return JOIN if join else (NESTED if nested else EASY)


def run(ctx: StepContext) -> str:
    ctx.data["qtype"] = None
    if not ctx.params["classification"]:
        ctx.set_output(Classification(question_type=None, variant=variant(ctx)))
        ctx.skip("classification is off: SQL generation uses one fixed hint for every question")
        return "sql_generation"
    schema = working_schema(ctx)
    style = variant(ctx)
    ctx.set_inputs(tables=schema.table_names(), variant=style)
    answer = ctx.ask(prompt("classification", table_info=table_info(schema),
                            question=ctx.question.strip()),
                     parse=parse_label, max_tokens=MAX_TOKENS)
    qtype = answer["question_type"]
    if style == COMPACT and len(schema.tables) == 1 and qtype in (JOIN, JOIN_NESTED):
        answer["question_type"] = NESTED if qtype == JOIN_NESTED else EASY
        ctx.note(f"labelled {qtype}, but the schema it was given has one table: "
                 f"{answer['question_type']} is used")
    ctx.data["qtype"] = answer["question_type"]
    ctx.set_output(Classification(**answer, variant=style))
    return "sql_generation"
