"""The baseline: one "SQL Writer" agent turns schema + question into SQL in a single call.

It is the yardstick the multi-agent pipelines are compared against, so it stays plain: no
reasoning field (on the small embedded model free-text reasoning before the SQL lowered accuracy
and tripled the output), no repair loop, one model call.
"""

from __future__ import annotations

from pathlib import Path

from agents.core.engine import END, ParamSpec, Pipeline, Step, StepContext
from ...outputs import SQLDraft
from agents.llm.parsing import extract_sql
from agents.llm.prompts import load, render
from ...retrieval import RetrievalSpec, Retrieving, retrieval_step, whole_part
from agents.db.schema_ddl import DDLLayout, render_create_tables
from ..common import macsql_schema, user_message

HERE = Path(__file__).parent


# Plain DDL is the most compact schema text (about a third of the MAC-SQL form), but without
# values a model guesses spellings ('Cancelled' for 'cancelled'); a comment per column fixes that
# for a few tokens. Key columns get none, as in MAC-SQL's schema text.
EXAMPLE_COMMENTS = DDLLayout(inline_primary_key=True, primary_key_last=True, not_null=False,
                             reference_gap="", statement_gap="\n", examples="column",
                             key_examples=False)


def ddl_with_examples(schema) -> str:
    """CREATE TABLE statements whose columns carry their example values as comments."""
    return render_create_tables(schema, EXAMPLE_COMMENTS)


def schema_text(schema, fmt: str) -> str:
    """The whole schema as commented CREATE TABLE text or in MAC-SQL's column-list form."""
    if fmt == "ddl":
        return ddl_with_examples(schema)
    desc_str, fk_str = macsql_schema(schema)
    return f"{desc_str}\n[Foreign keys]\n{fk_str}" if fk_str else desc_str


def question_text(question: str, evidence: str) -> str:
    evidence = (evidence or "").strip()
    return f"{question.strip()}\nHint: {evidence}" if evidence else question.strip()


def write_sql(ctx: StepContext) -> None:
    fmt = ctx.params["schema_format"]
    ctx.set_inputs(tables=ctx.schema.table_names(), schema_format=fmt)
    prompt = render(load(str(HERE), "writer"), schema=schema_text(ctx.schema, fmt),
                    question=question_text(ctx.question, ctx.evidence))
    sql = ctx.ask(user_message(prompt), parse=extract_sql).strip()
    ctx.data["sql"] = sql
    ctx.set_output(SQLDraft(sql=sql), sql=sql)
    return None


class Baseline(Retrieving, Pipeline):
    name = "baseline"
    title = "Baseline (single prompt)"
    label = "Quick — one prompt"  # what the studio's pickers show
    description = "One model call: schema and question in, SQL out."
    rules = ("whole_part", "error_hints", "sqlite_functions")
    params = [
        whole_part.param_spec(True),
        ParamSpec("schema_format", "ddl", kind="choice", choices=["ddl", "macsql"],
                  help="schema text: ddl (CREATE TABLE, example values as comments) or "
                       "macsql (MAC-SQL's column lists)"),
    ]
    steps = [retrieval_step(then=("writer",)),
             Step("writer", "SQL Writer", write_sql, "Write the SQL", then=(END,))]
    # The writer's prompt holds the schema in the chosen format, the question and ~150 tokens
    # of instructions.
    retrieval = RetrievalSpec(forms=lambda params: [
        lambda schema: schema_text(schema, params["schema_format"])], reserve=400)

    def initial_data(self, ctx: StepContext) -> dict:
        return {"sql": None}


PIPELINE = Baseline()
