"""The answer in words: an optional last step that turns a run's final result into one short
plain-language paragraph.

Why a stage after the run and not a step of each pipeline: the summary reads the *executed* final
SQL, and the engine executes it only once the pipeline has ended (:func:`agents.core.engine._conclude`).
A declared step would have to execute it a second time and would add an edge after every ending
step of every pipeline's graph, although no pipeline's agents depend on it. So the pipelines,
their graphs and their prompts stay exactly as they are; when the user asks for a summary,
:func:`with_summary` wraps the run's items and, after the run has finished, runs one more
visible step (``summary``, output kind ``result_summary``) through the same
:class:`~agents.core.step_context.StepContext` as any agent: its prompt, raw output, tokens and
streamed text are recorded and shown like every step's. The step is appended to the run's
events, so the trace, the CLI and the store show it; it never changes the run's status or its
answer -- a failed summary is a failed step under a finished run. The evaluation harness never
asks for it.
"""

from __future__ import annotations

import copy
import time
from typing import Iterator

from agents.core.events import STOPPED, Run, RunFinished, StepEvent, StepStarted
from agents.outputs import ResultSummary
from agents.runs.run_context import one_line
from agents.core.step_context import ExecLimits, RunStopped, StepContext, StepError

SUMMARY_STEP = "summary"
SUMMARY_AGENT = "Result Summarizer"
SUMMARY_TITLE = "Answer the question in words from the result"
PROMPT_ROWS = 20        # rows of the result the model sees
PROMPT_CELL_CHARS = 80
MAX_SUMMARY_TOKENS = 300

SYSTEM = ("You explain the result of a database query to the person who asked the question, "
          "in plain language, without technical terms.")


def _cell(value) -> str:
    text = "NULL" if value is None else one_line(str(value))
    return text if len(text) <= PROMPT_CELL_CHARS else text[:PROMPT_CELL_CHARS - 1] + "…"


def summary_messages(question: str, sql: str, preview: dict) -> list[dict]:
    """The prompt: the question, the final SQL and the first rows, with the row count and
    whether a limit cut the result or it is empty."""
    rows = preview.get("rows") or []
    shown = rows[:PROMPT_ROWS]
    count = preview.get("row_count", len(rows))
    columns = preview.get("columns") or []
    if not count:
        size = "The result is empty: no row matched."
    elif preview.get("truncated"):
        size = (f"The result was cut by a row or size limit after {count} row(s); more rows "
                "exist that are not counted here.")
    else:
        size = f"The result has {count} row(s)."
    if shown and len(shown) < count:
        size += f" Only the first {len(shown)} are shown below."
    table = [" | ".join(_cell(c) for c in columns)] + [" | ".join(_cell(v) for v in row)
                                                       for row in shown]
    user = "\n".join([
        f"Question: {one_line(question)}",
        "", "SQL that answered it:", sql.strip(),
        "", size,
        *(["", "Rows:", *table] if shown else []),
        "", "Write one short paragraph (at most four sentences) that answers the question from "
            "these rows. Use only numbers and names that appear in the rows above; do not "
            "compute, estimate or invent others. If the result is empty, say that nothing "
            "matched. If the result was cut by a limit or only its first rows are shown, say "
            "so. Do not mention SQL or tables. Answer with the paragraph only.",
    ])
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]


def summarizable(run: Run) -> bool:
    """Whether ``run`` has a result to summarize: a final SQL that ran (a stopped run is not
    summarized: the user asked it to stop)."""
    return (run.status != "stopped" and bool(run.final_sql)
            and bool(run.result and run.result.get("ok")))


def summarize_run(run: Run, llm, *, control=None) -> Iterator[StepStarted | StepEvent]:
    """Run the summary step on a finished ``run``: yields its StepStarted and StepEvent and
    appends the event to ``run.events``. Any failure stays inside the step."""
    index = len(run.events)
    yield StepStarted(index=index, step=SUMMARY_STEP, agent=SUMMARY_AGENT, title=SUMMARY_TITLE)
    event = StepEvent(index=index, step=SUMMARY_STEP, agent=SUMMARY_AGENT, title=SUMMARY_TITLE,
                      started_at=time.time())
    data = copy.deepcopy(run.state_before(len(run.events)))
    ctx = StepContext(pipeline=None, run=run, db=None, llm=llm, limits=ExecLimits(),
                      data=data, cancel=getattr(control, "cancel", None),
                      on_partial=getattr(control, "partial", None))
    ctx.event = event
    t0 = time.perf_counter()
    try:
        _summarize(ctx, run)
    except RunStopped:
        event.status, event.error = "error", STOPPED
    except StepError as exc:
        event.status, event.error = "error", str(exc)
    except Exception as exc:  # the answer stands whatever happens here
        event.status, event.error = "error", f"{exc.__class__.__name__}: {exc}"
    event.seconds = time.perf_counter() - t0
    event.data = data
    run.events.append(event)
    yield event


def _summarize(ctx: StepContext, run: Run) -> None:
    preview = run.result or {}
    rows = preview.get("rows") or []
    count = preview.get("row_count", len(rows))
    shown = min(len(rows), PROMPT_ROWS)
    ctx.set_inputs(rows=f"{shown} of {count}" + (" (cut by a limit)"
                                                   if preview.get("truncated") else ""))
    text = ctx.ask(summary_messages(run.question, run.final_sql or "", preview),
                   max_tokens=MAX_SUMMARY_TOKENS)
    text = (text or "").strip()
    if not text:
        raise StepError("the model wrote no summary")
    ctx.set_output(ResultSummary(summary=text, rows_shown=shown, row_count=count,
                                 truncated=bool(preview.get("truncated"))))


def with_summary(items: Iterator, llm, control=None) -> Iterator:
    """``items`` of a run (from ``start_run``/``resume_run``), with the summary step run after
    the run has finished and before its :class:`RunFinished` is passed on. A run without a
    result to summarize gets a skipped step saying why (none when it was stopped)."""
    for item in items:
        if isinstance(item, RunFinished):
            run = item.run
            if summarizable(run):
                yield from summarize_run(run, llm, control=control)
            elif run.status != "stopped":
                yield from _skipped(run)
        yield item


def _skipped(run: Run) -> Iterator[StepStarted | StepEvent]:
    index = len(run.events)
    yield StepStarted(index=index, step=SUMMARY_STEP, agent=SUMMARY_AGENT, title=SUMMARY_TITLE)
    reason = ("the final SQL failed, so there is no result to put in words"
              if run.final_sql else "the run produced no SQL, so there is no result to put "
                                     "in words")
    event = StepEvent(index=index, step=SUMMARY_STEP, agent=SUMMARY_AGENT, title=SUMMARY_TITLE,
                      status="skipped", notes=[reason], started_at=time.time(),
                      data=copy.deepcopy(run.events[-1].data) if run.events else {})
    run.events.append(event)
    yield event


def is_summary(event: StepEvent) -> bool:
    return event.step == SUMMARY_STEP


def summary_text(run: Run) -> str:
    """The run's summary in words ("" when it has none or the step failed)."""
    for event in reversed(run.events):
        if is_summary(event) and event.status == "ok" and isinstance(event.parsed, dict):
            return str(event.parsed.get("summary") or "").strip()
    return ""


def pipeline_events(run: Run) -> list[StepEvent]:
    """The run's steps without the summary (the steps a run can be resumed from)."""
    return [e for e in run.events if not is_summary(e)]
