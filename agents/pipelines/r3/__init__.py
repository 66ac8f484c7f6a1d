"""R³ (Review-Rebuttal-Revision): a consensus-based multi-agent Text-to-SQL pipeline.

An SQL-Writer drafts the query (by default the SQL alone; the paper's chain of thought or
program of thoughts with ``writer_style``), makes it executable
with the database's error messages, then n reviewer personas -- proposed by the model for this
database and this SQL -- comment on the SQL and its result table. The writer rebuts or revises,
and the loop ends at consensus: the writer returns the same SQL as in the previous round (the
paper's rule). It also ends when every reviewer approves (``stop_on_approval``, on by default:
the writer would have nothing to revise, and it saves a model call) or at ``max_rounds``.

The paper's prompts are kept and selectable (Appendix A.6: CoT writer, PoT writer, invitation),
with an answer format added. Where the paper is silent or a 1.5B model needs it: the reviewer
prompt is written from the paper's description (schema, question, SQL, result table, persona);
the persona comes last instead of in the system prompt, so all reviewers of a round share one
cached prompt prefix; the invitation's example uses placeholders because a small model copies a
concrete example verbatim; the paper gives no round limit, so ``max_rounds`` is a parameter.

Options for small models, chosen from the kinds of failure in the traces and the defaults since
they measured better than the paper's prompts on both benchmark samples (``aggregate_gate``:
better on one, level on the other, nothing lost; ``bench/README.md``):
``writer_style="direct"`` (the SQL alone, no chain of thought), ``review_prompt="strict"``
(reviewers approve unless they can name a concrete error), ``revision_gate="execution"`` (a
revision that no longer runs, or empties a non-empty result, is not adopted),
``aggregate_gate`` (nor is one that newly answers from an arbitrary row, an aggregate beside an
ungrouped column, as revisions did that dropped the GROUP BY of a per-group count:
:mod:`agents.rules.arbitrary_rows`) and
``fix_prompt="tables"`` (a name error's correction shows the query's tables with their aliases
and columns). The paper's behaviour is one switch away (``writer_style="cot"`` or ``"pot"``,
``review_prompt``, ``revision_gate`` and ``fix_prompt`` set to ``"paper"``, ``aggregate_gate``
off); each step's inputs
say which ran. When the writer's corrections are spent and the SQL still fails on a column name,
the version one clear change makes run goes on to the reviewers (``name_rewrite``,
:mod:`..runnable_ending`; off, the run fails there as before); where none does, one writer may
write the SQL afresh from the schema and the run ends on it if it runs (``fresh_writer``,
:mod:`..fresh_writer`). And where a failing query's
hint already holds that version, the correction is that version, with no model call
(``repair_from_hint``; off, the writer is asked as in the paper).
"""

from __future__ import annotations

from agents.core.engine import END, STUDIO, ParamSpec, Pipeline, Step, StepContext

from .. import fresh_writer
from ...retrieval import RetrievalSpec, Retrieving, retrieval_step, unit_notes, whole_part
from agents.rules import final_check, repeat_retry, runnable_ending
from . import steps


class R3Pipeline(final_check.ChecksFinalSQL, Retrieving, Pipeline):
    name = "r3"
    title = "R³ (Review-Rebuttal-Revision)"
    label = "R³ — reviewed until the reviewers agree"  # what the studio's pickers show
    description = ("SQL-Writer drafts and repairs the SQL; model-invited reviewer personas "
                   "comment on it and its result; the writer rebuts or revises until it keeps "
                   "the same SQL (consensus).")
    paper = ("Xia et al., R³: \"This is My SQL, Are You With Me?\" A Consensus-Based "
             "Multi-Agent System for Text-to-SQL Tasks")
    rules = ("whole_part", "unit_notes", "error_hints", "sqlite_functions", "name_context",
             "repeat_retry", "name_rewrite", "repair_from_hint", "fresh_writer", "aggregate_gate",
             "drop_unread_joins", "match_stored_case")
    params = [
        whole_part.param_spec(False),
        unit_notes.param_spec(False),
        ParamSpec("writer_style", "direct", "SQL-Writer prompting: cot (chain of thought), pot "
                  "(Python before SQL) or direct (the SQL alone)",
                  kind="choice", choices=["cot", "pot", "direct"]),
        ParamSpec("k", 3, "related examples from the example bank (by question similarity)",
                  min=0, max=10),
        ParamSpec("exclude_same_db_examples", False,
                  "never use examples of the database being asked (for evaluations)"),
        ParamSpec("n_reviewers", 3, "reviewer personas the Invitation proposes", min=1, max=6),
        ParamSpec("max_rounds", 3, "review rounds before the loop stops without consensus",
                  min=1, max=10),
        ParamSpec("max_fix_attempts", 3, "corrections the writer may make for execution errors",
                  min=0, max=10),
        ParamSpec("history_turns", 2, "writer dialogue turns kept after its first prompt",
                  min=1, max=20),
        ParamSpec("stop_on_approval", True, "also stop when every reviewer approves"),
        ParamSpec("review_prompt", "strict", "reviewer prompt: paper (from its description) or "
                  "strict (approve unless a concrete error is named)", kind="choice",
                  choices=["paper", "strict"]),
        ParamSpec("revision_gate", "execution", "paper: a failing revision is corrected; "
                  "execution: refuse one that fails or newly finds no rows",
                  kind="choice", choices=["paper", "execution"]),
        ParamSpec("aggregate_gate", True, "refuse a revision that newly takes columns from an "
                  "arbitrary row (aggregate beside ungrouped column)", origin=STUDIO),
        ParamSpec("fix_prompt", "tables", "correction message: paper (SQL, error, hint) or "
                  "tables (also the query's tables on a name error)", kind="choice",
                  choices=["paper", "tables"]),
        repeat_retry.param_spec(),
        runnable_ending.param_spec(),
        runnable_ending.hint_param_spec(),
        fresh_writer.param_spec(True),
        *final_check.param_specs(),
    ]
    # the paper's behaviour was the default before the small-model options, the runnable
    # ending and the Final check measured better
    earlier_defaults = {"writer_style": "cot", "review_prompt": "paper",
                        "revision_gate": "paper", "fix_prompt": "paper"}
    steps = [
        retrieval_step(then=("write",)),
        Step("write", "SQL-Writer", steps.write, "SQL-Writer drafts the SQL", then=("execute",)),
        Step("execute", "Execution", steps.execute, "Execute the SQL",
             then=("fix", "invite", "review", END, fresh_writer.STEP)),
        Step("fix", "SQL-Writer", steps.fix, "SQL-Writer corrects an execution error",
             then=("execute",)),
        Step("invite", "Invitation", steps.invite, "Invite reviewer personas", then=("review",)),
        Step("review", "Reviewer", steps.review, "Review of the SQL and its result",
             then=("review", "revise", END)),
        Step("revise", "Rebuttal/Revision", steps.revise, "SQL-Writer rebuts or revises",
             then=("execute", END)),
        fresh_writer.step(),
        final_check.step(),
    ]

    # The writer's dialogue grows by the SQL, its errors and the reviews: the longest the
    # benchmark saw held ~3,400 tokens besides the schema.
    retrieval = RetrievalSpec(forms=lambda params: [lambda schema: schema.render_ddl()],
                              reserve=3600)

    def initial_data(self, ctx: StepContext) -> dict:
        return steps.initial_data(ctx)


PIPELINE = R3Pipeline()
