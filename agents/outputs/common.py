"""Output kinds that several pipelines produce: a SQL draft, a schema selection, a decomposition
into sub-questions, a repair of failing SQL, an execution check, the question's values found in
the data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from agents.db.sqltext import format_sql
from .base import Output, register


def indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "\n".join(pad + line for line in (text or "").splitlines())


@register
@dataclass
class SQLDraft(Output):
    """A writer's SQL, with the reasoning it wrote first when its prompt asks for one."""

    kind: ClassVar[str] = "sql_draft"
    required: ClassVar[tuple[str, ...]] = ()
    sql: str | None = None
    reasoning: str | None = None
    style: str | None = None  # the prompt style, e.g. R³'s "cot" (chain of thought)
    examples: int | None = None  # how many few-shot examples the prompt held

    def text_lines(self) -> list[str]:
        lines = []
        if self.style:
            lines.append(f"  writing style: {self.style}"
                         + (f", {self.examples} example(s)" if self.examples is not None else ""))
        if self.reasoning and self.reasoning.strip() != (self.sql or "").strip():
            lines.append("  reasoning: " + " ".join(self.reasoning.split())[:300])
        return lines

    def shown_sql(self) -> list[str]:
        return []  # the step's SQL is shown under it


@register
@dataclass
class SchemaSelection(Output):
    """Which tables and columns an agent kept for the later agents (MAC-SQL's Selector,
    DEA-SQL's information filter). ``used`` is False when the whole schema was kept."""

    kind: ClassVar[str] = "schema_selection"
    required: ClassVar[tuple[str, ...]] = ("tables",)
    tables: list[dict] = field(default_factory=list)  # {"table", "decision", "kept", "dropped"}
    used: bool = True

    def text_lines(self) -> list[str]:
        if not self.used and not self.tables:
            return ["  the whole schema is kept"]
        lines = []
        for row in self.tables:
            if row.get("decision") == "drop_all" or not row.get("kept"):
                lines.append(f"  drop {row.get('table')}")
            elif row.get("dropped"):
                lines.append(f"  keep {row.get('table')}: {', '.join(row['kept'])} "
                             f"(dropped {len(row['dropped'])} column(s))")
            else:
                lines.append(f"  keep {row.get('table')} (all columns)")
        return lines


@register
@dataclass
class Decomposition(Output):
    """The question solved through sub-questions, each with its SQL; the last one answers it."""

    kind: ClassVar[str] = "decomposition"
    required: ClassVar[tuple[str, ...]] = ("sub_questions",)
    sub_questions: list[dict] = field(default_factory=list)  # {"question", "sql"}

    def text_lines(self) -> list[str]:
        lines = []
        for i, pair in enumerate(self.sub_questions, start=1):
            lines.append(f"  Sub question {i}: {pair.get('question') or '(unnamed)'}")
            lines.append(indent(format_sql(pair.get("sql") or ""), 4))
        return lines

    def shown_sql(self) -> list[str]:
        return [p.get("sql") or "" for p in self.sub_questions]


@register
@dataclass
class SQLRepair(Output):
    """An agent executed SQL and, on an error, repaired it (MAC-SQL's Refiner, R³'s writer).

    ``status``: ``repaired`` (a new SQL from the error), ``ok`` (it runs: nothing to repair),
    ``gave_up`` (still failing when the repair budget was spent; the last SQL is kept) or
    ``rewritten`` (still failing then, on a column name, and ``sql_after`` is the version one
    clear change makes run: ``written_sql`` failed with ``written_error``, ``rewrite`` says
    what changed; :mod:`agents.rules.runnable_ending`).

    ``from_hint`` says who wrote a repair with ``repair_from_hint`` on: True, it is the version
    that runs the error's hint held, taken with no model call (``rewrite`` says what it
    changed); False, the model was asked. Unset (None) with the option off, as before it.
    """

    kind: ClassVar[str] = "sql_repair"
    status: str = "repaired"
    error: str | None = None
    error_class: str | None = None
    hint: str | None = None
    sql_before: str | None = None
    sql_after: str | None = None
    attempt: int | None = None
    rows: int | None = None
    reasoning: str | None = None
    written_sql: str | None = None
    written_error: str | None = None
    rewrite: str | None = None
    draft: bool | None = None  # the repaired SQL is the run's first answer (candidate selection)
    from_hint: bool | None = None  # True: the hint's version, no model call; False: the model's

    def text_lines(self) -> list[str]:
        if self.status == "ok":
            return [f"  the SQL runs and returns {self.rows} row(s)"]
        if self.status == "gave_up":
            return [f"  still failing ({self.error_class}): {self.error}"]
        if self.status == "rewritten":
            return [f"  still failing ({self.error_class}): {self.error}",
                    f"  rewritten to run: {self.rewrite}",
                    indent(format_sql(self.sql_after or ""), 4)]
        lines = [f"  error ({self.error_class}): {self.error}"]
        if self.hint:
            lines.append(f"  hint given with the error: {self.hint}")
        if self.from_hint:
            lines.append(f"  taken from the hint, no model call: {self.rewrite}")
        elif self.from_hint is False:
            lines.append("  asked the model")
        lines += [f"  repair {self.attempt}:", indent(format_sql(self.sql_after or ""), 4)]
        return lines

    def shown_sql(self) -> list[str]:
        if self.status in ("ok", "gave_up"):
            return ["*"]  # a check of SQL an earlier step showed
        return [self.sql_before or "", self.sql_after or "", self.written_sql or ""]


@register
@dataclass
class ExecutionCheck(Output):
    """Whether the SQL runs; a failure and each repair made from it (DEA-SQL's execution check,
    R³'s execution step). The rows themselves are in the step's execution preview. With
    ``rewrite`` set, the SQL that runs is the version of ``written_sql`` (which failed with
    ``written_error``) that one clear change makes run, taken when the repairs were spent
    (:mod:`agents.rules.runnable_ending`). ``refused`` says why a revision was not adopted
    (R³'s revision and aggregate gates): the SQL before it stays and is final."""

    kind: ClassVar[str] = "execution_check"
    required: ClassVar[tuple[str, ...]] = ("ok",)
    ok: bool = False
    rows: int | None = None
    error: str | None = None
    error_class: str | None = None
    attempt: int | None = None
    round: int | None = None
    repairs: list[dict] = field(default_factory=list)  # SQLRepair-shaped dicts
    written_sql: str | None = None
    written_error: str | None = None
    rewrite: str | None = None
    draft: bool | None = None  # the repaired SQL is the run's first answer (candidate selection)
    refused: str | None = None

    def text_lines(self) -> list[str]:
        lines = []
        for r in self.repairs:
            lines += SQLRepair.from_dict(r).text_lines()
        if self.rewrite:
            lines.append(f"  the SQL still failed ({self.written_error}); rewritten to run: "
                         f"{self.rewrite}")
        subject = "the revision" if self.refused else "the SQL"
        if self.ok:
            lines.append(f"  {subject} runs and returns {self.rows} row(s)"
                         if self.rows is not None else f"  {subject} runs")
        else:
            lines.append(f"  {subject} fails ({self.error_class}): {self.error}")
        if self.refused:
            lines.append(f"  the revision is not adopted: {self.refused}; the SQL before it is "
                         "final")
        return lines

    def shown_sql(self) -> list[str]:
        return [r.get("sql_after") or "" for r in self.repairs] + [self.written_sql or ""]

    def executed_label(self) -> str:
        # a refused revision's step shows the SQL before it, but executed the revision
        return "The revision, not adopted, executed" if self.refused else "Executed"


@register
@dataclass
class ResultSummary(Output):
    """The answer in words: one short paragraph written from the final result's first rows
    (:mod:`agents.runs.result_summary`). ``rows_shown`` is how many rows the model saw of
    ``row_count``; ``truncated`` says a limit cut the result."""

    kind: ClassVar[str] = "result_summary"
    required: ClassVar[tuple[str, ...]] = ("summary",)
    summary: str = ""
    rows_shown: int | None = None
    row_count: int | None = None
    truncated: bool = False

    def text_lines(self) -> list[str]:
        lines = ["  " + line for line in (self.summary or "").strip().splitlines()]
        if self.row_count is not None and self.rows_shown is not None:
            seen = (f"written from the first {self.rows_shown} of {self.row_count} row(s)"
                    if self.rows_shown < self.row_count else
                    f"written from all {self.row_count} row(s)")
            lines.append(f"  ({seen}{', the result was cut by a limit' if self.truncated else ''})")
        return lines


@register
@dataclass
class ValueMatches(Output):
    """Words of the question found as values stored in the database (value grounding)."""

    kind: ClassVar[str] = "value_matches"
    required: ClassVar[tuple[str, ...]] = ("matches",)
    matches: list[dict] = field(default_factory=list)  # ValueMatch.to_dict() each
    phrases: list[str] = field(default_factory=list)
    columns_searched: int = 0
    skipped: list[dict] = field(default_factory=list)
    dropped: int = 0
    seconds: float | None = None
    tables_kept: int | None = None  # when only the tables the Schema Retriever kept were searched
    shown_to: str = "every generator, with the question"  # who was shown the matches, and how

    def where(self) -> str:
        """The columns looked in: ``12 text column(s) of the 5 table(s) kept``."""
        kept = f" of the {self.tables_kept} table(s) kept" if self.tables_kept is not None else ""
        return f"{self.columns_searched} text column(s){kept}"

    def text_lines(self) -> list[str]:
        if not self.matches:
            return [f"  no stored value matches the question ({len(self.phrases)} phrase(s) "
                    f"looked up in {self.where()})"]
        lines = [f"  {len(self.matches)} value(s), shown to {self.shown_to}:"]
        for m in self.matches:
            said = "" if m.get("how") == "exact" else \
                f'  (the question says "{m.get("phrase")}"; {m.get("how")})'
            lines.append(f"  {m.get('table')}.{m.get('column')} = '{m.get('value')}'{said}")
        skipped = [f"  not searched: {len(self.skipped)} column(s) or step(s)"]
        return lines + (skipped if self.skipped else [])


@register
@dataclass
class FreshSQL(Output):
    """SQL written afresh from the run's schema after the repairs ended on SQL that fails
    (:mod:`agents.pipelines.fresh_writer`); the run's SQL when it runs (``taken``), else the
    run ends as the repairs left it."""

    kind: ClassVar[str] = "fresh_sql"
    required: ClassVar[tuple[str, ...]] = ("sql",)
    sql: str = ""
    tables: list = field(default_factory=list)
    executes: bool | None = None
    taken: bool | None = None
    failed_sql: str | None = None     # the SQL the repairs ended on
    failed_error: str | None = None   # its error
    first_sql: str | None = None      # the writer's first SQL, when a repair wrote ``sql``
    first_error: str | None = None
    from_hint: bool | None = None     # the repair: the hint's version, no model call (True)
    hint_rewrite: str | None = None
    written_sql: str | None = None    # the SQL as the model wrote it, when ``sql`` is its rewrite
    written_error: str | None = None
    rewrite: str | None = None

    def text_lines(self) -> list[str]:
        lines = ["  the repairs ended on SQL that fails"
                 + (f" ({self.failed_error})" if self.failed_error else "")]
        if self.first_sql:
            how = (f": taken from the hint, no model call ({self.hint_rewrite})"
                   if self.from_hint else " by the model" if self.from_hint is False else "")
            lines.append(f"  the writer's first SQL failed ({self.first_error}) and was "
                         f"repaired{how}")
        if self.rewrite:
            lines.append(f"  its SQL failed ({self.written_error}) and was rewritten: "
                         f"{self.rewrite}")
        if self.taken:
            return lines + ["  it runs: it is the answer", "  SQL:",
                            indent(format_sql(self.sql), 4)]
        if self.sql:
            lines += ["  it fails too:", indent(format_sql(self.sql), 4)]
        else:
            lines.append("  it wrote no SQL")
        return lines + ["  the run keeps the SQL the repairs ended on"]

    def shown_sql(self) -> list[str]:
        return [self.sql, self.failed_sql or "", self.first_sql or "", self.written_sql or ""]
