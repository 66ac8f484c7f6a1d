"""What the DEA-SQL agents share: prompt files, the question's schema view and SQL answers.

Every agent after the information filter sees the same sub-schema text (rendered the same way
from the same selection), and every prompt puts its fixed instructions first, then the schema,
then the question, so the local server can reuse the key/value cache of a repeated prefix.
The SQL generation prompt is the exception by design: the paper's structure starts with the
few-shot examples, which differ per question (the compact variant's generation prompts put them
after the schema).

:func:`variant` is the pipeline's ``variant`` parameter: ``compact`` (the default), for small
models, or ``paper``.
"""

from __future__ import annotations

import re
from pathlib import Path

from agents.core.engine import ParseError, StepContext
from agents.llm.parsing import extract_sql
from agents.llm.prompts import load, render
from agents.db.schema_ddl import DDLLayout, render_create_tables

HERE = Path(__file__).parent

SQL_ANSWER_SCHEMA = {"type": "object", "properties": {"sql": {"type": "string"}},
                     "required": ["sql"]}
MAX_EXAMPLES = 3  # example values per text column in the table info
MAX_VALUE_CHARS = 30  # longer values are free text, not something a WHERE clause matches
TABLE_INFO = DDLLayout(examples="table", text_examples_only=True, max_value_chars=MAX_VALUE_CHARS,
                       max_examples=MAX_EXAMPLES)
_QUERY_START = re.compile(r"(?is)^\s*(select|with)\b")
PAPER = "paper"
COMPACT = "compact"


def variant(ctx: StepContext) -> str:
    """Which variant of the pipeline runs: the paper's, or the one for small models."""
    return ctx.params["variant"]


def prompt(name: str, **values: object) -> list[dict]:
    """The prompt file ``prompts/<name>.txt`` filled in, as a one-message chat."""
    return [{"role": "user", "content": render(load(str(HERE), name), **values)}]


def hint_text(evidence: str | None) -> str:
    """The evidence as a ``hint:`` line after the question (nothing when there is none)."""
    text = (evidence or "").strip()
    return f"\nhint: {text}" if text else ""


def working_schema(ctx: StepContext):
    """The schema the later agents see: the information filter's selection, or all of it."""
    selection = ctx.data.get("selection")
    return ctx.schema.subset(selection) if selection else ctx.schema


def table_info(schema) -> str:
    """The paper's ``[table_info]``: CREATE TABLE statements, each followed by a comment with a
    few short example values of its text columns, so literals in WHERE clauses match the data
    (the paper's prompts leave the values out; a small model guesses them wrong otherwise)."""
    return render_create_tables(schema, TABLE_INFO)


def foreign_key_lines(schema) -> list[str]:
    return [line.strip() for line in schema.render_foreign_keys().splitlines() if line.strip()]


def main_metric(ctx: StepContext) -> str:
    """The rewritten question from elements identification (the paper's [main_metric])."""
    return (ctx.data.get("main_metric") or ctx.question).strip()


def parse_sql(text: str) -> str:
    """The one SELECT query in a model answer; anything else is fed back as a ParseError."""
    sql = extract_sql(text)
    if not _QUERY_START.match(sql):
        raise ParseError("the answer must be a single SQLite SELECT query")
    return sql
