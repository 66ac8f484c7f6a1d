"""The answerability check, run before a pipeline's first step when the question's words name
nothing of the database.

A word-level look (:func:`agents.answer.answerability.unrelated_question`) cannot tell a
subject the database lacks ("dinosaurs") from one it names by a synonym ("students" of a
``Pupil`` table): on Spider's databases with renamed tables and columns it found no word for
about one question in eight that the data does answer. So the model is asked too, in one short
call over the table and column names, and only its "no" ends the run with a plain statement.
Where the words do meet the schema no call is made: almost every question pays nothing.

The check is a step like any other, recorded in the trace (its call, the words it found no
table for, its verdict), so a run resumes from it and the pages show it. The engine runs it
(:data:`STEP`); pipelines do not declare it.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from agents.answer.answerability import Unanswerable, unrelated_question
from agents.core.pipeline import END, Step
from agents.core.step_context import StepContext, StepError
from agents.llm.prompts import load, render
from agents.outputs.base import Output, register

NAME = "answerability"
DATA_KEY = "answerability"   # in the run's state: what the check found
FIRST_KEY = "first_step"     # ... and the pipeline step the run goes on to
_NO = re.compile(r"\b(cannot|can't|can not|not answerable|no data|unanswerable)\b", re.I)
_MAX_TABLES = 40
_MAX_COLUMNS = 12


@register
@dataclass
class Answerability(Output):
    """The answerability check's verdict: ``answerable`` False ends the run with
    ``statement``; ``words`` are the question's words no table or column names."""

    kind = "answerability"
    answerable: bool = True
    words: list = field(default_factory=list)
    statement: str = ""
    reply: str = ""

    def text_lines(self) -> list[str]:
        if self.answerable:
            return [f"The question's words ({', '.join(self.words)}) name no table or column; "
                    "the model says the database can answer it."]
        return [self.statement]


def tables_text(schema) -> str:
    """Each table with its first columns, one line each: all the check needs to see."""
    lines = []
    for table in schema.tables[:_MAX_TABLES]:
        cols = [c.name for c in table.columns[:_MAX_COLUMNS]]
        more = ", ..." if len(table.columns) > _MAX_COLUMNS else ""
        lines.append(f"- {table.name}({', '.join(cols)}{more})")
    if len(schema.tables) > _MAX_TABLES:
        lines.append(f"- ... and {len(schema.tables) - _MAX_TABLES} more tables")
    return "\n".join(lines)


def needs_check(question: str, db, evidence: str = "") -> Unanswerable | None:
    """What the word-level look found when the run should start with the check (None: the
    question's words meet the schema, go straight to the pipeline). A question that comes
    with evidence (knowledge notes, the conversation it follows) is not checked: its words
    may stand for what the evidence says."""
    if (evidence or "").strip():
        return None
    if os.environ.get("STUDIO_ANSWERABILITY", "on").strip().lower() in ("off", "0", "false"):
        return None
    try:
        return unrelated_question(question, db.schema, db)
    except Exception:  # noqa: BLE001 -- a look that fails decides nothing
        return None


def parse_verdict(text: str) -> bool:
    """True unless the reply says no: a reply that hedges ("not sure") or says neither leaves
    the question to the pipeline."""
    first = (text or "").strip().split("\n", 1)[0][:80].casefold()
    word = re.match(r"[a-z']+", first)
    if word and word.group() in ("yes", "yeah", "y"):
        return True
    if word and word.group() in ("no", "n", "nope"):
        return False
    return not _NO.search(first)


def check(ctx: StepContext) -> str | None:
    found = ctx.data.get(DATA_KEY) or {}
    words = list(found.get("words") or [])
    prompt = render(load(__file__, "answerability"), tables=tables_text(ctx.schema),
                    question=ctx.question)
    ctx.set_inputs(words=words)
    try:
        reply = ctx.ask([{"role": "user", "content": prompt}], max_tokens=4, temperature=0.0)
        reply = reply if isinstance(reply, str) else str(reply)
        answerable = parse_verdict(reply)
    except StepError as exc:  # a check that cannot be made leaves the question to the pipeline
        reply, answerable = f"the model could not be asked ({exc}); the pipeline answers", True
    verdict = Unanswerable(words=tuple(words), tables=tuple(ctx.schema.table_names()))
    out = Answerability(answerable=answerable, words=words, reply=reply.strip()[:200],
                        statement="" if answerable else verdict.statement())
    ctx.data[DATA_KEY] = {**found, **out.to_dict()}
    ctx.set_output(out)
    return ctx.data.get(FIRST_KEY) if answerable else END


STEP = Step(NAME, "Answerability check", check, title="Can this database answer it?")
