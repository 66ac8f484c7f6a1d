"""MAC-SQL (Wang et al., 2025): a Selector, a Decomposer and a Refiner agent in turn.

Algorithm 1 of the paper: when the database is large the Selector keeps only the relevant tables
and columns; the Decomposer answers the question through sub-questions, the last one's SQL being
the answer; the Refiner executes that SQL and repairs it from the error until it runs (and
returns rows) or the repair budget is spent. The prompts are the paper's (Appendix A), with two
additions by default, each measured better on both benchmark samples: the Decomposer's prompt
also shows a simple question answered in one step, as the paper's Section 3.3 says the
Decomposer does (``decomposer_prompt=graded``; on a 1.5B model the paper's two multi-step
demonstrations alone made it split simple questions, and its split answers were right far less
often), and the Refiner's prompt after a name error also spells out the tables the SQL uses and
which alias to write (``refiner_prompt=tables``; the model had returned the SQL that just
failed). The paper's prompts are ``decomposer_prompt=paper`` and ``refiner_prompt=paper``; the
Decomposer also has a compact variant. And where the Refiner's loop ends (repairs spent, or the
repair repeating the SQL) on SQL that fails on a column name, the run ends on the version one
clear change makes run (``name_rewrite``, :mod:`..runnable_ending`; off, the failing SQL is
kept as in the paper); and where a failing query's hint already holds that version, the Refiner
takes it as its repair without asking the model (``repair_from_hint``; off, the model is asked
as in the paper). The Selector runs, as the paper says, for a large database: by default
one whose whole schema the Decomposer's prompt cannot hold (``use_selector=context``; it then
prunes what schema retrieval kept), because on schemas a 1.5B model could read whole its
pruning dropped needed tables; the reference implementation's rule by column counts is
``use_selector=auto``. Before the Decomposer, value grounding (not in the paper) looks the
question's words up among the stored values, and each match leads its column's value examples
in the schema text the Decomposer and the Refiner read (``value_grounding=examples``; ``list``
shows them as a list instead, ``off`` is the paper), so a value is written as it is stored.
"""

from __future__ import annotations

from agents.core.engine import END, STUDIO, ParamSpec, Pipeline, Step, StepContext
from .. import fresh_writer
from ...retrieval import Retrieving, retrieval_step, unit_notes, whole_part
from agents.rules import final_check, repeat_retry, runnable_ending
from . import decomposer, prompt_budget, refiner, selector, values


class MacSQL(final_check.ChecksFinalSQL, Retrieving, Pipeline):
    name = "macsql"
    title = "MAC-SQL"
    label = "MAC-SQL — breaks the question down, repairs the SQL"  # what the studio's pickers show
    description = ("Selector prunes a large schema, Decomposer solves the question through "
                   "sub-questions, Refiner repairs SQL that fails or returns nothing.")
    paper = ("Wang et al., MAC-SQL: A Multi-Agent Collaborative Framework for Text-to-SQL, "
             "COLING 2025")
    rules = ("whole_part", "unit_notes", "value_grounding", "demonstration_names", "error_hints",
             "sqlite_functions", "name_context", "repeat_retry", "name_rewrite",
             "repair_from_hint", "fresh_writer", "drop_unread_joins", "match_stored_case")
    params = [
        whole_part.param_spec(False),
        unit_notes.param_spec(False),
        ParamSpec("use_selector", "context", kind="choice",
                  choices=["auto", "context", "always", "never"],
                  help="auto: the reference rule by column counts; context: only when the "
                       "schema does not fit; always/never"),
        ParamSpec("selector_max_avg_columns", 6, min=0, under="use_selector",
                  help="auto skips the Selector while tables average at most this many columns "
                       "(and the total is low)"),
        ParamSpec("selector_max_columns", 30, min=0, under="use_selector",
                  help="auto skips the Selector while the schema has at most this many columns "
                       "(and the average is low)"),
        ParamSpec("decomposer_prompt", "graded", kind="choice",
                  choices=list(decomposer.PROMPTS),
                  help="graded: the paper's prompt plus a one-step demonstration; paper: "
                       "Appendix A.2; compact: no demos"),
        ParamSpec("refiner_prompt", "tables", kind="choice", choices=["tables", "paper"],
                  help="tables: A.3 plus the query's tables on a name error and whether it "
                       "failed before; paper: A.3"),
        ParamSpec("value_grounding", "examples", kind="choice", choices=list(values.MODES),
                  origin=STUDIO,
                  help="show the question's values found in the database: examples (first in "
                       "their column's), list, off"),
        ParamSpec("max_refine", 3, min=0, max=10,
                  help="how many times the Refiner may repair the SQL before giving up"),
        ParamSpec("refine_empty_result", True,
                  help="treat SQL that runs but returns no rows as a failure to repair"),
        repeat_retry.param_spec(),
        runnable_ending.param_spec(),
        runnable_ending.hint_param_spec(),
        fresh_writer.param_spec(True),
        *final_check.param_specs(),
    ]
    # the paper's prompts, failing SQL kept as written, the reference rule for the Selector,
    # no value lookup and the SQL ending as written were the defaults before graded, tables,
    # the runnable ending, the context rule, value examples and the Final check measured better
    earlier_defaults = {"decomposer_prompt": "paper", "refiner_prompt": "paper",
                        "use_selector": "auto"}
    steps = [
        retrieval_step(then=("selector",)),
        Step("selector", "Selector", selector.run, "Select the relevant tables and columns",
             then=("ground", "decomposer")),
        Step("ground", "Value grounding", values.ground,
             "Find the question's values in the database", then=("decomposer",)),
        Step("decomposer", "Decomposer", decomposer.run, "Decompose the question and write SQL",
             then=("refiner",)),
        Step("refiner", "Refiner", refiner.run, "Execute the SQL and repair it",
             then=("refiner", END, fresh_writer.STEP)),
        fresh_writer.step(),
        final_check.step(),
    ]

    retrieval = prompt_budget.RETRIEVAL

    def initial_data(self, ctx: StepContext) -> dict:
        return {"selection": None, "grounding": None, "sub_questions": [], "sql": None,
                "refine_attempts": 0}


PIPELINE = MacSQL()
