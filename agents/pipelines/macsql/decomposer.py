"""MAC-SQL's Decomposer: split the question into sub-questions and write SQL for each in turn.

The prompt is the paper's (Appendix A.2) with its two demonstrations, by default with a third
showing a simple question answered in one step (``graded``, see ``PROMPTS``); the answer is
chain-of-thought text of "Sub question N: ... SQL ```sql ...```" pairs, and, as in Algorithm 1,
the SQL of the last sub-question is the answer to the whole question. Small models drift from
the format (no numbering, bold headings, another invented example after "Question Solved."), so
parsing keys on the SQL blocks and treats the headings as labels only.
"""

from __future__ import annotations

import re
from pathlib import Path

from sqlglot import exp

from agents.core.engine import ParseError, StepContext
from ...outputs import Decomposition
from agents.llm.parsing import extract_sql_blocks
from agents.llm.prompts import load, render
from agents.db.sqltext import parse_statement
from agents.rules.unread_joins import tables_named
from ..common import evidence_text, macsql_schema, user_message
from agents.rules.demonstration import template
from .values import shown_evidence, shown_schema

HERE = Path(__file__).parent
# decomposer_prompt parameter -> prompt file. The compact variant keeps the paper's constraints
# and answer format but drops the two demonstrations: on a 1.5B model their two-table joins were
# copied into one-table questions, and their multi-step answers ended on a sub-question's SQL.
# The graded variant keeps the paper's prompt whole and adds what Section 3.3 says the
# Decomposer does with a simple question -- answer it with one SQL directly -- as one sentence
# and a third demonstration: on a 1.5B model the two multi-step demonstrations alone made it
# split simple questions too, and its split answers were right far less often than its
# one-step ones.
PROMPTS = {"graded": "decomposer_graded", "paper": "decomposer",
           "compact": "decomposer_compact"}
# Static prompt tokens a variant adds to the paper's prompt (the graded one's sentence and third
# demonstration), which retrieval must leave room for besides a pipeline's own reserve.
EXTRA_PROMPT_TOKENS = {"graded": 700}


def extra_reserve(params: dict) -> int:
    """Tokens the ``decomposer_prompt`` these parameters choose needs beyond the paper's."""
    return EXTRA_PROMPT_TOKENS.get(params.get("decomposer_prompt", ""), 0)

_HEADING = re.compile(r"^[ \t>*#_-]*sub[ \t-]*question[ \t]*(\d+)?[ \t*_]*[:.)][ \t*_]*(.*)$",
                      re.IGNORECASE | re.MULTILINE)
# What a model writes when it starts inventing a further demonstration after its answer.
_END = re.compile(r"question solved|^={5,}", re.IGNORECASE | re.MULTILINE)


def parse_answer(text: str) -> dict:
    """``{"sub_questions": [{"question", "sql"}], "sql": final}`` from the model's text."""
    answer = _END.split(text, maxsplit=1)[0]
    if not extract_sql_blocks(answer):  # the end marker came before any SQL: use everything
        answer = text
    headings = list(_HEADING.finditer(answer))
    pairs: list[dict] = []
    if headings:
        # text before the first heading may hold SQL too; every block after a heading is
        # paired with it, any further block in the same part stands on its own
        pairs += [{"question": "", "sql": b} for b in extract_sql_blocks(
            answer[:headings[0].start()])]
        for i, match in enumerate(headings):
            end = headings[i + 1].start() if i + 1 < len(headings) else len(answer)
            blocks = extract_sql_blocks(answer[match.end():end])
            label = match.group(2).strip(" *_")
            pairs += [{"question": label if k == 0 else "", "sql": b}
                      for k, b in enumerate(blocks)]
    else:
        pairs = [{"question": "", "sql": b} for b in extract_sql_blocks(answer)]
    if not pairs:
        raise ParseError("no SQL found; write each sub question followed by its SQL in a "
                         "```sql code block")
    return {"sub_questions": pairs, "sql": pairs[-1]["sql"]}


def run(ctx: StepContext) -> str:
    selection = ctx.data.get("selection")
    desc_str, fk_str = macsql_schema(shown_schema(ctx), selection)
    tables = list(selection) if selection else ctx.schema.table_names()
    variant = ctx.params["decomposer_prompt"]
    ctx.set_inputs(tables=tables, selected=bool(selection), prompt=variant)
    prompt = render(load(str(HERE), PROMPTS[variant]), desc_str=desc_str, fk_str=fk_str,
                    query=ctx.question.strip(), evidence=evidence_text(shown_evidence(ctx)))
    answer = ctx.ask(user_message(prompt), parse=parse_answer)
    ctx.data["sub_questions"] = answer["sub_questions"]
    ctx.data["sql"] = answer["sql"]
    ctx.data["refine_attempts"] = 0
    ctx.set_output(Decomposition(sub_questions=answer["sub_questions"]), sql=answer["sql"])
    copied = copied_tables(answer["sql"], ctx.schema, PROMPTS[variant])
    if copied:
        ctx.note(f"the SQL names {', '.join(map(repr, copied))}, not a table of this database: "
                 "copied from the prompt's worked example")
    return "refiner"


_EXAMPLE_TABLE = re.compile(r"^# Table: (\S+)", re.MULTILINE)


def copied_tables(sql: str, schema, prompt_name: str) -> list[str]:
    """Tables ``sql`` names that the database does not have and the prompt's worked examples
    list as tables (the paper's banking ``district``, ``account``...): the reader of the trace
    is told where they came from. A word the prompt only uses in its instructions, or a name
    the SQL gives a subquery of its own, is no such table."""
    example_tables = {t.casefold() for t in _EXAMPLE_TABLE.findall(template(str(HERE),
                                                                            prompt_name))}
    unknown = {name for name in tables_named(sql)
               if schema.table(name) is None and name in example_tables}
    if unknown:  # rare: only then is the SQL read again for the names of its own subqueries
        tree = parse_statement(sql)
        unknown -= {cte.alias.casefold() for cte in tree.find_all(exp.CTE)} if tree else set()
    return sorted(unknown)
