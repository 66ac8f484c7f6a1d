"""Output kinds only DEA-SQL produces: elements, the filtered schema, classification, few-shot
generation, self-correction and active learning (its execution check gives an ExecutionCheck,
a kind shared with other pipelines)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...outputs.base import Output, register, short
from ...outputs.common import SchemaSelection


@register
@dataclass
class Elements(Output):
    """The question's entities and the rewritten question the later prompts think about."""

    kind: ClassVar[str] = "elements"
    required: ClassVar[tuple[str, ...]] = ("entities",)
    entities: list = field(default_factory=list)
    rewritten_question: str | None = None

    def text_lines(self) -> list[str]:
        lines = [f"  entities: {short(self.entities)}"]
        if self.rewritten_question:
            lines.append(f"  rewritten question: {self.rewritten_question}")
        return lines


@register
@dataclass
class FilteredSchema(SchemaSelection):
    """The information filter's tables and columns, with the join conditions and the key
    information (calculations, conditions) it states for the later prompts."""

    kind: ClassVar[str] = "information_filter"
    join_conditions: str | list | None = None
    key_info: list | dict | None = None

    def text_lines(self) -> list[str]:
        lines = super().text_lines()
        if self.join_conditions:
            lines.append(f"  join conditions: {short(self.join_conditions)}")
        info = self.key_info or []
        for line in (info.items() if isinstance(info, dict) else info):
            lines.append(f"  key information: {short(line)}")
        return lines


@register
@dataclass
class Classification(Output):
    """The question type chosen (EASY, JOIN, NESTED, JOIN-NESTED), which picks the generation
    prompt and its hint; ``question_type`` None means classification was off. ``label`` is the
    model's; ``variant`` the pipeline's (None: a run from before there were variants, the
    paper's)."""

    kind: ClassVar[str] = "classification"
    question_type: str | None = None
    label: str | None = None
    reasoning: str | None = None
    variant: str | None = None

    def text_lines(self) -> list[str]:
        if self.question_type is None and not self.label:
            return ["  classification is off: one fixed hint for every question"]
        return [f"  question type: {self.question_type}"
                + (f" ({self.label})" if self.label else "")]


@register
@dataclass
class FewShotGeneration(Output):
    """The SQL written by the type's prompt, with the few-shot examples it was shown."""

    kind: ClassVar[str] = "few_shot_generation"
    required: ClassVar[tuple[str, ...]] = ("examples",)
    question_type: str | None = None
    template: str | None = None
    examples: list[dict] = field(default_factory=list)  # {"question", "sql", "qtype", "score"}

    def text_lines(self) -> list[str]:
        return [f"  prompt: {self.template or '-'}, {len(self.examples)} few-shot example(s)"]

    def shown_sql(self) -> list[str]:
        return []


@register
@dataclass
class SelfCorrection(Output):
    """The checklist's outcome: no issue, a correction taken, or a correction refused because
    it fails to run while the SQL before it runs."""

    kind: ClassVar[str] = "self_correction"
    required: ClassVar[tuple[str, ...]] = ("sql_before", "sql_after")
    sql_before: str | None = None
    sql_after: str | None = None
    changed: bool = False
    kept_before: bool = False

    def text_lines(self) -> list[str]:
        if self.kept_before:
            return ["  correction refused: it fails to run, the SQL before it is kept"]
        return ["  issue found: SQL corrected" if self.changed else "  no issue found"]


@register
@dataclass
class ActiveLearning(Output):
    """Whether the rewrite learnt from error cases (MAX/MIN subquery -> ORDER BY ... LIMIT 1)
    was applied."""

    kind: ClassVar[str] = "active_learning"
    required: ClassVar[tuple[str, ...]] = ("applied",)
    applied: bool = False
    extremum: bool | None = None
    reason: str | None = None
    sql_before: str | None = None
    sql_after: str | None = None

    def text_lines(self) -> list[str]:
        return [f"  {'applied' if self.applied else 'not applied'}: {self.reason or ''}".rstrip()]
