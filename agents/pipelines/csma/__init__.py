"""CSMA (Wu et al.): agents that each own part of the schema cooperate on one SQL query.

The schema is split among ``n_agents`` agents -- equal contiguous parts in table order by
default (sizes differ by at most one, earlier agents take the extra table), or the user's
``partition`` -- modelling a database whose parts belong to different owners. A global schema,
empty at first, is the only channel between agents. Round i is worked by agent t(i) = i mod n
(agents and rounds numbered from 1 here) in the paper's order (4.2-4.4):

1. **extract** -- schema collection: known = merge(private, global); the model extracts the
   question-relevant tables/columns of the known schema; retention tops each extracted table up
   to ``delta`` columns (primary key first, then table order); global = merge(global, extract).
2. **check** (from round 2) -- the agent checks the previous round's SQL against its latest
   known schema; a positive verdict ends the run with that SQL.
3. **generate** -- otherwise the agent writes SQL from its extracted schema; the run goes on to
   the next round, or ends after ``max_rounds`` rounds with the last SQL (unchecked; when that
   SQL fails to execute, the global writer below has one more go).

Choices where the paper is silent or ambiguous:
- merge keeps every table/column in database order, so equal knowledge renders as equal text;
- extraction also keeps both columns of each foreign key between two extracted tables (the
  paper's extraction keeps "primary and foreign key relationship"), so they can be joined;
- the checker runs the SQL first and sees its execution outcome (the error, or the row count
  and first rows -- never the result's column names); a verdict "correct" on SQL that fails to
  execute counts as negative;
- the check gives a verdict and a reason, no corrected SQL (the paper's check only judges);
  after a negative check the same agent writes the new SQL, and the ``direct`` prompt shows it
  the rejected SQL and its own reason; the ``decompose`` prompt is MAC-SQL's, unchanged;
- an agent that extracts nothing writes no SQL that round (a skipped step); the run fails if
  no SQL exists after the last round;
- a round with no SQL to check has no check step.

The ``variant`` parameter keeps the algorithm and changes what a small model is asked
(``compact``, the default; ``paper`` is as above):
- extraction names the needed tables (``{"tables": [...]}``) and each named table is kept
  whole (every column its agent knows), so the global schema carries whole tables with the
  foreign keys between them
  and no writer names a column it never saw; the short answer cannot loop on column names;
- after a negative check, the rewrite is told the checked SQL's execution outcome (error and
  name hint, from the agent's known schema) and the reason, before the question, without the
  SQL's text.
A small model given the paper's prompts loops on column names and copies rejected SQL, so
this is the default; runs recorded before the switch keep ``paper``.

The ``check_method`` parameter keeps when a check happens and that a positive check ends the
run, and changes how a query that runs is checked (``verdict`` is the paper's: the model
judges it):
- ``agreement``, the default: the checking agent writes its own SQL from its extracted
  schema, as its generation would, and both queries are run; the same result (the metric's
  equality, as in the ``selection`` vote) is a positive check, a different one a negative
  check after which the agent's new SQL is the one it just wrote (no second call, so no
  writer is told the reason).
  A small model asked for a verdict accepts most queries that run, wrong ones among them
  (queries written by an agent that lacked the tables only the checker holds); an agent
  with other schema knowledge writing the same wrong result is the less likely event. The
  model judges
  as in ``verdict`` when the agent extracted nothing, when the query to check is the agent's
  own, when its own SQL does not run or cannot be read, or when both return no rows; a query
  that fails to run is judged as in ``verdict`` (its error and hint feed the rewrite).
  It is the default; runs recorded before the switch keep ``verdict``.

The ``name_rewrite`` parameter (on by default) keeps every step and changes what an agent's
SQL is when it fails on a column name: where one clear change within the tables the agent
extracted makes it run (:mod:`agents.rules.name_rewrite`: the column's spelling in its table, the
alias of the one table that has it, ...), the agent's SQL is that version, and the trace shows
the SQL as written, its error and the change. Small agents write the same wrong column name in
every round although each check's hint names the column meant (``indep_year`` for
``IndepYear``), and a run would end on SQL no round made run.

The ``outer_column_check`` parameter (off by default) makes a check treat SQL that runs but
whose subquery selects a column of the outer query (:mod:`agents.rules.outer_columns`:
``museum_id NOT IN (SELECT museum_id FROM visitor)`` where ``visitor`` has no such column, so
the subquery returns each museum's own id) as SQL that fails: the model judges it after being
told why, the check is negative whatever it says, and the agent writes anew. Told so, small
agents wrote the same subquery again, so it stays off.

The ``rounds_while_failing`` parameter (0, off, by default) lets a run that reaches
``max_rounds`` with SQL that fails to execute go on for at most that many more rounds, until
its SQL runs: the paper ends only on a positive check, which failing SQL never gets, and the
round limit is this implementation's. Small agents, told the error and hint each time, wrote
the same failing SQL again in the added rounds, so it is off by default, a parameter for
models that do follow a hint.

The ``global_writer`` parameter (on by default) keeps every round and changes how a run that
reaches ``max_rounds`` on SQL that fails ends: one writer writes afresh from the global schema
-- what the agents shared, nothing private -- with the single-prompt writer's prompt, repaired
once from its error (:mod:`.global_writer`); its SQL is the answer when it runs, else the
agents' SQL stays. The agents, told the error, wrote the same failing SQL again (above); a
writer without that SQL to copy does not.

The ``global_check`` parameter (on by default) does the same where the rounds end at
``max_rounds`` on SQL that runs but that no check agreed with (the paper's "last SQL,
unchecked"): the global writer writes its SQL, and its result is compared, as the agreement
check compares, with that of every SQL the agents wrote in the run, the last first; the latest
one with the same result is the answer (two results without rows say nothing), and with none
the last SQL stays. A second writer agreeing with an earlier SQL is the agreement the rounds
did not reach.

The ``global_data_first`` parameter (on by default) adds ``selection``'s rule for results
without data to that check: when no SQL of the agents returns the writer's result, the agents'
last SQL finds no data (no rows, or NULLs only) and the writer's finds some, the writer's SQL
is the answer.

The ``ignore_unread_joins`` parameter (on by default) keeps the agreement check and changes
what counts as a disagreement: when the checking agent's own SQL returns another result but
joins a table it reads nothing of (the table's columns appear only in that join's condition,
:mod:`agents.rules.unread_joins`) and the checked SQL does not name that table, the own SQL without
that join is run, and the same result as the checked SQL's is a positive check: an agent that
owns ``course_arrange`` joins it into "the hometowns shared by at least two teachers", counting
each teacher once per course, and its check would replace the right SQL with that one. Two
results with no rows, once the join is left out, say little: the model judges then, as it does
for any two empty results.

Why each option's default is what it is, with the measurements: ``bench/parameter-notes.md``
and ``bench/CHANGELOG.md``. Runs recorded before an option was on replay with it off.

Privacy is structural: each round step rebuilds its agent's known schema from its private
schema and the global schema only, and prompts are rendered from that map alone.

State (``ctx.data``): ``n_agents``, ``partition_mode``, ``private`` {agent: {table: [cols]}},
``global``, ``round``, ``known``, ``extracted``, ``sql``, ``sql_by``, ``sql_round``, ``sql_runs``,
``checks``, ``rounds``, ``stop_reason``, ``global_writer`` (whether the global writer's SQL
was taken or, checking, agreed with the agents' SQL or was taken as the only one finding data,
once it ran). Step names carry the agent
(``extract:2``), so events read "Agent 2: Extract question-related schema" and a run resumes
from any step.

Round steps record the variant in their inputs (``variant``), checks their method
(``check_method``) and whether outer columns are checked (``outer_column_check``), checks and
generations whether failing names are rewritten (``name_rewrite``).

``StepEvent.parsed``: partition -> ``{"partition", "agents", "private_schemas"}``; extract ->
``{"round", "agent", "private_schema", "known_schema", "extracted", "global_schema"}`` (schemas
as ``[{"table", "columns"}]``); check -> ``{"round", "agent", "verdict", "reason", "sql_by",
"execution", "sql", "method", "own_sql", "own_execution", "own_runs", "agrees"}`` (the last
four only for an agreement check that wrote its own SQL); generate -> ``{"round", "agent",
"tables", "strategy", "feedback", "executes", "sql", "written_in_check"}`` (plus
``written_sql``, ``written_error`` and ``rewrite`` when the SQL is a rewrite; a check's own SQL
likewise ``own_written_sql``, ``own_written_error`` and ``own_rewrite``); global writer ->
``{"mode", "sql", "tables", "executes", "taken", "agents_sql", "agents_error"}`` (plus
``first_sql`` and ``first_error`` after its repair, with ``from_hint`` -- and
``hint_rewrite`` when the repair is the version the error's hint held, taken with no model
call (``repair_from_hint``) -- the rewrite's fields, and, checking,
``agreed_sql``, ``agrees_with_last`` and ``compared``).
"""

from __future__ import annotations

from agents.core.engine import END, STUDIO, ParamSpec, Pipeline, Step, StepContext, StepError
from ...retrieval import RetrievalSpec, Retrieving, retrieval_step, unit_notes, whole_part
from agents.pipelines import baseline
from agents.rules import final_check, runnable_ending
from ..common import macsql_schema
from . import check, global_writer, steps
from .context import AGREEMENT, COMPACT, PAPER, ROUNDS_WHILE_FAILING, VERDICT


def _for_agent(fn):
    """A round step of one agent: ``extract:2`` runs ``fn(ctx, agent=2)``."""
    def run(ctx: StepContext, arg: str) -> str | None:
        if not arg.isdigit() or int(arg) < 1:
            raise StepError(f"agent {arg!r} is not an agent number")
        return fn(ctx, agent=int(arg))
    run.__doc__ = fn.__doc__
    return run


class CSMA(final_check.ChecksFinalSQL, Retrieving, Pipeline):
    name = "csma"
    title = "CSMA"
    label = "CSMA — agents share the schema"  # what the studio's pickers show
    description = ("Agents each own part of the schema; in turn each merges its part with a "
                   "shared global schema, extracts what the question needs, checks the last "
                   "SQL and writes a new one, until a check is positive.")
    paper = ("Wu et al., Cooperative SQL Generation for Segmented Databases By Using "
             "Multi-functional LLM Agents")
    rules = ("whole_part", "unit_notes", "demonstration_names", "error_hints", "sqlite_functions",
             "name_rewrite", "outer_column_check", "ignore_unread_joins", "global_writer",
             "global_check", "repair_from_hint", "drop_unread_joins", "match_stored_case")
    params = [
        whole_part.param_spec(False),
        unit_notes.param_spec(False),
        ParamSpec("n_agents", 2, "agents sharing the schema (equal contiguous split by table "
                  "order; ignored when a partition is given)", min=1, max=8),
        ParamSpec("partition", "", 'optional JSON of agent number to tables, e.g. {"1": '
                  '["orders"], "2": ["items"]}; each table once', kind="str"),
        ParamSpec("delta", 4, "paper variant's retention threshold: minimum columns kept per "
                  "extracted table", min=0, max=50, under="variant"),
        ParamSpec("max_rounds", 3, "rounds before stopping without a positive check",
                  min=1, max=10),
        ParamSpec(ROUNDS_WHILE_FAILING, 0, "extra rounds allowed past max_rounds while the last "
                  "SQL fails to execute (0: none)", min=0, max=10, origin=STUDIO),
        ParamSpec(global_writer.PARAM, True, "when the rounds end on SQL that fails, one writer "
                  "writes afresh from the global schema", origin=STUDIO),
        ParamSpec(global_writer.CHECK_PARAM, True, "when rounds end on SQL no check agreed "
                  "with, take the agents' latest SQL the global writer matches",
                  origin=STUDIO),
        ParamSpec(global_writer.DATA_FIRST_PARAM, True, "with no match, take the global "
                  "writer's SQL if it finds data and the agents' last SQL finds none",
                  origin=STUDIO, under=global_writer.CHECK_PARAM),
        runnable_ending.hint_param_spec(),
        ParamSpec("generation", "direct", "SQL generation prompt: direct, or MAC-SQL's "
                  "decomposition into sub-questions", kind="choice",
                  choices=["direct", "decompose"]),
        ParamSpec("variant", COMPACT, "compact: agents name whole tables, a rewrite gets the "
                  "error, not the SQL; paper: the paper's prompts", kind="choice",
                  choices=[COMPACT, PAPER]),
        ParamSpec("check_method", AGREEMENT, "agreement: the agent writes its own SQL and "
                  "compares results; verdict: the model judges it", kind="choice",
                  choices=[AGREEMENT, VERDICT]),
        ParamSpec("name_rewrite", True, "replace an agent's SQL failing on a column name by the "
                  "version one clear change makes run", origin=STUDIO),
        ParamSpec("outer_column_check", False, "check SQL whose subquery selects a column of "
                  "the outer query as SQL that fails", origin=STUDIO),
        ParamSpec("ignore_unread_joins", True, "agreement: compare the own SQL without joins "
                  "of tables it reads nothing of and the checked SQL lacks", origin=STUDIO,
                  under="check_method"),
        *final_check.param_specs(),
    ]
    # the paper's prompts and its check, with failing SQL left as written, every join
    # compared and no global writer, were the defaults before the compact variant, the
    # agreement check, the rewrite, the unread-join rule and the global writer (and its check)
    # measured better
    earlier_defaults = {"variant": PAPER, "check_method": VERDICT}
    # Round steps take the agent's number: ``extract:2`` is agent 2's extraction.
    steps = [
        retrieval_step(then=("partition",)),
        Step("partition", "Schema owners", steps.partition, "Split the schema among agents",
             then=("extract",)),
        Step("extract", "Agent {arg}", _for_agent(steps.extract),
             "Extract question-related schema", then=("check", "generate"), takes_arg=True),
        Step("check", "Agent {arg}", _for_agent(check.check), "Check the SQL",
             then=("generate", END), takes_arg=True),
        Step("generate", "Agent {arg}", _for_agent(steps.generate), "Generate SQL",
             then=("extract", global_writer.STEP, END), takes_arg=True),
        Step(global_writer.STEP, "Global writer", global_writer.write,
             "Write the SQL afresh from the global schema", then=(END,)),
        final_check.step(),
    ]

    # An agent's prompt shows its known schema (never more than what retrieval kept) with
    # ~300 tokens of instructions, the last SQL and a preview of its result.
    # The global writer's prompt shows the global schema as baseline's DDL, and its repair
    # repeats its SQL with the error.
    retrieval = RetrievalSpec(forms=lambda params: [
        lambda schema: "\n".join(macsql_schema(schema)),
        *([lambda schema: baseline.schema_text(schema, "ddl")]
          if params.get(global_writer.PARAM) or params.get(global_writer.CHECK_PARAM)
          else [])], reserve=1200)

    def initial_data(self, ctx: StepContext) -> dict:
        return steps.initial_data(ctx)


PIPELINE = CSMA()
