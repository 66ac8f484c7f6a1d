"""Output kinds only R³ produces: the invitation of reviewers, one review, and a round's end
(the rebuttal and revision). Its drafts, corrections and execution checks use shared kinds."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...outputs.base import Output, register


@register
@dataclass
class ReviewerInvitation(Output):
    """The reviewer personas the model invited for this database and SQL."""

    kind: ClassVar[str] = "reviewer_invitation"
    required: ClassVar[tuple[str, ...]] = ("reviewers",)
    reviewers: list[dict] = field(default_factory=list)  # {"name", "expertise"}
    requested: int | None = None

    def text_lines(self) -> list[str]:
        return [f"  reviewer {r.get('name', '')}: {r.get('expertise', '')}"
                for r in self.reviewers]


@register
@dataclass
class Review(Output):
    """One reviewer's verdict (approve / reject) and comment on the round's SQL."""

    kind: ClassVar[str] = "review"
    required: ClassVar[tuple[str, ...]] = ("verdict",)
    verdict: str = ""
    reviewer: str | None = None
    expertise: str | None = None
    comment: str | None = None
    round: int | None = None

    def text_lines(self) -> list[str]:
        who = self.expertise or self.reviewer or "reviewer"
        lines = [f"  round {self.round}: {self.verdict} ({who})"]
        if self.comment:
            lines.append(f"  comment: {' '.join(self.comment.split())}")
        return lines


@register
@dataclass
class Revision(Output):
    """A round's end: the comments, the writer's rebuttal and its SQL; the same SQL as before
    is consensus and ends the loop."""

    kind: ClassVar[str] = "revision"
    round: int | None = None
    comments: list[dict] = field(default_factory=list)
    rebuttal: str | None = None
    sql_before: str | None = None
    sql_after: str | None = None
    diff: str = ""
    changed: bool = False
    consensus: bool = False

    def text_lines(self) -> list[str]:
        if self.consensus:
            return [f"  round {self.round}: consensus, the writer keeps the same SQL"]
        return [f"  round {self.round}: revised SQL"] + [f"  {line}" for line in
                                                        self.diff.splitlines()]
