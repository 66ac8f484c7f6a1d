"""Output kinds of the candidate-selection pipeline: one generator's candidate, the vote over all
candidates, and the selection agent's choice. (A candidate's repair uses the shared
:class:`~agents.outputs.SQLRepair` kind, its value grounding the shared
:class:`~agents.outputs.ValueMatches`.)"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from ...outputs.base import Output, register, short
from ...outputs.common import indent
from agents.db.sqltext import format_sql


def _rows(count: int | None) -> str:
    return f"{count} row(s)" if count is not None else "ran"


@register
@dataclass
class CandidateSQL(Output):
    """One generator's candidate query and whether it runs.

    ``generator`` names the candidate (``writer``, ``sample2``), ``method`` says which writer
    produced it and how; the rows are in the step's execution preview.
    """

    kind: ClassVar[str] = "candidate"
    required: ClassVar[tuple[str, ...]] = ("generator",)
    generator: str = ""
    method: str = ""
    temperature: float | None = None
    examples: int | None = None
    sub_questions: list[dict] | None = None  # the decomposer's {"question", "sql"} pairs
    reasoning: str | None = None
    ok: bool = False
    rows: int | None = None
    error: str | None = None
    error_class: str | None = None
    hint: str | None = None  # the real names a name error could have meant
    draft: bool | None = None  # the first candidate that runs: shown as the draft answer

    def text_lines(self) -> list[str]:
        bits = [self.method] if self.method else []
        if self.temperature:
            bits.append(f"temperature {self.temperature:g}")
        if self.examples is not None:
            bits.append(f"{self.examples} example(s)")
        lines = [f"  generator {self.generator}" + (f": {', '.join(bits)}" if bits else "")]
        for i, pair in enumerate(self.sub_questions or [], start=1):
            lines.append(f"  Sub question {i}: {pair.get('question') or '(unnamed)'}")
            lines.append(indent(format_sql(pair.get("sql") or ""), 4))
        if self.reasoning:
            lines.append("  reasoning: " + " ".join(self.reasoning.split())[:300])
        if self.ok:
            lines.append(f"  runs: {_rows(self.rows)}"
                         + (" -- the draft answer, checked by the other candidates"
                            if self.draft else ""))
        else:
            lines.append(f"  fails ({self.error_class}): {self.error}")
            if self.hint:
                lines.append(f"  hint: {self.hint}")
        return lines

    def shown_sql(self) -> list[str]:
        return [p.get("sql") or "" for p in self.sub_questions or []]


@register
@dataclass
class CandidateVote(Output):
    """Candidates grouped by equal results, the vote, and what it decided.

    ``groups``: ``{"generators", "size", "sql", "columns", "rows", "row_count"}``, largest first
    (``rows`` holds the first few rows); ``failed``: ``{"generator", "error_class", "error"}``;
    ``outcome``: ``decisive`` | ``only_result`` | ``selection`` | ``none_ran``;
    ``contenders``: indices of the groups a selection agent compares; ``chosen``: the
    generator whose SQL the vote settled on (None when the selection agent decides);
    ``set_aside``: indices of the groups whose result holds no data, left out of the vote
    because another group's holds some (None in runs voted without that rule);
    ``draft``: the candidate shown first as the draft answer, ``draft_outcome`` ``confirmed``
    or ``replaced`` (None while the selection agent decides) and ``draft_note`` the sentence
    the page shows; ``skipped``: candidates not written because the vote was already decided.
    """

    kind: ClassVar[str] = "candidate_vote"
    required: ClassVar[tuple[str, ...]] = ("groups", "outcome")
    groups: list[dict] = field(default_factory=list)
    failed: list[dict] = field(default_factory=list)
    total: int = 0
    outcome: str = ""
    reason: str = ""
    min_share: float | None = None
    contenders: list[int] = field(default_factory=list)
    chosen: str | None = None
    set_aside: list[int] | None = None
    draft: str | None = None
    draft_outcome: str | None = None
    draft_note: str | None = None
    skipped: list[str] | None = None

    def text_lines(self) -> list[str]:
        lines = []
        if self.skipped:
            lines.append(f"  not written (the vote was decided): {', '.join(self.skipped)}")
        for n, group in enumerate(self.groups, start=1):
            aside = ", no data: set aside" if n - 1 in (self.set_aside or ()) else ""
            lines.append(f"  group {n} ({group.get('size')} of {self.total}): "
                         f"{short(group.get('generators'))} -> {_rows(group.get('row_count'))}"
                         f"{aside}")
        for f in self.failed:
            lines.append(f"  did not run: {f.get('generator')} ({f.get('error_class')})")
        if self.outcome == "only_result" and self.reason.startswith("the only result "):
            lines.append(f"  {self.reason}")   # it says what the outcome is
        else:
            lines.append(f"  {OUTCOMES.get(self.outcome, self.outcome)}: {self.reason}")
        if self.chosen:
            lines.append(f"  chosen: the SQL of {self.chosen}")
        elif self.contenders:
            lines.append("  the selection agent compares groups "
                         + ", ".join(str(i + 1) for i in self.contenders))
        if self.draft_note:
            lines.append(f"  draft answer {self.draft_note}")
        return lines


OUTCOMES = {"decisive": "decisive", "only_result": "the only result",
            "selection": "not decisive", "none_ran": "no candidate ran"}


@register
@dataclass
class Selection(Output):
    """The selection agent's choice among the leading groups, and why.

    ``options``: ``{"label", "generators", "sql", "columns", "rows", "row_count"}`` as the
    agent saw them (the first rows of each result);
    ``fallback`` is True when its answer could not be used and the vote's leading group stands;
    ``ballots`` (when it compared them in several orders): ``{"order": labels as shown, first
    first, "choice": label or None, "reasoning"}`` per comparison.
    """

    kind: ClassVar[str] = "selection"
    required: ClassVar[tuple[str, ...]] = ("options", "choice")
    options: list[dict] = field(default_factory=list)
    choice: str = ""
    chosen: str | None = None
    reasoning: str | None = None
    fallback: bool = False
    ballots: list[dict] | None = None
    draft_outcome: str | None = None  # confirmed | replaced: what became of the draft answer
    draft_note: str | None = None

    def text_lines(self) -> list[str]:
        lines = []
        for option in self.options:
            lines.append(f"  {option.get('label')}: {short(option.get('generators'))} -> "
                         f"{_rows(option.get('row_count'))}")
            lines.append(indent(format_sql(option.get("sql") or ""), 4))
        for ballot in self.ballots or []:
            lines.append(f"  shown in the order {''.join(ballot.get('order') or [])}: picked "
                         f"{ballot.get('choice') or '(answer unusable)'}")
        verb = "kept (the answer could not be used)" if self.fallback else "chose"
        lines.append(f"  {verb} {self.choice}: the SQL of {self.chosen}")
        if self.reasoning:
            lines.append("  reasoning: " + " ".join(self.reasoning.split()))
        if self.draft_note:
            lines.append(f"  draft answer {self.draft_note}")
        return lines

    def shown_sql(self) -> list[str]:
        return [o.get("sql") or "" for o in self.options]
