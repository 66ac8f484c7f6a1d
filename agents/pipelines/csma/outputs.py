"""Output kinds of CSMA: the partition of the schema among agents, and an agent's extraction,
check and SQL in a round."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...outputs.base import Output, register, short
from ...outputs.common import indent
from agents.db.sqltext import format_sql


def _error(error: str | None) -> str:
    return f" ({error})" if error else ""


def _repaired_by(step) -> str:
    """How the global writer's repair was written, with ``repair_from_hint`` on."""
    if step.from_hint:
        return f": taken from the hint, no model call ({step.hint_rewrite})"
    return " by the model" if step.from_hint is False else ""


def _tables(rows: list[dict]) -> str:
    return short([r.get("table") for r in rows]) if rows else "-"


@register
@dataclass
class SchemaPartition(Output):
    """Which agent owns which tables: the private schemas the agents start from."""

    kind: ClassVar[str] = "schema_partition"
    required: ClassVar[tuple[str, ...]] = ("agents",)
    partition: str | None = None
    agents: list[dict] = field(default_factory=list)  # {"agent", "tables", "columns"}
    private_schemas: list[dict] = field(default_factory=list)  # {"agent", "table", "columns"}

    def text_lines(self) -> list[str]:
        return [f"  {a['agent']}: {short(a.get('tables'))}" for a in self.agents]


@register
@dataclass
class SchemaExtraction(Output):
    """An agent's known schema (private + global), what it extracted, the global schema after."""

    kind: ClassVar[str] = "schema_extraction"
    required: ClassVar[tuple[str, ...]] = ("extracted", "global_schema")
    round: int | None = None
    agent: str | None = None
    private_schema: list[dict] = field(default_factory=list)  # {"table", "columns"}
    known_schema: list[dict] = field(default_factory=list)
    extracted: list[dict] = field(default_factory=list)
    global_schema: list[dict] = field(default_factory=list)

    def text_lines(self) -> list[str]:
        return [f"  extracted: {_tables(self.extracted)}",
                f"  global schema: {_tables(self.global_schema)}"]


@register
@dataclass
class SQLCheck(Output):
    """An agent's verdict (positive ends the run) on the previous round's SQL, with its reason
    and the execution outcome the checker saw."""

    kind: ClassVar[str] = "sql_check"
    required: ClassVar[tuple[str, ...]] = ("verdict",)
    verdict: str = ""
    reason: str | None = None
    round: int | None = None
    agent: str | None = None
    sql_by: str | None = None
    execution: str | dict | None = None
    sql: str | None = None
    method: str | None = None         # "verdict" (the model judges) or "agreement"
    own_sql: str | None = None        # an agreement check: the checker's own SQL
    own_execution: str | None = None  # ... and what it returned
    own_runs: bool | None = None      # ... whether it ran (None in runs recorded before)
    agrees: bool | None = None        # ... whether both returned the same result
    own_written_sql: str | None = None    # ... as the model wrote it, when own_sql is its rewrite
    own_written_error: str | None = None  # ... the error that SQL failed on
    own_rewrite: str | None = None        # ... and the changes that made it run
    own_unread_joins: list | None = None  # ... tables it joined but read nothing of, left out
    own_compared_sql: str | None = None   # ... for the comparison: the own SQL without them

    def shown_sql(self) -> list[str]:
        return [self.sql or ""]

    def executed_label(self) -> str:
        # an agreement check shows the checker's own SQL too; the step executed the checked one
        return "The checked SQL executed" if self.own_sql else "Executed"

    def text_lines(self) -> list[str]:
        lines = [f"  verdict on {self.sql_by or 'the SQL'}: {self.verdict}"]
        if self.reason:
            lines.append(f"  reason: {' '.join(self.reason.split())}")
        if self.own_sql:
            if self.own_rewrite:
                lines.append(f"  its own SQL failed{_error(self.own_written_error)} and was "
                             f"rewritten: {self.own_rewrite}")
            lines += ["  its own SQL:", indent(format_sql(self.own_sql), 4)]
            if self.own_unread_joins:
                lines += [f"  compared without its unread join of "
                          f"{', '.join(self.own_unread_joins)}:",
                          indent(format_sql(self.own_compared_sql or ""), 4)]
        return lines


@register
@dataclass
class AgentSQL(Output):
    """The SQL an agent wrote from its extracted schema (knowing why the last was rejected)."""

    kind: ClassVar[str] = "agent_sql"
    required: ClassVar[tuple[str, ...]] = ("sql",)
    sql: str = ""
    round: int | None = None
    agent: str | None = None
    tables: list = field(default_factory=list)
    strategy: str | None = None
    feedback: str | None = None
    executes: bool | None = None
    sub_questions: list[dict] | None = None
    written_in_check: bool | None = None  # its own SQL from this round's agreement check
    written_sql: str | None = None    # the SQL as the model wrote it, when ``sql`` is its rewrite
    written_error: str | None = None  # the error it failed on
    rewrite: str | None = None        # the changes that made it run

    def text_lines(self) -> list[str]:
        lines = [f"  from tables: {short(self.tables)}"]
        if self.written_in_check:
            lines.append("  the SQL it wrote in its check (no new model call)")
        elif self.feedback:
            lines.append(f"  knows why the last SQL was rejected: {self.feedback}")
        if self.rewrite:
            lines.append(f"  its SQL failed{_error(self.written_error)} and was rewritten: "
                         f"{self.rewrite}")
        if self.executes is False:
            lines.append("  the SQL fails to execute")
        return lines + ["  SQL:", indent(format_sql(self.sql), 4)]

    def shown_sql(self) -> list[str]:
        return [self.sql]


@register
@dataclass
class GlobalWriterSQL(Output):
    """SQL written afresh from the global schema after the rounds ended on SQL that fails; the
    run's SQL when it runs (``taken``), else the agents' SQL stays. Checking an unchecked
    ending (``mode="check"``), it is compared with the agents' SQL, and is taken only when none
    agrees and it finds data where the agents' last SQL finds none."""

    kind: ClassVar[str] = "global_writer_sql"
    required: ClassVar[tuple[str, ...]] = ("sql",)
    sql: str = ""
    tables: list = field(default_factory=list)
    executes: bool | None = None
    taken: bool | None = None         # its SQL is the answer (checking: it alone found data)
    agents_sql: str | None = None     # the SQL the rounds ended on
    agents_error: str | None = None   # its error
    mode: str | None = None           # "rewrite" (the SQL failed) or "check" (it ran unchecked)
    agreed_sql: str | None = None     # check: the agents' SQL with the writer's result
    agrees_with_last: bool | None = None  # check: that SQL is the one the rounds ended on
    compared: int | None = None       # check: the agents' SQL run to compare
    first_sql: str | None = None      # the writer's first SQL, when a repair wrote ``sql``
    first_error: str | None = None    # the error it was repaired from
    from_hint: bool | None = None     # the repair: the hint's version, no model call (True),
    #                                   the model's (False); unset with repair_from_hint off
    hint_rewrite: str | None = None   # what the hint's version changed, when it is the repair
    written_sql: str | None = None    # the SQL as the model wrote it, when ``sql`` is its rewrite
    written_error: str | None = None
    rewrite: str | None = None

    def text_lines(self) -> list[str]:
        if self.mode == "check":
            return self._check_lines()
        lines = [f"  from the global schema: {short(self.tables)}",
                 f"  the agents' SQL failed{_error(self.agents_error)}"]
        if self.first_sql:
            lines.append(f"  its first SQL failed{_error(self.first_error)} and was repaired"
                         + _repaired_by(self))
        if self.rewrite:
            lines.append(f"  its SQL failed{_error(self.written_error)} and was rewritten: "
                         f"{self.rewrite}")
        if self.taken:
            return lines + ["  it runs: it is the answer", "  SQL:", indent(format_sql(self.sql), 4)]
        if self.sql:
            lines += ["  it fails too:", indent(format_sql(self.sql), 4)]
        else:
            lines.append("  it wrote no SQL")
        return lines + ["  the run keeps the agents' SQL:",
                        indent(format_sql(self.agents_sql or ""), 4)]

    def _check_lines(self) -> list[str]:
        lines = [f"  from the global schema: {short(self.tables)}",
                 "  the rounds ended on SQL that runs, unchecked: the writer's result is "
                 "compared with the agents' SQL"]
        if self.first_sql:
            lines.append(f"  its first SQL failed{_error(self.first_error)} and was repaired"
                         + _repaired_by(self))
        lines += ["  its SQL:", indent(format_sql(self.sql or ""), 4)]
        if self.agreed_sql and self.agrees_with_last:
            return lines + ["  the same result as the last SQL: it stays"]
        if self.agreed_sql:
            return lines + ["  the same result as an earlier SQL of the agents, the answer now:",
                            indent(format_sql(self.agreed_sql), 4)]
        if self.taken:
            return lines + ["  no SQL of the agents returns its result, and the last one "
                            "finds no data while it does: it is the answer",
                            "  the SQL the rounds ended on:",
                            indent(format_sql(self.agents_sql or ""), 4)]
        return lines + ["  no SQL of the agents returns its result: the last SQL stays:",
                        indent(format_sql(self.agents_sql or ""), 4)]

    def executed_label(self) -> str:
        # the step executed the SQL the run keeps: the writer's, or the agents' when it failed
        if self.mode == "check":
            return "The SQL the run keeps executed"
        return "Executed" if self.taken else "The agents' SQL, which the run keeps, executed"
