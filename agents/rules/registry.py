"""Every post-hoc check or rewrite the studio applies around the papers' agents, declared once.

The papers' pipelines are made of agents; around them the studio adds small deterministic rules:
a hint that names the real columns after a name error, a query rewritten so a repair loop ends
on SQL that runs, a join nothing reads dropped from the final answer. Each rule is one
:class:`Rule` of :data:`RULES` below, which says

- its **kind**: a lint that only reports (the SQL is unchanged, a prompt or a verdict is told
  something), a rewrite that keeps the result, or a rewrite that changes what the query returns;
- its **hook**, the one place in a run where it acts;
- its **switch**, the pipeline parameter that turns it on or off (``None``: always on, as the
  execution hint, which an evaluation turns off with ``--no-error-hints``), with any switches
  that only matter under it;
- where it comes from (a paper, or the studio) and where its measurement is kept in ``bench/``.

Pipelines list the rules they use (``Pipeline.rules``); a rule with an action (``acts``) is
called at its hook by the step that owns it (:func:`acting_at`, :func:`action`); Settings
draws their switches under "Studio additions" (or beneath the option they depend on),
``python -m agents rules`` prints the table of :func:`rules_table` and ``docs/rules.md`` holds
it. This module is data and dispatch only: it imports no rule's code, so any layer may read
it. The pattern is sqlglot's optimizer, whose ``RULES`` tuple names every rewrite.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable, Iterable

# kinds: what a rule may do to the answer
LINT = "lint"                    # reports only: SQL unchanged (a hint, a note, a verdict,
#                                  what a prompt is shown)
KEEPS_RESULT = "keeps result"    # rewrites SQL, the rows it returns stay the same
CHANGES_RESULT = "changes result"  # rewrites or chooses SQL so that other rows come back
KINDS = (LINT, KEEPS_RESULT, CHANGES_RESULT)

# hooks: where in a run a rule acts
SCHEMA_CONTEXT = "schema context"    # what the agents are shown before they write SQL
EXECUTION_HINT = "execution hint"    # a query fails: what the repair agent is told
REPAIR_ENDING = "repair ending"      # a repair loop repeats itself or ends on failing SQL
AGREEMENT_CHECK = "agreement check"  # candidates, reviewers or agents are compared
FINAL_ANSWER = "final answer"        # the run's last SQL, before it is shown (the Final check)
BEFORE_RUN = "before the run"        # the question, before any agent (the answerability check)
ANSWER_REVIEW = "answer review"      # the run's answer and its result, once it has ended
ENGINE_HOOKS = (BEFORE_RUN, ANSWER_REVIEW)  # run by the engine for every pipeline
HOOKS = (BEFORE_RUN, SCHEMA_CONTEXT, EXECUTION_HINT, REPAIR_ENDING, AGREEMENT_CHECK,
         FINAL_ANSWER, ANSWER_REVIEW)

STUDIO = "studio"


@dataclass(frozen=True)
class Rule:
    """One declared rule. ``switch`` is the parameter that turns it on (``None``: always on),
    ``nested`` the parameters that only matter while it is on; ``module`` holds its code and
    ``measured`` the results in ``bench/`` its default was decided on. A rule used by a
    variant of one of the paper's own options (a repair prompt) names it in ``variants``."""

    name: str
    title: str
    kind: str
    hook: str
    summary: str
    module: str
    origin: str = STUDIO
    switch: str | None = None
    nested: tuple[str, ...] = ()
    variants: tuple[str, ...] = ()  # ``param=value`` choices of a paper option that use it
    measured: str = ""
    # The pipelines that ran before this rule was on by default: a run or an evaluation of
    # theirs recorded without its switches ran with them at ``off`` (its switch and nested
    # ones alike), which is what replaying or resuming it must use (:func:`recorded_defaults`).
    recorded_off: tuple[str, ...] = ()
    off: Any = False
    # ``"module:function"`` the engine calls at the hook (:func:`acting_at`); empty
    # for a rule the code of its hook still calls itself
    acts: str = ""

    def __post_init__(self):
        if self.kind not in KINDS or self.hook not in HOOKS:
            raise ValueError(f"rule {self.name!r}: unknown kind or hook")
        if self.acts and ":" not in self.acts:
            raise ValueError(f"rule {self.name!r}: acts must be 'module:function'")


RULES: tuple[Rule, ...] = (
    Rule("answerability", "Answerability check", CHANGES_RESULT, BEFORE_RUN,
         "a question whose words name nothing of the database is put to the model first; its "
         "'no' ends the run with a plain statement and no SQL",
         "agents.answer.opening", measured="bench/results/answerability.json"),
    Rule("whole_part", "Whole schema part", LINT, SCHEMA_CONTEXT,
         "a cut schema keeps the whole small part of the best-ranked table, written first",
         "agents.retrieval.whole_part", switch="keep_whole_part",
         measured="bench/results/wholepart2-*", recorded_off=("baseline",)),
    Rule("value_grounding", "Value grounding", LINT, SCHEMA_CONTEXT,
         "looks the question's words up among stored values and shows the matches to the writers",
         "agents.retrieval.value_grounding", switch="value_grounding",
         measured="bench/results/grounding-examples-*", recorded_off=("macsql",), off="off"),
    Rule("unit_notes", "Units in the schema", LINT, SCHEMA_CONTEXT,
         "columns whose names or values say a unit (duration_ms, charge_cents, Unix times) "
         "are noted in the evidence, with conversion factors",
         "agents.retrieval.unit_notes", switch="unit_notes",
         acts="agents.retrieval.unit_notes:with_unit_notes"),
    Rule("demonstration_names", "Demonstration names", LINT, SCHEMA_CONTEXT,
         "notes names a model copied from a prompt's worked example instead of the database",
         "agents.rules.demonstration"),
    Rule("sqlite_functions", "SQLite function hint", LINT, EXECUTION_HINT,
         "a 'no such function' error is told how SQLite writes it (YEAR -> strftime)",
         "agents.rules.sqlite_functions", acts="agents.rules.sqlite_functions:execution_hint"),
    Rule("error_hints", "Name-error hint", LINT, EXECUTION_HINT,
         "a 'no such column/table' error is told which tables and columns do exist, and the "
         "version that runs where one clear change makes it run",
         "agents.rules.error_hints", acts="agents.rules.name_rewrite:name_error_hint",
         measured="bench/results/name-errors-*"),
    Rule("name_context", "Tables around a name error", LINT, EXECUTION_HINT,
         "the repair prompt lists the query's tables, their columns and the alias to write",
         "agents.rules.name_context", variants=("refiner_prompt=tables", "fix_prompt=tables"),
         measured="bench/results/name-errors-*"),
    Rule("repeat_retry", "Repeat retry", CHANGES_RESULT, REPAIR_ENDING,
         "a repair that repeats failing SQL is asked once more at a temperature above 0",
         "agents.rules.repeat_retry", switch="repeat_temperature",
         measured="bench/results/retry-*"),
    Rule("name_rewrite", "Runnable ending", CHANGES_RESULT, REPAIR_ENDING,
         "SQL left failing on a column name becomes the one clear change that makes it run",
         "agents.rules.runnable_ending", switch="name_rewrite",
         measured="bench/results/rewrite-*, bench/results/endings-*",
         recorded_off=("macsql", "deasql", "r3", "csma")),
    # at the repair ending, not the execution hint: it tells the model nothing, it decides what
    # a repair pass ends on (the hint's SQL instead of the model's), as the two rules above do
    Rule("repair_from_hint", "Repair from the hint", CHANGES_RESULT, REPAIR_ENDING,
         "a failing query whose hint holds the version that runs is repaired with it, run "
         "again under the run's limits, with no model call; the model only if it fails",
         "agents.rules.runnable_ending", switch="repair_from_hint",
         recorded_off=("macsql", "deasql", "r3", "csma", "selection")),
    Rule("fresh_writer", "Writer afresh", CHANGES_RESULT, REPAIR_ENDING,
         "when the repairs end on SQL that fails, one writer writes it afresh from the schema "
         "with the single prompt; its SQL is taken only if it runs",
         "agents.pipelines.fresh_writer", switch="fresh_writer",
         measured="bench/results/fresh-writer/", recorded_off=("macsql", "deasql", "r3")),
    Rule("aggregate_gate", "Arbitrary-row gate", CHANGES_RESULT, AGREEMENT_CHECK,
         "a revision that leaves an aggregate beside an ungrouped column is refused",
         "agents.rules.arbitrary_rows", switch="aggregate_gate",
         measured="bench/results/aggregate-gate-*", recorded_off=("r3",)),
    Rule("ignore_unread_joins", "Unread joins agree", CHANGES_RESULT, AGREEMENT_CHECK,
         "SQL differing from another only by a join nothing reads counts as agreeing",
         "agents.rules.unread_joins", switch="ignore_unread_joins",
         measured="bench/results/unread-joins-*", recorded_off=("csma",)),
    Rule("outer_column_check", "Outer column in a subquery", CHANGES_RESULT, AGREEMENT_CHECK,
         "a subquery selecting a column of the outer query is reported as failing the check",
         "agents.rules.outer_columns", switch="outer_column_check",
         measured="bench/results/outer-columns-*"),
    Rule("global_writer", "Global writer", CHANGES_RESULT, REPAIR_ENDING,
         "when the agents end on SQL that fails, one writer answers from the global schema",
         "agents.pipelines.csma.global_writer", switch="global_writer",
         measured="bench/results/global-writer-*", recorded_off=("csma",)),
    Rule("global_check", "Global check", CHANGES_RESULT, AGREEMENT_CHECK,
         "when no check agreed with the agents' SQL, the global writer's result decides",
         "agents.pipelines.csma.global_writer", switch="global_check",
         nested=("global_data_first",), measured="bench/results/global-check-*",
         recorded_off=("csma",)),
    Rule("data_first", "Data first", CHANGES_RESULT, AGREEMENT_CHECK,
         "the vote sets aside results holding no data while another candidate's holds some",
         "agents.pipelines.selection.voting", switch="data_first",
         measured="bench/results/data-first-*", recorded_off=("selection",)),
    Rule("shape_first", "Shape first", CHANGES_RESULT, AGREEMENT_CHECK,
         "the vote sets aside results of several rows where the question asks for one value "
         "while another candidate's has one",
         "agents.pipelines.selection.vote_rules", switch="shape_first",
         recorded_off=("selection",)),
    Rule("empty_not_decisive", "Empty is not decisive", CHANGES_RESULT, AGREEMENT_CHECK,
         "a leading result holding no data is not decisive while some candidates did not run",
         "agents.pipelines.selection.vote_rules", switch="empty_not_decisive",
         recorded_off=("selection",)),
    Rule("doubt_last", "Doubted last", CHANGES_RESULT, AGREEMENT_CHECK,
         "the vote sets aside results the answer review's lints doubt (a NULL group on top, a "
         "unit not converted, a sum over repeated rows) while another candidate's is not",
         "agents.pipelines.selection.vote_rules", switch="doubt_last"),
    Rule("unrelated_parts", "Unrelated parts", CHANGES_RESULT, REPAIR_ENDING,
         "a candidate reading parts of the schema no key connects gets one repair told so",
         "agents.rules.unrelated_parts", switch="unrelated_parts",
         measured="bench/results/parts-merged-*"),
    Rule("drop_unread_joins", "Unread joins dropped", CHANGES_RESULT, FINAL_ANSWER,
         "the final SQL loses a join nothing reads and the question does not name",
         "agents.rules.final_check", switch="drop_unread_joins",
         acts="agents.rules.final_check:leave_out_unread_joins",
         nested=("drop_unread_from_table", "read_through_join_keys",
                 "drop_unrelated_part_joins"),
         measured="bench/results/final-check-*, bench/results/final-check-wider-*",
         recorded_off=("macsql", "deasql", "r3", "csma", "selection")),
    Rule("match_stored_case", "Stored case", CHANGES_RESULT, FINAL_ANSWER,
         "a string compared in a case the column does not store becomes the stored spelling",
         "agents.rules.stored_case", switch="match_stored_case",
         acts="agents.rules.final_check:write_values_as_stored",
         measured="bench/results/case-check-*",
         recorded_off=("macsql", "deasql", "r3", "csma", "selection")),
    Rule("unanswerable_sql", "Answer from no data", LINT, ANSWER_REVIEW,
         "final SQL that reads no table, or fails on a table like none of the database's, is "
         "reported as a question the database cannot answer",
         "agents.answer.answerability"),
    Rule("result_shape", "Result shape", LINT, ANSWER_REVIEW,
         "a result that does not fit the question's shape (one value, a row per group, the top "
         "k) is marked doubtful and says why", "agents.answer.shape"),
    Rule("fanout_sum", "Sum over repeated rows", LINT, ANSWER_REVIEW,
         "a SUM or AVG of a column joined to a table holding several rows for each of its rows "
         "is marked doubtful", "agents.answer.fanout"),
    Rule("null_group", "NULL group on top", LINT, ANSWER_REVIEW,
         "a ranking whose top group has a NULL key is marked doubtful",
         "agents.answer.null_group"),
    Rule("unit_mismatch", "Unit not converted", LINT, ANSWER_REVIEW,
         "a column named in another unit than the question's (ms for minutes, cents for "
         "euros) reaching the answer unconverted is marked doubtful", "agents.answer.units"),
    Rule("empty_result", "Empty result explained", LINT, ANSWER_REVIEW,
         "an empty result says which condition emptied it and what the column holds instead",
         "agents.answer.empty_result"),
    Rule("numbers_behind", "Numbers behind the rows", LINT, ANSWER_REVIEW,
         "the value a ranking or a HAVING filter was decided on is shown beside the rows "
         "(display only)", "agents.answer.behind"),
)

_BY_NAME = {rule.name: rule for rule in RULES}
if len(_BY_NAME) != len(RULES):
    raise ValueError("two rules share a name")

def rule(name: str) -> Rule:
    """The rule named ``name``; ``KeyError`` names the known ones."""
    try:
        return _BY_NAME[name]
    except KeyError:
        raise KeyError(f"no rule {name!r}; rules: {', '.join(_BY_NAME)}") from None


def rule_of_switch(param: str) -> Rule | None:
    """The rule that ``param`` turns on, or whose nested switch it is."""
    for r in RULES:
        if param == r.switch or param in r.nested:
            return r
    return None


def recorded_defaults(pipeline: str, names) -> dict[str, Any]:
    """What a run of ``pipeline`` recorded without the switches of its rules ``names`` ran
    with, for the rules that were turned on after it had runs (``Rule.recorded_off``)."""
    found: dict[str, Any] = {}
    for r in map(rule, names):
        if pipeline in r.recorded_off:
            for param in ((r.switch,) if r.switch else ()) + r.nested:
                found[param] = r.off
    return found


def rules_table(pipelines=()) -> str:
    """The rules as a Markdown table, with the pipelines (objects with ``name`` and ``rules``)
    that use each one."""
    lines = ["| rule | kind | hook | switch | from | pipelines | what it does | measured in |",
             "|---|---|---|---|---|---|---|---|"]
    for r in RULES:
        users = ", ".join(p.name for p in pipelines if r.name in getattr(p, "rules", ()))
        if r.hook in ENGINE_HOOKS:
            users = "every pipeline (the engine)"
        switch = f"`{r.switch}`" if r.switch else \
            ", ".join(f"`{v}`" for v in r.variants) or "always on"
        if r.nested:
            switch += " (with " + ", ".join(f"`{n}`" for n in r.nested) + ")"
        lines.append(f"| {r.title} | {r.kind} | {r.hook} | {switch} | {r.origin} | "
                     f"{users or '-'} | {r.summary} | {r.measured or '-'} |")
    return "\n".join(lines)


# -- hooks: where a run hands its SQL to the declared rules -----------------------------------
# A rule that names its action (``Rule.acts``, ``"module:function"``) is called by the engine at
# its hook, never wired by hand: the step that owns the hook asks :func:`acting_at` which of the
# pipeline's rules are on and calls each :func:`action` in this registry's order, every one of a
# hook with the same signature (``final answer``: ``(sql, seen) -> change or None``, see
# :mod:`agents.rules.final_check`), as sqlglot's optimizer runs its ``RULES`` one after another.

def acting_at(hook: str, names: Iterable[str], params: dict) -> list[Rule]:
    """The rules among ``names`` (a pipeline's ``rules``) that act at ``hook`` and that
    ``params`` turns on (a rule without a switch is always on), in the registry's order."""
    chosen = set(names)
    return [r for r in RULES if r.hook == hook and r.acts and r.name in chosen
            and (r.switch is None or bool(params.get(r.switch)))]


def action(r: Rule) -> Callable:
    """The function ``r`` acts with, loaded when first asked: this module imports no rule's
    code, so any layer may read it."""
    module, _, name = r.acts.partition(":")
    return getattr(importlib.import_module(module), name)


def evidence_for_agents(names: Iterable[str], params: dict, evidence: str, schema
                        ) -> tuple[str, list[Rule]]:
    """What the agents read as the run's evidence: the run's own, passed through the
    schema-context rules among ``names`` that act, in the registry's order, and the rules that
    added to it. Every action has the signature ``(evidence, schema) -> str``; a note is a
    courtesy, so one that fails to build leaves the evidence as it was."""
    added = []
    for r in acting_at(SCHEMA_CONTEXT, names, params):
        try:
            text = action(r)(evidence, schema)
        except Exception:
            continue
        if text != evidence:
            evidence = text
            added.append(r)
    return evidence, added


def hint_at_execution(names: Iterable[str], params: dict, db, error: str | None, sql: str,
                      schema, *, timeout: float) -> str | None:
    """What a failing query's repair is told: the sentences of the execution-hint rules among
    ``names`` that act, joined in the registry's order, or None. Every action has the
    signature ``(db, error, sql, schema, *, timeout) -> str | None``; a hint is a courtesy, so
    one that fails to build is left out, never the error it explains."""
    parts = []
    for r in acting_at(EXECUTION_HINT, names, params):
        try:
            text = action(r)(db, error, sql, schema, timeout=timeout)
        except Exception:
            text = None
        if text:
            parts.append(text)
    return " ".join(parts) or None
