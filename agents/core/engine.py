"""The step engine every pipeline runs on.

A pipeline is a declared graph of named steps (:class:`Step`, each listing the steps that may
follow it), each a function ``fn(ctx) -> next step name or None``; the declarations are in
:mod:`agents.core.pipeline`. A step reads and writes only ``ctx.data`` (a JSON-serializable dict)
plus the fixed run inputs (question, evidence, params, database). After each step the engine
snapshots ``ctx.data`` into the step's :class:`~agents.core.events.StepEvent`, so a run can be
resumed from any step, with the state edited or not, and the result is the same as if the
pipeline had got there by itself.

What a step sees and may call is :class:`~agents.core.step_context.StepContext`.
"""

from __future__ import annotations

import copy
import threading
import time
from typing import Callable, Iterator

from agents.answer import opening
from agents.answer.review import review_answer
from agents.core.events import STOPPED, Run, RunFinished, StepEvent, StepPartial, StepStarted
from agents.core.pipeline import END, PAPER, STUDIO, ParamSpec, Pipeline, Step
from agents.core.step_context import (ExecLimits, ParseError, RunStopped, StepContext, StepError,
    UnparseableAnswer, _jsonable)

# The engine is where pipelines get what they declare and what a step sees.
__all__ = ["END", "PAPER", "STUDIO", "ExecLimits", "ParamSpec", "ParseError", "Pipeline",
           "RunControl", "Step", "StepContext", "StepError", "UnparseableAnswer", "resume_run",
           "run_to_end", "start_run", "stop_run"]

MAX_STEPS = 200  # a guard against a pipeline whose step graph loops forever


Item = StepStarted | StepEvent | RunFinished


class RunControl:
    """The handle on one run in progress: another thread stops it with :func:`stop_run`.

    The engine fills it in as the run goes (``run`` holds the steps finished so far) and sets
    ``finished`` with the finished run in ``result``. ``cancel`` is checked before every step
    and model call, and ends a model call in flight.

    ``on_partial`` hears a :class:`~agents.core.events.StepPartial` whenever the running step's
    model call writes (or waits for its turn at the model). These are not items of the run's
    iterator, because a step is one call of that iterator: they arrive *during* it, on the
    thread that drives the run. Nothing stores them; the step's StepEvent is the record.
    """

    def __init__(self, cancel: threading.Event | None = None,
                 on_partial: Callable[[StepPartial], None] | None = None):
        self.cancel = cancel or threading.Event()
        self.on_partial = on_partial
        self.finished = threading.Event()
        self.lock = threading.Lock()  # the driving thread vs. a stop
        self.run: Run | None = None
        self.result: Run | None = None
        self.detached = False  # stopped from outside: whatever the driver does next is dropped
        self._pipeline: Pipeline | None = None
        self._ctx: StepContext | None = None

    def partial(self, item: StepPartial) -> None:
        """Pass a running step's partial output on (dropped once the run was stopped)."""
        listener = self.on_partial
        if listener is not None and not self.detached:
            listener(item)

    def _attach(self, pipeline: Pipeline, ctx: StepContext) -> None:
        self._pipeline, self._ctx, self.run = pipeline, ctx, ctx.run


def stop_run(control: RunControl, grace: float = 0.5) -> Run | None:
    """Stop a run now and return it as finished.

    A step between model calls stops within ``grace`` seconds and the engine finishes the run
    itself. A model call still in flight is not waited for: the run is finished from the steps
    completed so far -- status ``stopped``, its last SQL executed -- and what the call returns
    later is dropped. None when the run had not started yet.
    """
    control.cancel.set()
    if control.finished.wait(grace):
        return control.result
    with control.lock:
        if control.result is not None:
            return control.result
        control.detached = True
        if control.run is None:
            return None
        stopped = Run.from_dict(_jsonable(control.run.to_dict()))
    ctx = control._ctx
    data = stopped.state_before(len(stopped.events))
    _conclude(stopped, control._pipeline, data, ctx.db, ctx.limits, stopped=True)
    control.result = stopped
    control.finished.set()
    return stopped


def start_run(pipeline: Pipeline, question: str, db, llm, *, evidence: str = "",
              params: dict | None = None, limits: ExecLimits | None = None,
              cancel: threading.Event | None = None, services: dict | None = None,
              control: RunControl | None = None, context: dict | None = None,
              on_partial: Callable[[StepPartial], None] | None = None,
              answer_checks: bool = True) -> Iterator[Item]:
    """Run ``pipeline`` on ``question``; yields StepStarted/StepEvent items, then RunFinished.

    ``control`` (or just a ``cancel`` event) lets another thread stop the run. The run is set
    up at once (``control.run`` exists when this returns); its steps run as the items are
    drawn. ``on_partial`` hears the running step's model output as it is written (see
    :class:`RunControl`). ``context`` is recorded on the run as what its ``evidence`` was made
    of (see :mod:`agents.runs.run_context`); the steps read only the evidence.
    ``answer_checks`` runs the answerability check first where the question's words name
    nothing of the database (:mod:`agents.answer.opening`); the review of the final answer
    (:mod:`agents.answer.review`) is made either way."""
    control = _control(control, cancel, on_partial)
    run = Run(pipeline=pipeline.name, question=question, evidence=evidence or "",
              db_name=db.name, db_path=getattr(db, "path", None),
              params=pipeline.resolve_params(params), model=getattr(llm, "model", "") or "",
              context=copy.deepcopy(context or {}))
    ctx = StepContext(pipeline=pipeline, run=run, db=db, llm=llm, limits=limits or ExecLimits(),
                      data={}, cancel=control.cancel, services=services,
                      on_partial=control.partial)
    control._attach(pipeline, ctx)
    try:
        ctx.data = pipeline.initial_data(ctx)
        first = pipeline.first_step(ctx)
    except Exception as exc:  # bad initial state is a failed run, not a crash
        run.start_data = {}
        return _finish(control, error=f"could not start: {exc}")
    unrelated = opening.needs_check(question, db, evidence) if answer_checks else None
    if unrelated is not None:  # the question names nothing of the database: ask first
        ctx.data[opening.DATA_KEY] = unrelated.to_dict()
        ctx.data[opening.FIRST_KEY] = first
        first = opening.NAME
    run.start_data = copy.deepcopy(_jsonable(ctx.data))
    return _drive(control, first)


def resume_run(pipeline: Pipeline, previous: Run, from_index: int, db, llm, *,
               data: dict | None = None, limits: ExecLimits | None = None,
               cancel: threading.Event | None = None, services: dict | None = None,
               params: dict | None = None, control: RunControl | None = None,
               on_partial: Callable[[StepPartial], None] | None = None) -> Iterator[Item]:
    """Re-run ``previous`` from its step ``from_index`` on, as a new run.

    Events before ``from_index`` are kept. The step at ``from_index`` starts from ``data`` when
    given (an edited state) or else from the state the original run had before that step. With
    ``from_index == len(previous.events)`` the run continues after its last step (if it had one).
    """
    control = _control(control, cancel, on_partial)
    if not 0 <= from_index <= len(previous.events):
        raise ValueError(f"from_index must be between 0 and {len(previous.events)}")
    kept = [copy.deepcopy(e) for e in previous.events[:from_index]]
    if from_index < len(previous.events):
        step_name = previous.events[from_index].step
    else:
        step_name = previous.events[-1].next_step if previous.events else None
    start = copy.deepcopy(data if data is not None else previous.state_before(from_index))
    if data is not None and kept:
        kept[-1].data = copy.deepcopy(data)
        kept[-1].edited = True
    run = Run(pipeline=previous.pipeline, question=previous.question, evidence=previous.evidence,
              db_name=previous.db_name, db_path=previous.db_path,
              params=pipeline.resolve_recorded(params if params is not None
                                               else previous.params),
              model=getattr(llm, "model", "") or previous.model,
              start_data=copy.deepcopy(previous.start_data), events=kept,
              parent_run_id=previous.run_id, resumed_from=from_index,
              context=copy.deepcopy(previous.context))
    if data is not None and not kept:
        run.start_data = copy.deepcopy(data)
    ctx = StepContext(pipeline=pipeline, run=run, db=db, llm=llm, limits=limits or ExecLimits(),
                      data=start, cancel=control.cancel, services=services,
                      on_partial=control.partial)
    control._attach(pipeline, ctx)
    return _drive(control, step_name)


def _control(control: RunControl | None, cancel, on_partial) -> RunControl:
    control = control or RunControl(cancel)
    if on_partial is not None:
        control.on_partial = on_partial
    return control


def _drive(control: RunControl, step_name: str | None) -> Iterator[Item]:
    pipeline, ctx = control._pipeline, control._ctx
    run = ctx.run
    error = None
    stopped = False
    while step_name is not None:
        if len(run.events) >= MAX_STEPS:
            error = f"stopped after {MAX_STEPS} steps (the pipeline did not finish)"
            break
        try:
            step = opening.STEP if step_name == opening.NAME else pipeline.step(step_name)
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
            event.error = STOPPED
            stopped = True
        except StepError as exc:
            event.status = "error"
            event.error = str(exc)
        except Exception as exc:  # a bug in a step must not take the app down
            event.status = "error"
            event.error = f"{exc.__class__.__name__}: {exc}"
        if event.status != "error" and not step.allows(next_step):
            event.status = "error"
            event.error = (f"went on to {next_step or 'the end'}, which the {pipeline.name} "
                           f"step graph does not allow after {step.name}")
        event.seconds = time.perf_counter() - t0
        if event.status != "error" and next_step is None and len(run.events) + 1 < MAX_STEPS:
            next_step = _closing(pipeline, ctx, step.name)  # decided after the step's time
        event.next_step = next_step if event.status != "error" else None
        event.data = copy.deepcopy(_jsonable(ctx.data))
        with control.lock:
            if control.detached:  # stopped from outside while this step ran
                return None
            run.events.append(event)
        yield event
        if stopped:
            break
        if event.status == "error":
            error = f"{step.agent}: {event.error}"
            break
        step_name = next_step
    return (yield from _finish(control, error=error, stopped=stopped))


def _closing(pipeline: Pipeline, ctx: StepContext, ending: str) -> str | None:
    """The pipeline's closing step, where the run would end after ``ending`` and the closing
    step has something to do; a failing check is the run's end, not its failure."""
    if not pipeline.closing or ending.partition(":")[0] == pipeline.closing:
        return None
    try:
        return pipeline.closing if pipeline.closes(ctx) else None
    except Exception:  # noqa: BLE001 -- a check that cannot decide leaves the run as it is
        return None


def _finish(control: RunControl, *, error: str | None = None,
            stopped: bool = False) -> Iterator[Item]:
    ctx = control._ctx
    run = ctx.run
    _conclude(run, control._pipeline, ctx.data, ctx.db, ctx.limits, error=error, stopped=stopped)
    with control.lock:
        if control.detached:
            return None
        control.result = run
    control.finished.set()
    yield RunFinished(run=run)
    return run


def _conclude(run: Run, pipeline: Pipeline, data: dict | None, db, limits: ExecLimits, *,
              error: str | None = None, stopped: bool = False) -> None:
    """Give ``run`` its outcome: the final SQL of its last state, executed; status and end."""
    try:
        run.final_sql = pipeline.final_sql(data) if data else None
    except Exception:  # an edited state without the pipeline's keys
        run.final_sql = None
    if run.final_sql:
        try:
            result = db.execute(run.final_sql, timeout=limits.timeout, max_rows=limits.max_rows)
            run.result = result.preview(rows=limits.max_rows)
        except Exception as exc:
            run.result = {"ok": False, "error": str(exc), "error_class": exc.__class__.__name__}
    run.review = review_answer(run.question, run.final_sql, run.result, db, limits,
                               checked=(data or {}).get(opening.DATA_KEY),
                               evidence=run.evidence)
    run.status = "stopped" if stopped else ("failed" if error else "done")
    run.error = STOPPED if stopped else error
    run.finished_at = time.time()


def run_to_end(items: Iterator[Item]) -> Run:
    """Drain a run's items and return the finished :class:`Run` (for scripts and tests)."""
    run = None
    for item in items:
        if isinstance(item, RunFinished):
            run = item.run
    assert run is not None
    return run


