"""The Schema Retriever's output: what it kept for the question, what it left out, the budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ..outputs.base import Output, register


WHOLE_PART = "whole part"   # a kept table's reason: it lies in the best table's part


def kept_because(row: dict) -> str:
    """Why a kept table was kept, in words: the join path, or its matched words and stored
    value, and the neighbour whose share lifted it over the floor."""
    if row.get("reason") == "join path":
        return "on the join path"
    if row.get("reason") == WHOLE_PART:
        return "in the best table's part of the schema"
    why = []
    if row.get("words"):
        why.append("matches " + ", ".join(row["words"]))
    legacy_value = "value" not in row and row.get("score") and not row.get("words")
    if row.get("value") or legacy_value:    # rows recorded before "value": a score, no words
        why.append("stored value")
    if row.get("linked"):
        why.append(f"with its neighbour {row['linked']}")
    return "; ".join(why) or "no match"


def apart_sentence(apart: list[str]) -> str:
    """Why the tables in ``apart`` were left out although they scored over the floor."""
    return (f"{len(apart)} of them matched, but their part of the schema (the tables their "
            f"foreign keys connect) matches the question only weakly, or fewer of its words "
            f"than another part")


def first_sentence(first: list[str]) -> str:
    """What writing the best table's whole part first is, in words."""
    return (f"written first, whole: the best table's part of the schema ({len(first)} tables), "
            f"the same text for every question about it")


@register
@dataclass
class SchemaRetrieval(Output):
    """Tables kept for the prompts (best first), the budget they had to fit, and what was
    dropped. ``kept`` rows: ``{"table", "reason", "score", "columns", "of", "words", "value",
    "linked"}`` (``reason``: ranked, join path or whole part; ``columns`` kept of ``of``;
    ``words`` the question's words the table matched; ``value`` whether it holds a value the
    question names; ``linked`` the foreign-key neighbour whose share of its score lifted the
    table over the floor, "" when its own score was enough)."""

    kind: ClassVar[str] = "schema_retrieval"
    required: ClassVar[tuple[str, ...]] = ("kept",)
    kept: list[dict] = field(default_factory=list)
    dropped: int = 0                      # tables left out
    dropped_best: list[str] = field(default_factory=list)  # the best-ranked of them
    # tables over the floor left out because their part of the schema matches only weakly, or
    # covers fewer of the question's words than another part
    apart: list[str] = field(default_factory=list)
    tables: int = 0                       # tables in the database
    columns: int = 0                      # columns in the database
    budget: int = 0                       # tokens the schema text could take in each prompt
    tokens: int = 0                       # tokens the kept schema text takes
    schema_tokens: int = 0                # tokens the whole schema text would have taken
    context: int = 0                      # the model's context, in tokens
    values: list[str] = field(default_factory=list)  # stored values the question names
    # the best table's whole part of the schema, written first in the prompts (keep_whole_part)
    first: list[str] = field(default_factory=list)

    def text_lines(self) -> list[str]:
        lines = [f"  kept {len(self.kept)} of {self.tables} tables: about {self.tokens:,} of a "
                 f"{self.budget:,}-token budget (the whole schema: about "
                 f"{self.schema_tokens:,}; context {self.context:,})"]
        for row in self.kept:
            columns = ("all columns" if row.get("columns") == row.get("of")
                       else f"{row.get('columns')} of {row.get('of')} columns")
            lines.append(f"  keep {row.get('table')} ({columns}; {kept_because(row)})")
        if self.dropped:
            best = ", ".join(self.dropped_best[:10])
            lines.append(f"  dropped {self.dropped} table(s)" + (f", best ranked: {best}"
                                                                  if best else ""))
        if self.apart:
            lines.append(f"  {apart_sentence(self.apart)}: " + ", ".join(self.apart[:10]))
        if self.values:
            lines.append("  stored values named: " + "; ".join(self.values[:5]))
        if self.first:
            lines.append(f"  {first_sentence(self.first)}: " + ", ".join(self.first[:12]))
        return lines
