"""DEA-SQL (Xie et al., 2024): a workflow of small, focused steps for text-to-SQL.

Five modules in the paper's order (Section 2), each a visible step here: information
determination in two stages (elements identification, then the information filter that cuts
the schema), classification & hint (EASY / JOIN / NESTED / JOIN-NESTED decides the generation
prompt), SQL generation with few-shot examples retrieved by question template, self-correction
with a targeted checklist, and active learning from fixed error cases. A last execution check,
this implementation's addition, makes sure the answer runs; where its repairs end on SQL that
fails on a column name, the run ends on the version one clear change makes run
(``name_rewrite``, :mod:`..runnable_ending`), and where a failing query's hint already holds
that version, it is the repair with no model call (``repair_from_hint``). The paper's prompts
(Appendix B) are ``variant="paper"``.

``variant="compact"`` (the default) keeps the agents, their order and their loops, and changes
what a small model is asked where a 1.5B model lost answers: the information filter keeps whole
tables and the tables its answer, the question or a join path points to (it cut needed tables
and columns) and no longer passes on its calculation method; a
JOIN label on a one-table schema becomes EASY; SQL generation gets short prompts (instructions,
schema, examples from other databases, question) that never mention LIMIT; the execution repair
is shown the columns of the tables its query uses. Each step it changes records ``variant`` in
its inputs. It is the default (measurements: ``bench/parameter-notes.md``);
``variant="paper"`` runs the paper's prompts and filter byte for byte, and runs recorded before
the switch keep them.

Working state (``ctx.data``): ``entities`` and ``main_metric`` (rewritten question), then
``selection`` ({table: [columns]} or None for the whole schema), ``key_info`` and
``join_conditions``, ``qtype``, ``examples``, ``generated_sql`` and ``sql``.
"""

from __future__ import annotations

from agents.core.engine import END, STUDIO, ParamSpec, Pipeline, Step, StepContext
from .. import fresh_writer
from ...retrieval import RetrievalSpec, Retrieving, retrieval_step, unit_notes, whole_part
from agents.rules import final_check, repeat_retry, runnable_ending
from .shared import COMPACT, PAPER, foreign_key_lines, table_info
from . import (active_learning, classification, elements, execution_check, information_filter,
               self_correction, sql_generation)


class DeaSQL(final_check.ChecksFinalSQL, Retrieving, Pipeline):
    name = "deasql"
    title = "DEA-SQL"
    label = "DEA-SQL — hints, examples and self-correction"  # what the studio's pickers show
    description = ("Identifies the question's elements, filters the schema, classifies the "
                   "question, writes SQL with similar examples, then self-corrects and applies "
                   "lessons from typical errors.")
    paper = ("Xie et al., Decomposition for Enhancing Attention: Improving LLM-based Text-to-SQL "
             "through Workflow Paradigm, Findings of ACL 2024")
    rules = ("whole_part", "unit_notes", "demonstration_names", "error_hints", "sqlite_functions",
             "repeat_retry", "name_rewrite", "repair_from_hint", "fresh_writer",
             "drop_unread_joins", "match_stored_case")
    params = [
        whole_part.param_spec(False),
        unit_notes.param_spec(False),
        ParamSpec("information_filter", True,
                  help="cut the schema to the tables and columns the question needs (off: the "
                       "whole schema)"),
        ParamSpec("classification", True,
                  help="classify as EASY / JOIN / NESTED / JOIN-NESTED and use that type's hint "
                       "and examples"),
        ParamSpec("foreign_key_hint", True,
                  help="show the foreign-key join conditions in the SQL generation prompt of "
                       "non-EASY questions"),
        ParamSpec("few_shot", 3, min=0, max=8,
                  help="examples retrieved by question-template similarity for SQL generation "
                       "(0: zero-shot)"),
        ParamSpec("exclude_same_db_examples", False,
                  help="never use examples of the database being asked (for evaluations)"),
        ParamSpec("self_correction", True,
                  help="review the SQL against the paper's checklist of frequent errors"),
        ParamSpec("active_learning", "extremum", kind="choice",
                  choices=["extremum", "always", "off"],
                  help="extremum: apply the error cases only to extremum-like questions; "
                       "always: to every one; off"),
        ParamSpec("repair_attempts", 1, min=0, max=3, origin=STUDIO,
                  help="how often the model may repair the final SQL from its error when it "
                       "fails to run"),
        repeat_retry.param_spec(),
        runnable_ending.param_spec(),
        runnable_ending.hint_param_spec(),
        fresh_writer.param_spec(True),
        ParamSpec("variant", COMPACT, kind="choice", choices=[COMPACT, PAPER],
                  help="compact: prompts and a whole-table filter for small models; paper: the "
                       "paper's prompts and filter"),
        *final_check.param_specs(),
    ]
    # the paper's prompts, a run failing on SQL that does not run, and the SQL ending as
    # written were the defaults before the compact variant, the runnable ending and the Join
    # check measured better
    earlier_defaults = {"variant": PAPER}
    steps = [
        retrieval_step(then=("elements",)),
        Step("elements", "Elements identification", elements.run,
             "Identify the question's entities", then=("information_filter",)),
        Step("information_filter", "Information filter", information_filter.run,
             "Select the tables, columns and join conditions", then=("classification",)),
        Step("classification", "Classification & hint", classification.run,
             "Classify the question type", then=("sql_generation",)),
        Step("sql_generation", "SQL generation", sql_generation.run,
             "Write SQL with similar examples", then=("self_correction",)),
        Step("self_correction", "Self-correction", self_correction.run,
             "Check the SQL against frequent errors", then=("active_learning",)),
        Step("active_learning", "Active learning", active_learning.run,
             "Apply the lessons of typical error cases", then=("execution_check",)),
        Step("execution_check", "Execution check", execution_check.run,
             "Run the SQL and repair it if it fails", then=(END, fresh_writer.STEP)),
        fresh_writer.step(),
        final_check.step(),
    ]

    # The classification prompt is the longest: ~2,000 tokens of instructions and examples;
    # the SQL generation prompt adds few-shot examples.
    retrieval = RetrievalSpec(forms=lambda params: [
        lambda schema: table_info(schema) + "\n" + ", ".join(foreign_key_lines(schema))],
        reserve=2600)

    def initial_data(self, ctx: StepContext) -> dict:
        return {"entities": [], "main_metric": "", "selection": None, "key_info": [],
                "join_conditions": "", "qtype": None, "examples": [], "generated_sql": None,
                "sql": None}


PIPELINE = DeaSQL()
