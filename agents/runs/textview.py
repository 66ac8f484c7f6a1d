"""A run as plain text: the CLI's view of the same events the pages draw.

Each step's output is described by its typed record (``Output.text_lines()``), so the CLI needs
no knowledge of any agent; this module adds what every step has (notes, failure, SQL, cost).
"""

from __future__ import annotations

import re

from agents.core.events import Run, StepEvent, StepPartial
from agents.llm.queue import waiting_message
from agents.core.outcome import run_outcome
from agents.outputs.common import indent
from agents.outputs.base import shows_sql
from agents.runs.draft import final_note
from agents.runs.result_summary import summary_text
from agents.db.sqltext import format_sql, result_text


def render_event(event: StepEvent) -> list[str]:
    """A compact human rendering of one finished step."""
    lines: list[str] = []
    if event.status == "skipped":
        lines.append(f"  skipped: {'; '.join(event.notes) or 'nothing to do'}")
    else:
        output = event.output
        lines += output.text_lines() if event.parsed not in (None, {}, []) else []
        if event.sql and not shows_sql(output, event.sql):
            lines.append("  SQL:")
            lines.append(indent(format_sql(event.sql), 4))
        for note in event.notes:
            lines.append(f"  note: {note}")
    if event.status == "error":
        lines.append("  STOPPED by the user" if event.stopped else f"  FAILED: {event.error}")
    cost = f"{event.seconds:.1f} s"
    if event.calls:
        cached = f" ({event.cache_label()})" if event.cached_calls else ""
        cost = (f"{len(event.calls)} model call(s){cached}, {event.prompt_tokens}+"
                f"{event.completion_tokens} tokens, {cost}")
    lines.append(f"  ({cost})")
    return lines


def render_outcome(run: Run, max_rows: int) -> list[str]:
    """The run's final SQL, its result table (or why it failed) and the totals."""
    lines = [""]
    _, note = final_note(run.events)
    if note:
        lines.append(f"Draft answer {note}.")
    review = getattr(run, "review", None) or {}
    if review.get("answerable") is False:
        lines.append(review.get("statement") or "This database cannot answer the question.")
    if run.final_sql and review.get("answerable") is not False:
        lines += ["Final SQL:", indent(format_sql(run.final_sql), 2)]
    if run.result and review.get("answerable") is not False:
        lines.append("")
        if run.result.get("ok"):
            behind = review.get("behind")
            shown = {**run.result, "columns": behind["columns"], "rows": behind["rows"]} \
                if behind else run.result
            lines.append(result_text(shown, max_rows))
            if behind:
                lines.append(f"({', '.join(behind['added'])}: shown beside the answer's "
                             "columns; the answer's SQL is unchanged)")
            if review.get("doubt"):
                lines.append(f"Doubtful: {review['doubt']}.")
            if (review.get("empty") or {}).get("text"):
                lines.append(review["empty"]["text"])
        else:
            lines.append(f"Result: the SQL failed ({run.result.get('error_class') or 'error'}): "
                         f"{run.result.get('error')}")
    answer = summary_text(run)
    if answer:
        lines += ["", "In words:", indent(answer, 2)]
    totals = run.totals()
    lines.append(f"\n{run_outcome(run)}: {totals['llm_calls']} model call(s), "
                 f"{totals['prompt_tokens']}+{totals['completion_tokens']} tokens, "
                 f"{totals['seconds']:.1f} s")
    return lines


class LiveText:
    """Prints what a running step's model writes, as it writes (the CLI's live view).

    Called with each :class:`StepPartial`; :meth:`end` closes the text before the step's own
    rendering is printed. A retried call starts a new block."""

    INDENT = "    "

    def __init__(self, out):
        self.out = out
        self._at: tuple[int, int] | None = None
        self._waiting: int | None = None

    def __call__(self, partial: StepPartial) -> None:
        if partial.waiting and partial.waiting != self._waiting:
            print(f"  ({waiting_message(partial.waiting)})", file=self.out, flush=True)
        self._waiting = partial.waiting
        if not partial.delta:
            return
        if (partial.index, partial.call) != self._at:
            self.end()
            self._at = (partial.index, partial.call)
            label = "model output" if partial.call == 1 else f"model output (try {partial.call})"
            self.out.write(f"  {label}:\n{self.INDENT}")
        self.out.write(partial.delta.replace("\n", "\n" + self.INDENT))
        self.out.flush()

    def end(self) -> None:
        if self._at is not None:
            self.out.write("\n")
            self.out.flush()
        self._at = None
        self._waiting = None


# C0 and C1 control characters other than newline and tab: a table named "\x1b[2J" must not
# clear the user's terminal.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def terminal_text(text: str) -> str:
    """``text`` with control characters shown as ``\\xNN`` instead of acting on the terminal."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group(0)):02x}", text)


class TerminalSafe:
    """A text stream that writes through :func:`terminal_text` (the CLI's stdout)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(terminal_text(text))

    def __getattr__(self, name):
        return getattr(self._stream, name)
