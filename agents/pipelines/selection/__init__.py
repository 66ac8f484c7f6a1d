"""Candidate selection: several generators, then selection by execution (in the spirit of
MCS-SQL and CHASE-SQL).

Why: on a small model the pipelines fail on *different* questions, and a wrong query rarely
returns the same rows as another wrong query, while right ones do. So the studio's own writers
each write one candidate, every candidate is executed read-only, candidates with equal results
(the evaluation metric's equality) form groups, and the largest group wins. Only when the vote
is not decisive does a selection agent compare the leading candidates.

Step graph (every part is a step of its own, so the trace shows it and a run resumes from it)::

    ground -> candidate:<g1> [-> repair:<g1> ...] -> candidate:<g2> ... -> vote [-> select]

- ``ground`` (Value grounding): the question's words and literals looked up, within a time
  budget, among the values stored in the database (:mod:`agents.retrieval.value_grounding`); what it
  finds is shown to every generator with the question. When the Schema Retriever cut the
  schema to fit, only the tables it kept are searched: the writers see no other, and a value
  found elsewhere would invite a query naming a table they cannot see. Off with
  ``value_grounding=false``.
- ``candidate:<name>``: one generator writes a candidate, which is executed (see
  :mod:`.generators` for the writers: ``writer``, ``decomposer``, ``cot``, ``fewshot``, and
  ``sample1..N``, the writer's prompt at a higher temperature).
- ``repair:<name>``: a candidate that fails gets one repair, in its own conversation, from the
  error and the hint naming the real tables and columns (``repair=false``: none). A repair is
  cheap (the server still holds the prompt) and most failures are a wrong name; where the
  hint already holds the version of the query that runs, that version is the repair and the
  generator is not asked (``repair_from_hint``, :mod:`agents.rules.runnable_ending`). With
  ``repair_attempts`` above 1, a repaired SQL that fails with another error is repaired again
  in the same conversation (the same error again ends it). With ``unrelated_parts`` (off by
  default), a candidate that runs but reads tables of parts of the database that no foreign key
  connects (:mod:`agents.rules.unrelated_parts`: on a database of several applications, a look-alike
  table of another one) gets one repair told so, and keeps its SQL unless the repaired one runs
  within one part; the embedded 1.5B model answered such a repair with the SQL it had been told
  about (``bench/README.md``), so it is kept for larger models.
- ``vote`` (:mod:`.voting`): groups and the vote; decisive when the largest group is strictly
  the largest and holds ``min_share`` of all candidates (failed ones count), otherwise the
  tied groups, or all groups of a weak winner, go to ``select``. A result holding no data (no
  rows, or NULLs only) is set aside while another candidate's holds some (``data_first``):
  the candidates that miss on a small model often miss together, on nothing. When no
  candidate runs, the run fails with that said, keeping the most trusted candidate's SQL.
- ``select`` (Selection agent): sees schema, question and up to four groups' SQL with a
  preview of their results, and answers with its reasoning and a letter; with
  ``select_orders`` above 1 it does so again with the candidates rotated and the pick made
  most often wins (a small model tends to pick whatever is shown first).

Defaults and cost: ``cot`` (R³'s SQL-Writer with related examples), ``writer`` (the best
single prompt measured in ``bench/``, a few seconds a question) and ``decomposer`` (MAC-SQL and
R³ answered the most questions right there that the single prompt missed, and their writers
reason in steps, so their mistakes differ from the writer's; its prompt is MAC-SQL's
``graded`` one, which answers a simple question in one step), and one sample of the writer,
whose agreement with the writer is a cheap sign of its confidence. The order is the order of
trust: it breaks ties and orders the selection agent's options, and a small selection agent
mostly picks the first option shown. ``cot`` comes first because, where the candidates
disagree, it is right most often (``bench/parameter-notes.md``), while the writer and its sample agree with each other often and so win most decisive votes.
Each prompt puts static text first, the schema next and the question (with grounded values)
last; the sample repeats the writer's prompt byte for byte and a repair
continues its candidate's conversation, so the local server processes each generator's prompt
once per question and a sample or a repair costs little more than its output. The selection
agent's prompt is its own (its static text is the same for every question), and it runs only
for an open vote. ``fewshot`` (DEA-SQL) and more samples are one parameter away.

Answering at conversational speed: with ``draft_first`` (on) the writer runs first, so the
first candidate that runs -- usually seconds after the question -- is marked as the draft
answer (``draft`` in its output) and the page shows it at once, "being checked"; the vote then
confirms it or replaces it and says why (``draft_outcome``, ``draft_note``). With
``stop_when_decided`` (on) the candidates not yet written are skipped once those so far decide
the vote whatever the rest return (:func:`agents.runs.candidates.settled`); the vote lists them
(``skipped``). Neither changes which group wins a vote that is written out in full, nor the
order of trust.

State (``ctx.data``): ``plan``, ``grounding``, ``candidates`` (``name``, ``sql``,
``answer``, ``examples``, ``result`` preview, ``repaired_from``, ``repair_turns`` (each
repair's SQL, what it was told -- the error, or for SQL that ran (``told``) why it reads
unrelated parts -- and its reply, for the next repair's conversation), ``parts_told`` (told
once already), and ``prompt``, the variant of a writer with several prompts), ``vote``,
``selection``,
``chosen``, ``sql``, ``draft`` (the first candidate that ran), ``skipped``. The vote's tie order is not state: it is read from ``generators`` when
needed, so a run resumed at the vote with another order votes in that order. Output kinds:
``value_matches``, ``candidate``, ``sql_repair``, ``candidate_vote``, ``selection``
(:mod:`.outputs`). The final SQL is the chosen candidate's.
"""

from __future__ import annotations

from agents.core.engine import END, STUDIO, ParamSpec, Pipeline, Step, StepContext
from ...retrieval import RetrievalSpec, Retrieving, retrieval_step, unit_notes, whole_part
from agents.pipelines import baseline
from agents.rules import final_check, runnable_ending
from ..common import macsql_schema
from ..deasql.shared import table_info
from ..macsql import decomposer
from . import steps, voting
from .generators import GENERATORS, GeneratorList
from .steps import PARTS_PARAM


class CandidateSelection(final_check.ChecksFinalSQL, Retrieving, Pipeline):
    name = "selection"
    title = "Candidate selection"
    label = "Thorough — several writers, results compared"  # what the studio's pickers show
    description = ("Several writers each propose SQL; the candidates are executed, grouped by "
                   "equal results and voted on; a selection agent decides an open vote.")
    paper = ("In the spirit of MCS-SQL (Lee et al., COLING 2025) and CHASE-SQL (Pourreza et al., "
             "ICLR 2025): multiple generators, selection by execution")
    rules = ("whole_part", "unit_notes", "value_grounding", "demonstration_names", "error_hints",
             "sqlite_functions", "data_first", "shape_first", "empty_not_decisive",
             "doubt_last", "unrelated_parts", "repair_from_hint", "drop_unread_joins", "match_stored_case")
    params = [
        whole_part.param_spec(False),
        unit_notes.param_spec(False),
        GeneratorList("generators", "cot,writer,decomposer", kind="str",
                      help="comma-separated writers, one candidate each, most trusted first: "
                           + ", ".join(GENERATORS)),
        ParamSpec("samples", 1, min=0, max=8,
                  help="further candidates sampled from the writer's prompt at "
                       "sample_temperature"),
        ParamSpec("sample_temperature", 0.7, min=0.0, max=2.0,
                  help="sampling temperature of the samples"),
        ParamSpec("draft_first", True, origin=STUDIO,
                  help="write the quick one-prompt candidate first and show it as a draft "
                       "while the rest check it"),
        ParamSpec("stop_when_decided", True, origin=STUDIO,
                  help="skip the remaining candidates once those so far decide the vote, "
                       "whatever the rest return"),
        ParamSpec("min_share", 0.5, min=0.0, max=1.0,
                  help="share of all candidates the largest group needs for a decisive vote "
                       "(else the selection agent)"),
        ParamSpec("data_first", True, origin=STUDIO,
                  help="set aside results with no data (no rows, or NULLs only) while another "
                       "candidate's has some"),
        ParamSpec("shape_first", True, origin=STUDIO,
                  help="set aside results of several rows where the question asks for one "
                       "value, while another's has one"),
        ParamSpec("empty_not_decisive", True, origin=STUDIO,
                  help="a leading result with no data is not decisive while some candidates "
                       "did not run"),
        ParamSpec("doubt_last", False, origin=STUDIO,
                  help="set aside results a lint doubts (NULL group on top, unit, repeated "
                       "rows) while another's is not"),
        ParamSpec("select_orders", 1, min=1, max=4,
                  help="times the selection agent compares the leaders, each in another order; "
                       "most picked wins"),
        ParamSpec("decomposer_prompt", "graded", kind="choice", choices=list(decomposer.PROMPTS),
                  help="the decomposer writer's prompt, as in MAC-SQL: graded, paper "
                       "(Appendix A.2) or compact"),
        ParamSpec("value_grounding", True, origin=STUDIO,
                  help="look the question's words up among the stored values and show the "
                       "matches to the writers"),
        ParamSpec("repair", True,
                  help="give a failing candidate one repair from its error and the hint"),
        ParamSpec("repair_attempts", 1, min=1, max=3, under="repair",
                  help="repairs a failing candidate may get: a further one only on a new error"),
        ParamSpec(PARTS_PARAM, False, origin=STUDIO, under="repair",
                  help="one repair for a candidate reading parts no foreign key connects; taken "
                       "if it runs in one part"),
        runnable_ending.hint_param_spec(under="repair"),
        ParamSpec("examples", 3, min=0, max=8,
                  help="related examples from the example bank for the cot and fewshot writers"),
        ParamSpec("exclude_same_db_examples", False,
                  help="never use examples of the database being asked (for evaluations)"),
        *final_check.param_specs(),
    ]
    steps = [
        retrieval_step(then=("ground", "candidate")),
        Step("ground", "Value grounding", steps.ground,
             "Find the question's values in the database", then=("candidate",)),
        Step("candidate", "Candidate: {arg}", steps.candidate, "Write a candidate and run it",
             then=("repair", "candidate", "vote"), takes_arg=True),
        Step("repair", "Repair: {arg}", steps.repair,
             "Repair the candidate from its error, or from the unrelated parts it reads",
             then=("repair", "candidate", "vote"),
             takes_arg=True),
        Step("vote", "Vote", voting.vote_step, "Group the candidates by result and vote",
             then=("select", END)),
        Step("select", "Selection agent", voting.select,
             "Compare the leading candidates and pick one", then=(END,)),
        final_check.step(),
    ]

    # the decomposer generator sent the paper's Decomposer prompt before graded measured better
    # and voted without setting results with no data aside before data_first measured better
    # and ended on the chosen SQL as written before the Final check measured better,
    # and wrote every candidate in the order of trust before the draft answer and the
    # decided-vote stop (which change only when and whether a candidate is written)
    earlier_defaults = {"decomposer_prompt": "paper", "draft_first": False,
                        "stop_when_decided": False}

    def initial_data(self, ctx: StepContext) -> dict:
        return steps.initial_data(ctx)

    # Generators show the schema as commented DDL, MAC-SQL column lists or DEA-SQL's table
    # info; a repair prompt adds few-shot examples, the SQL and its error; a Decomposer prompt
    # variant adds its own static text, as in MAC-SQL's reserve.
    retrieval = RetrievalSpec(forms=lambda params: [
        lambda schema: baseline.schema_text(schema, "ddl"),
        lambda schema: "\n".join(macsql_schema(schema)),
        table_info], reserve=lambda params: 3000 + decomposer.extra_reserve(params))

    def start_step(self, ctx: StepContext) -> str:
        return steps.first_step(ctx)

    def final_sql(self, data: dict) -> str | None:
        """The chosen candidate's SQL (before the vote: the most trusted one that runs)."""
        return data.get("sql")


PIPELINE = CandidateSelection()
