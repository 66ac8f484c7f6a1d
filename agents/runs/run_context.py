"""What a run is told besides its question: the user's hint, the database's knowledge notes and,
for a follow-up, the question before it with its SQL and result.

Every pipeline already reads one evidence text (``ctx.evidence``) and puts it where its paper's
prompt puts evidence (MAC-SQL's ``[Evidence]``, DEA-SQL's ``hint:``, R³'s ``EVIDENCE:``, ...).
So the whole context enters a run as its evidence: every pipeline sees it the same way, and no
prompt changes at all when there is no context, because :meth:`RunContext.evidence` is then the
hint itself, byte for byte (the benchmark's cached answers depend on that).

The structured context is kept on the run (``Run.context``), so the trace can say which notes
and which earlier question a run was given, and a resumed run keeps them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

MAX_NOTES_CHARS = 3000  # knowledge given to one run; further notes are left out and counted
KNOWLEDGE_HEADING = "Knowledge about this database:"
FOLLOW_UP_HEADING = "This question follows up on the previous question of the conversation."


def one_line(text: str) -> str:
    return " ".join(str(text or "").split())


@dataclass
class KnowledgeNote:
    """One note or definition the user keeps for a database (``revenue: UnitPrice * Quantity``)."""

    id: int | None
    title: str
    text: str
    author: str = ""  # whose note it is, in team mode (the trace says; the prompt does not)

    def line(self) -> str:
        title, text = one_line(self.title), one_line(self.text)
        return f"- {title}: {text}" if title else f"- {text}"


@dataclass
class FollowUp:
    """The previous question of a conversation as the next run sees it."""

    run_id: str | None
    question: str
    sql: str
    summary: str
    answer: str = ""  # the previous run's result summary in words, when it asked for one
    accepted: bool = False  # the SQL and result are the answer the user accepted for it

    def lines(self) -> list[str]:
        lines = [FOLLOW_UP_HEADING,
                 f"Previous question: {one_line(self.question)}",
                 f"Its SQL: {one_line(self.sql)}",
                 f"Its result: {one_line(self.summary)}"]
        if one_line(self.answer):
            lines.append(f"Its answer in words: {one_line(self.answer)}")
        return lines


@dataclass
class RunContext:
    """The hint, the knowledge notes and the follow-up of one run (any of them may be absent)."""

    hint: str = ""
    notes: list[KnowledgeNote] = field(default_factory=list)
    follow_up: FollowUp | None = None
    thread_id: str | None = None
    left_out: int = 0  # notes not given because of MAX_NOTES_CHARS

    def evidence(self) -> str:
        """The evidence text the pipelines read: the hint, then the knowledge, then the previous
        question. Without notes and follow-up it is exactly the hint."""
        parts = [self.hint.strip()] if self.hint.strip() else []
        if self.notes:
            parts.append("\n".join([KNOWLEDGE_HEADING] + [n.line() for n in self.notes]))
        if self.follow_up is not None:
            parts.append("\n".join(self.follow_up.lines()))
        if not self.notes and self.follow_up is None:
            return self.hint
        return "\n".join(parts)

    @property
    def has_context(self) -> bool:
        return bool(self.notes or self.follow_up or self.left_out)

    def to_dict(self) -> dict:
        """What ``Run.context`` stores (empty when there is nothing beyond the hint)."""
        if not self.has_context and not self.thread_id:
            return {}
        data = {k: v for k, v in asdict(self).items() if v not in (None, [], 0, "")}
        for note in data.get("notes") or []:  # a note's author only when there is one
            if not note.get("author"):
                note.pop("author", None)
        return data

    @classmethod
    def from_run(cls, run) -> "RunContext":
        """The context a stored run was given (an old run has none)."""
        data = getattr(run, "context", None) or {}
        follow = data.get("follow_up")
        return cls(hint=data.get("hint", "") if data else (run.evidence or ""),
                   notes=[KnowledgeNote(n.get("id"), n.get("title", ""), n.get("text", ""),
                                        n.get("author", ""))
                          for n in data.get("notes") or []],
                   follow_up=FollowUp(**{k: follow.get(k) or "" for k in
                                         ("run_id", "question", "sql", "summary",
                                          "answer")}, accepted=bool(follow.get("accepted")))
                   if follow else None,
                   thread_id=data.get("thread_id"), left_out=int(data.get("left_out") or 0))


def fit_notes(notes: list[KnowledgeNote], budget: int = MAX_NOTES_CHARS
              ) -> tuple[list[KnowledgeNote], int]:
    """The notes that fit in ``budget`` characters, in order, and how many were left out."""
    kept, used = [], 0
    for note in notes:
        size = len(note.line()) + 1
        if not one_line(note.text) or used + size > budget:
            continue
        kept.append(note)
        used += size
    return kept, len([n for n in notes if one_line(n.text)]) - len(kept)
