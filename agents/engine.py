"""The step engine every pipeline runs on.

A pipeline is a small state machine: named steps, each a function ``fn(ctx) -> next step name or
None``. A step reads and writes only ``ctx.data`` (a JSON-serializable dict) plus the fixed run
inputs (question, evidence, params, database). After each step the engine snapshots ``ctx.data``
into the step's :class:`~agents.events.StepEvent`, so a run can be resumed from any step, with the
state edited or not, and the result is the same as if the pipeline had got there by itself.

Model calls go through :meth:`StepContext.ask`, which records the prompt, raw output, tokens and
seconds, retries a malformed answer once with the parse error, and turns a second failure into a
failed step (never a crash). SQL runs through :meth:`StepContext.execute`, which only runs
read-only SQL under the run's time limit and row cap.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from .error_hints import explain_error
from .events import LLMCall, Run, RunFinished, StepEvent, StepStarted
from .outputs import Generic, Output

MAX_STEPS = 200  # a guard against a pipeline whose step graph loops forever


class StepError(Exception):
    """A step could not do its job; the run stops with this message shown to the user."""


class ParseError(ValueError):
    """A model answer did not have the required form; the message is fed back to the model."""


class UnparseableAnswer(StepError):
    """The model's answer had the wrong form twice (after the retry); a step whose output is
    optional, such as the MAC-SQL Selector, catches this and carries on without it."""


@dataclass
class ParamSpec:
    """One user-settable pipeline parameter (shown in the CLI, the app and the harness)."""

    name: str
    default: Any
    help: str = ""
    kind: str = ""  # int | float | bool | str | choice; inferred from default when empty
    choices: list | None = None
    min: float | None = None
    max: float | None = None

    def coerce(self, value: Any) -> Any:
        kind = self.kind or type(self.default).__name__
        if kind == "bool":
            if isinstance(value, str):
                return value.strip().lower() in ("1", "true", "yes", "on")
            return bool(value)
        if kind == "int":
            value = int(value)
        elif kind == "float":
            value = float(value)
        elif kind in ("str", "choice"):
            value = str(value)
        if self.choices is not None and value not in self.choices:
            raise ValueError(f"{self.name} must be one of {self.choices}, not {value!r}")
        if self.min is not None and value < self.min:
            raise ValueError(f"{self.name} must be at least {self.min}")
        if self.max is not None and value > self.max:
            raise ValueError(f"{self.name} must be at most {self.max}")
        return value


@dataclass
class Step:
    name: str
    agent: str
    fn: Callable[["StepContext"], str | None]
    title: str = ""


@dataclass
class ExecLimits:
    timeout: float = 10.0
    max_rows: int = 1000
    hints: bool = True  # add agents.error_hints' hint to a failing query's name error


class Pipeline:
    """Base class: subclasses set ``name``, ``title``, ``params`` and ``steps``."""

    name: str = ""
    title: str = ""
    description: str = ""
    paper: str = ""
    params: list[ParamSpec] = []
    steps: list[Step] = []

    def first_step(self, ctx: "StepContext") -> str:
        return self.steps[0].name

    def initial_data(self, ctx: "StepContext") -> dict:
        """The working state before the first step."""
        return {}

    def step(self, name: str) -> Step:
        for s in self.steps:
            if s.name == name:
                return s
        raise KeyError(f"pipeline {self.name!r} has no step {name!r}")

    def resolve_params(self, overrides: dict | None) -> dict:
        values = {p.name: p.default for p in self.params}
        for key, value in (overrides or {}).items():
            spec = next((p for p in self.params if p.name == key), None)
            if spec is None:
                raise ValueError(f"pipeline {self.name!r} has no parameter {key!r}")
            values[key] = spec.coerce(value)
        return values

    def final_sql(self, data: dict) -> str | None:
        return data.get("sql")


class StepContext:
    """What a step function sees: run inputs, working state, the model and the database."""

    def __init__(self, *, pipeline: Pipeline, run: Run, db, llm, limits: ExecLimits,
                 data: dict, cancel: threading.Event | None = None, services: dict | None = None):
        self.pipeline = pipeline
        self.run = run
        self.db = db
        self.llm = llm
        self.limits = limits
        self.data = data
        self.cancel = cancel
        self.services = services or {}
        self.event: StepEvent | None = None

    # -- fixed inputs -------------------------------------------------------------------------
    @property
    def question(self) -> str:
        return self.run.question

    @property
    def evidence(self) -> str:
        return self.run.evidence

    @property
    def params(self) -> dict:
        return self.run.params

    @property
    def schema(self):
        return self.db.schema

    # -- recording ----------------------------------------------------------------------------
    def set_inputs(self, **inputs: Any) -> None:
        self.event.inputs.update(_jsonable(inputs))

    def set_output(self, output: Output | None = None, sql: str | None = None, *,
                   parsed: Any = None) -> None:
        """Record what the step produced: a typed record of one output kind (its views, the
        CLI's and the editor's, dispatch on that kind) and the SQL it leaves, if any.
        ``parsed=`` takes a plain JSON value instead, shown by the generic views."""
        output = output if output is not None else parsed
        if output is not None:
            if not isinstance(output, Output):  # a plain dict: shown by the generic view
                output = Generic(data=output)
            self.event.kind = output.kind
            self.event.parsed = _jsonable(output.to_dict())
        if sql is not None:
            self.event.sql = sql

    def set_agent(self, agent: str) -> None:
        """Name the agent of this step more precisely once it is known (e.g. a reviewer's
        persona, chosen by an earlier step)."""
        self.event.agent = agent

    def note(self, text: str) -> None:
        self.event.notes.append(text)

    def skip(self, reason: str) -> None:
        """Mark this step as skipped (it ran no model call and changed nothing)."""
        self.event.status = "skipped"
        self.note(reason)

    # -- model --------------------------------------------------------------------------------
    def ask(self, messages: list[dict], parse: Callable[[str], Any] | None = None, *,
            json_schema: dict | None = None, temperature: float | None = None,
            max_tokens: int | None = None, stop: list[str] | None = None,
            retry_parse: bool = True) -> Any:
        """Send ``messages`` to the model and return ``parse(text)`` (or the text).

        A :class:`ParseError` (or ``ValueError``) from ``parse`` is fed back to the model once,
        with the error, and the answer is parsed again; a second failure fails the step.
        Transport errors from the client (already retried there) fail the step too.
        """
        self._check_cancel()
        msgs = list(messages)
        attempts = 2 if (parse is not None and retry_parse) else 1
        last_error = ""
        for attempt in range(attempts):
            call = LLMCall(messages=copy.deepcopy(msgs))
            self.event.calls.append(call)
            # Wall time around the whole call, so retries and back-off waits count as model
            # time rather than silently inflating the time "outside the model".
            t0 = time.perf_counter()
            try:
                reply = self.llm.chat(msgs, json_schema=json_schema, temperature=temperature,
                                      max_tokens=max_tokens, stop=stop)
            except Exception as exc:  # the client raises LLMError with a user-facing message
                call.seconds = time.perf_counter() - t0
                call.error = str(exc) or exc.__class__.__name__
                raise StepError(f"model call failed: {call.error}") from exc
            call.raw = reply.text
            call.model = reply.model
            call.prompt_tokens = reply.prompt_tokens
            call.completion_tokens = reply.completion_tokens
            call.seconds = time.perf_counter() - t0
            call.cached = reply.cached
            if parse is None:
                return reply.text
            try:
                return parse(reply.text)
            except (ParseError, ValueError) as exc:
                last_error = str(exc) or exc.__class__.__name__
                call.error = f"unparseable answer: {last_error}"
                msgs = msgs + [
                    {"role": "assistant", "content": reply.text},
                    {"role": "user", "content": (
                        f"Your answer could not be used: {last_error}. "
                        "Answer again, exactly in the required format.")},
                ]
        raise UnparseableAnswer(
            f"the model's answer could not be parsed after a retry: {last_error}")

    # -- database -----------------------------------------------------------------------------
    def execute(self, sql: str, *, record: bool = True):
        """Run ``sql`` read-only under the run's limits; never raises for a bad query."""
        self._check_cancel()
        result = self.db.execute(sql, timeout=self.limits.timeout, max_rows=self.limits.max_rows)
        if not result.ok and self.limits.hints:
            result.hint = explain_error(result.error, sql, self.schema)
        if record:
            self.event.execution = result.preview()
        return result

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise RunStopped()


class RunStopped(Exception):
    """The user asked the run to stop."""


Item = StepStarted | StepEvent | RunFinished


def start_run(pipeline: Pipeline, question: str, db, llm, *, evidence: str = "",
              params: dict | None = None, limits: ExecLimits | None = None,
              cancel: threading.Event | None = None, services: dict | None = None) -> Iterator[Item]:
    """Run ``pipeline`` on ``question``; yields StepStarted/StepEvent items, then RunFinished."""
    run = Run(pipeline=pipeline.name, question=question, evidence=evidence or "",
              db_name=db.name, db_path=getattr(db, "path", None),
              params=pipeline.resolve_params(params), model=getattr(llm, "model", "") or "")
    ctx = StepContext(pipeline=pipeline, run=run, db=db, llm=llm, limits=limits or ExecLimits(),
                      data={}, cancel=cancel, services=services)
    try:
        ctx.data = pipeline.initial_data(ctx)
        first = pipeline.first_step(ctx)
    except Exception as exc:  # bad initial state is a failed run, not a crash
        run.start_data = {}
        return (yield from _finish(run, pipeline, ctx, error=f"could not start: {exc}"))
    run.start_data = copy.deepcopy(_jsonable(ctx.data))
    return (yield from _drive(pipeline, ctx, first))


def resume_run(pipeline: Pipeline, previous: Run, from_index: int, db, llm, *,
               data: dict | None = None, limits: ExecLimits | None = None,
               cancel: threading.Event | None = None, services: dict | None = None,
               params: dict | None = None) -> Iterator[Item]:
    """Re-run ``previous`` from its step ``from_index`` on, as a new run.

    Events before ``from_index`` are kept. The step at ``from_index`` starts from ``data`` when
    given (an edited state) or else from the state the original run had before that step. With
    ``from_index == len(previous.events)`` the run continues after its last step (if it had one).
    """
    if not 0 <= from_index <= len(previous.events):
        raise ValueError(f"from_index must be between 0 and {len(previous.events)}")
    kept = [copy.deepcopy(e) for e in previous.events[:from_index]]
    if from_index < len(previous.events):
        step_name = previous.events[from_index].step
    else:
        step_name = previous.events[-1].next_step if previous.events else None
    before = kept[-1].data if kept else previous.start_data
    start = copy.deepcopy(data if data is not None else before)
    if data is not None and kept:
        kept[-1].data = copy.deepcopy(data)
        kept[-1].edited = True
    run = Run(pipeline=previous.pipeline, question=previous.question, evidence=previous.evidence,
              db_name=previous.db_name, db_path=previous.db_path,
              params=pipeline.resolve_params(params if params is not None else previous.params),
              model=getattr(llm, "model", "") or previous.model,
              start_data=copy.deepcopy(previous.start_data), events=kept,
              parent_run_id=previous.run_id, resumed_from=from_index)
    if data is not None and not kept:
        run.start_data = copy.deepcopy(data)
    ctx = StepContext(pipeline=pipeline, run=run, db=db, llm=llm, limits=limits or ExecLimits(),
                      data=start, cancel=cancel, services=services)
    return (yield from _drive(pipeline, ctx, step_name))


def _drive(pipeline: Pipeline, ctx: StepContext, step_name: str | None) -> Iterator[Item]:
    run = ctx.run
    error = None
    stopped = False
    while step_name is not None:
        if len(run.events) >= MAX_STEPS:
            error = f"stopped after {MAX_STEPS} steps (the pipeline did not finish)"
            break
        try:
            step = pipeline.step(step_name)
        except KeyError as exc:
            error = str(exc)
            break
        index = len(run.events)
        yield StepStarted(index=index, step=step.name, agent=step.agent, title=step.title)
        event = StepEvent(index=index, step=step.name, agent=step.agent, title=step.title,
                          started_at=time.time())
        ctx.event = event
        t0 = time.perf_counter()
        next_step = None
        try:
            if ctx.cancel is not None and ctx.cancel.is_set():
                raise RunStopped()
            next_step = step.fn(ctx)
        except RunStopped:
            event.status = "error"
            event.error = "stopped by the user"
            stopped = True
        except StepError as exc:
            event.status = "error"
            event.error = str(exc)
        except Exception as exc:  # a bug in a step must not take the app down
            event.status = "error"
            event.error = f"{exc.__class__.__name__}: {exc}"
        event.seconds = time.perf_counter() - t0
        event.next_step = next_step if event.status != "error" else None
        event.data = copy.deepcopy(_jsonable(ctx.data))
        run.events.append(event)
        yield event
        if stopped:
            break
        if event.status == "error":
            error = f"{step.agent}: {event.error}"
            break
        step_name = next_step
    return (yield from _finish(run, pipeline, ctx, error=error, stopped=stopped))


def _finish(run: Run, pipeline: Pipeline, ctx: StepContext, *, error: str | None = None,
            stopped: bool = False) -> Iterator[Item]:
    run.final_sql = pipeline.final_sql(ctx.data) if ctx.data else None
    if run.final_sql:
        try:
            result = ctx.db.execute(run.final_sql, timeout=ctx.limits.timeout,
                                    max_rows=ctx.limits.max_rows)
            run.result = result.preview(rows=ctx.limits.max_rows)
        except Exception as exc:
            run.result = {"ok": False, "error": str(exc), "error_class": exc.__class__.__name__}
    run.status = "stopped" if stopped else ("failed" if error else "done")
    run.error = "stopped by the user" if stopped else error
    run.finished_at = time.time()
    yield RunFinished(run=run)
    return run


def run_to_end(items: Iterator[Item]) -> Run:
    """Drain a run's items and return the finished :class:`Run` (for scripts and tests)."""
    run = None
    for item in items:
        if isinstance(item, RunFinished):
            run = item.run
    assert run is not None
    return run


def _jsonable(value: Any) -> Any:
    """Return ``value`` as plain JSON data (tuples become lists, unknown objects strings)."""
    return json.loads(json.dumps(value, default=_default))


def _default(obj: Any) -> Any:
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    if isinstance(obj, (set, frozenset)):
        return sorted(obj, key=str)
    if isinstance(obj, bytes):
        return f"<{len(obj)} bytes>"
    return str(obj)
